package dataplane

import (
	"bufio"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/valyala/bytebufferpool"
	"go.opentelemetry.io/otel/trace"
)

// The access log writes one JSON object per line for each request it
// samples. The request's goroutine only formats the line into a pooled
// buffer and offers it to a bounded queue; one goroutine writes the
// queue out. When the writer falls behind (a slow disk, a blocked pipe)
// and the queue is full, lines are dropped and counted, never waited
// for: a log must not slow the traffic it describes.

// AccessLogOptions tune an AccessLog.
type AccessLogOptions struct {
	// Sample is the fraction of requests logged, from 0 to 1; 0 means 1.
	Sample float64
	// OmitQuery logs paths without their query string, which may carry
	// tokens or personal data.
	OmitQuery bool
	// Queue is the most lines waiting to be written; default 4096.
	Queue int
}

// AccessLog writes request lines to an io.Writer.
type AccessLog struct {
	opts   AccessLogOptions
	out    *bufio.Writer
	queue  *drainQueue[*bytebufferpool.ByteBuffer]
	closed atomic.Bool

	written, dropped atomic.Int64
}

// NewAccessLog starts an access log writing to w. Close stops it.
func NewAccessLog(w io.Writer, opts AccessLogOptions) *AccessLog {
	if opts.Sample <= 0 || opts.Sample > 1 {
		opts.Sample = 1
	}
	if opts.Queue <= 0 {
		opts.Queue = 4096
	}
	l := &AccessLog{
		opts:  opts,
		out:   bufio.NewWriterSize(w, 64<<10),
		queue: newDrainQueue[*bytebufferpool.ByteBuffer](opts.Queue),
	}
	go l.queue.run(flushEvery, l.write, func() { l.out.Flush() })
	return l
}

// Close writes the lines queued and stops the writer; requests served
// after it are not logged. It is safe to call more than once.
func (l *AccessLog) Close() {
	l.closed.Store(true)
	l.queue.close()
}

// Written and Dropped count lines: written out, or dropped because the
// queue was full.
func (l *AccessLog) Written() int64 { return l.written.Load() }
func (l *AccessLog) Dropped() int64 { return l.dropped.Load() }

// flushEvery bounds how long a line waits to be written.
const flushEvery = 100 * time.Millisecond

// write buffers one line; the queue flushes the buffer once drained.
func (l *AccessLog) write(b *bytebufferpool.ByteBuffer) {
	l.out.Write(b.B)
	bytebufferpool.Put(b)
	l.written.Add(1)
}

// log formats the request's line, if it is sampled, and queues it.
func (l *AccessLog) log(rec *reqRecord, r *http.Request, trusted bool, status int, size int64, end time.Time) {
	if l.closed.Load() {
		return
	}
	if l.opts.Sample < 1 && rand.Float64() >= l.opts.Sample {
		return
	}
	b := bytebufferpool.Get()
	b.B = l.appendLine(b.B[:0], rec, r, trusted, status, size, end)
	if !l.queue.offer(b) {
		bytebufferpool.Put(b)
		l.dropped.Add(1)
	}
}

// appendLine appends the JSON line of one request. Keys are fixed;
// those without a value for this request (no route matched, no backend
// reached, not traced) are left out.
func (l *AccessLog) appendLine(b []byte, rec *reqRecord, r *http.Request, trusted bool, status int, size int64, end time.Time) []byte {
	b = append(b, `{"time":"`...)
	b = rec.start.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","client_ip":`...)
	b = appendJSONString(b, clientIP(r, trusted))
	b = append(b, `,"host":`...)
	b = appendJSONString(b, r.Host)
	b = append(b, `,"method":`...)
	b = appendJSONString(b, r.Method)
	b = append(b, `,"path":`...)
	path := logPath(r)
	if l.opts.OmitQuery {
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
	}
	b = appendJSONString(b, path)
	b = append(b, `,"proto":`...)
	b = appendJSONString(b, r.Proto)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, size, 10)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, float64(end.Sub(rec.start).Microseconds())/1000, 'f', 3, 64)
	if ru := rec.rule; ru != nil {
		b = append(b, `,"route":`...)
		b = appendJSONString(b, ru.Route)
		b = append(b, `,"rule":`...)
		b = appendJSONString(b, ru.Label())
	}
	if rec.slot != nil {
		b = append(b, `,"backend":`...)
		b = appendJSONString(b, rec.slot.name)
	}
	if rec.endpoint != "" {
		b = append(b, `,"endpoint":`...)
		b = appendJSONString(b, rec.endpoint)
		b = append(b, `,"retries":`...)
		b = strconv.AppendInt(b, int64(rec.retries), 10)
	}
	if rec.sc.HasTraceID() {
		b = append(b, `,"trace_id":"`...)
		b = appendTraceID(b, rec.sc.TraceID())
		b = append(b, '"')
	}
	return append(b, "}\n"...)
}

// logPath is the target a line shows: as the client sent it, except that
// an absolute-form target shows its path and query, as for every other
// request. A target that is neither ("*", CONNECT's authority) is shown
// as it came.
func logPath(r *http.Request) string {
	p := r.RequestURI
	if p == "" && r.URL != nil { // a request made in a test
		return r.URL.RequestURI()
	}
	if p == "" || p[0] == '/' {
		return p
	}
	path, query, ok := splitTarget(r)
	switch {
	case !ok:
		return p
	case query != "":
		return path + "?" + query
	}
	return path
}

func appendTraceID(b []byte, id trace.TraceID) []byte {
	const hex = "0123456789abcdef"
	for _, c := range id {
		b = append(b, hex[c>>4], hex[c&0xf])
	}
	return b
}

// appendJSONString appends s as a JSON string (RFC 8259 §7). Request
// data is hostile: quotes, backslashes and control characters are
// escaped, and bytes that are not UTF-8 become U+FFFD, so every line is
// valid JSON whatever the client sent.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
