// This file implements the access log.

package observe

import (
	"bufio"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/valyala/bytebufferpool"
	"go.opentelemetry.io/otel/trace"
)

// The access log writes one JSON object per line for each request it
// samples. The caller asks Sampled first, so a request left out costs
// nothing more. For a request logged it fills a Line, which Write
// formats on the request's goroutine into a pooled buffer and offers to
// a bounded queue; one goroutine writes the queue out. When the writer
// falls behind (a slow disk, a blocked pipe) and the queue is full,
// lines are dropped and counted, never waited for: a log must not slow
// the traffic it describes.

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

// Sampled reports whether to log the request now finishing: the log is
// open and the request falls in the sample. Only then need the caller
// fill a Line and Write it.
func (l *AccessLog) Sampled() bool {
	if l.closed.Load() {
		return false
	}
	return l.opts.Sample >= 1 || rand.Float64() < l.opts.Sample
}

// Write formats ln and queues it, or drops and counts it when the queue
// is full. ln is not kept: the caller's Line may live on its stack.
func (l *AccessLog) Write(ln *Line) {
	path, clientPath := ln.Path, ln.ClientPath
	if l.opts.OmitQuery {
		path, clientPath = withoutQuery(path), withoutQuery(clientPath)
	}
	b := bytebufferpool.Get()
	b.B = ln.appendJSON(b.B[:0], path, clientPath)
	l.offer(b)
}

// offer queues a formatted line, or drops and counts it when the queue
// is full.
func (l *AccessLog) offer(b *bytebufferpool.ByteBuffer) {
	if !l.queue.offer(b) {
		bytebufferpool.Put(b)
		l.dropped.Add(1)
	}
}

// Line is one request as the access log shows it. The strings are taken
// as they came: AppendJSON escapes them.
type Line struct {
	Start, End time.Time // the request's arrival and the end of its response
	ClientIP   string
	Host       string
	Method     string
	Path       string // the target routed, query included (OmitQuery drops it)
	// ClientPath is the target as the client spelt it, when the proxy
	// routed it as another (Path): "//admin" as "/admin". Logged when set.
	ClientPath string
	Proto      string
	Status     int
	Bytes      int64 // the body bytes sent
	// Route and Rule name the route rule that matched; both are logged
	// when Rule is set, neither when no rule matched.
	Route, Rule string
	Backend     string // the chosen backend's cluster; logged when set
	// Endpoint is the endpoint of the last attempt, logged when set with
	// Retries, the attempts made before it.
	Endpoint string
	Retries  int
	TraceID  trace.TraceID // logged when valid
}

// AppendJSON appends ln as the access log writes it: one JSON object and
// a newline. Keys are fixed; those without a value for this request (no
// route matched, no backend reached, not traced) are left out.
func (ln *Line) AppendJSON(b []byte) []byte { return ln.appendJSON(b, ln.Path, ln.ClientPath) }

// withoutQuery is target without its query.
func withoutQuery(target string) string {
	if i := strings.IndexByte(target, '?'); i >= 0 {
		return target[:i]
	}
	return target
}

// appendJSON is AppendJSON with path and clientPath in place of ln's.
func (ln *Line) appendJSON(b []byte, path, clientPath string) []byte {
	b = append(b, `{"time":"`...)
	b = ln.Start.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","client_ip":`...)
	b = appendJSONString(b, ln.ClientIP)
	b = append(b, `,"host":`...)
	b = appendJSONString(b, ln.Host)
	b = append(b, `,"method":`...)
	b = appendJSONString(b, ln.Method)
	b = append(b, `,"path":`...)
	b = appendJSONString(b, path)
	if clientPath != "" && clientPath != path {
		b = append(b, `,"client_path":`...)
		b = appendJSONString(b, clientPath)
	}
	b = append(b, `,"proto":`...)
	b = appendJSONString(b, ln.Proto)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(ln.Status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, ln.Bytes, 10)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, float64(ln.End.Sub(ln.Start).Microseconds())/1000, 'f', 3, 64)
	if ln.Rule != "" {
		b = append(b, `,"route":`...)
		b = appendJSONString(b, ln.Route)
		b = append(b, `,"rule":`...)
		b = appendJSONString(b, ln.Rule)
	}
	if ln.Backend != "" {
		b = append(b, `,"backend":`...)
		b = appendJSONString(b, ln.Backend)
	}
	if ln.Endpoint != "" {
		b = append(b, `,"endpoint":`...)
		b = appendJSONString(b, ln.Endpoint)
		b = append(b, `,"retries":`...)
		b = strconv.AppendInt(b, int64(ln.Retries), 10)
	}
	if ln.TraceID.IsValid() {
		b = append(b, `,"trace_id":"`...)
		b = appendTraceID(b, ln.TraceID)
		b = append(b, '"')
	}
	return append(b, "}\n"...)
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
