// This file implements the server's ResponseWriter.

package http1

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ResponseWriter is the Server's http.ResponseWriter, reused across a
// connection's requests.
//
// Writes: what the handler writes goes through the connection's 4 KiB
// buffered writer, except that a write which does not fit beside what is
// buffered (the head, a chunk's size line) goes out with it in one
// vectored write (conn.write): a large body's first piece costs no write
// of its own for the head.
//
// Framing: a response with a Content-Length header is sent as is. One
// without is held (up to smallBody bytes) until the handler returns, so a
// short answer gets a Content-Length and goes out in one write; a longer
// or flushed one is sent chunked, which also carries trailers (keys with
// http.TrailerPrefix, or names declared in a Trailer header). A handler
// that sets "Transfer-Encoding: chunked" gets chunked even when short.
type ResponseWriter struct {
	c   *conn
	hdr http.Header

	status     int
	wroteHead  bool // WriteHeader called (or implied)
	headSent   bool // the head is in the connection's buffer
	chunked    bool
	noBody     bool  // HEAD, 1xx, 204, 304
	length     int64 // declared Content-Length, -1 if none
	written    int64
	pending    []byte // body held before the head is sent
	closeAfter bool
	hijacked   bool
	minor      int
}

// smallBody is the most body held back to compute a Content-Length.
const smallBody = 4 << 10

func (w *ResponseWriter) reset(q *requestHead) {
	clear(w.hdr)
	p := w.pending[:0]
	*w = ResponseWriter{c: w.c, hdr: w.hdr, pending: p, length: -1, minor: q.minor}
	w.c.watch.gone.Store(false)
	w.noBody = q.method == http.MethodHead
	w.closeAfter = q.closeConn
}

func (w *ResponseWriter) Header() http.Header { return w.hdr }

// RequestFields is the header section of the request w answers, in the
// order the client sent it: the fields of the request's header map, which
// the handler must not have changed if it writes the request on from
// these. Valid until the handler returns.
func (w *ResponseWriter) RequestFields() *Fields { return &w.c.q.list }

// Status is the status sent (or to be sent), 0 before WriteHeader.
func (w *ResponseWriter) Status() int { return w.status }

// Written is the number of body bytes the handler wrote.
func (w *ResponseWriter) Written() int64 { return w.written }

func (w *ResponseWriter) WriteHeader(code int) {
	if w.wroteHead || w.hijacked {
		return
	}
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		return // informational answers are not passed on
	}
	w.wroteHead = true
	w.status = code
	if code == http.StatusNoContent || code == http.StatusNotModified || code < 200 {
		w.noBody = true
	}
	if v := w.hdr["Content-Length"]; len(v) > 0 {
		if n, err := strconv.ParseInt(v[0], 10, 64); err == nil && n >= 0 {
			w.length = n
		}
	}
}

func (w *ResponseWriter) Write(p []byte) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	if !w.wroteHead {
		w.WriteHeader(http.StatusOK)
	}
	if w.noBody {
		return len(p), nil // a HEAD answer's body is dropped, as net/http does
	}
	if w.length >= 0 && w.written+int64(len(p)) > w.length {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if !w.headSent {
		if w.length < 0 && len(w.pending)+len(p) <= smallBody && !w.forcedChunked() {
			w.pending = append(w.pending, p...)
			return len(p), nil
		}
		w.sendHead(false)
	}
	if w.chunked {
		bw := w.c.bw
		bw.Write(strconv.AppendUint(bw.AvailableBuffer(), uint64(len(p)), 16))
		bw.WriteString("\r\n")
		w.c.write(p)
		_, err := bw.WriteString("\r\n")
		return len(p), err
	}
	return w.c.write(p)
}

func (w *ResponseWriter) forcedChunked() bool {
	te := w.hdr["Transfer-Encoding"]
	return len(te) > 0 && te[0] == "chunked"
}

// Flush sends what is buffered, head included.
func (w *ResponseWriter) Flush() {
	if w.hijacked {
		return
	}
	if !w.wroteHead {
		w.WriteHeader(http.StatusOK)
	}
	if !w.headSent {
		w.sendHead(false)
	}
	w.c.bw.Flush()
}

// WriteHead writes the head of an upstream's answer whose body follows
// at once: its status, its end-to-end fields as Head.CopyTo would store
// them in the header map (hop-by-hop ones, and those named in Connection,
// left out), then the map's own, and the framing, with the answer's
// Content-Length where it has one. It is WriteHeader and a first Write
// with up copied into the header map, without the map; up is not read
// after it returns.
func (w *ResponseWriter) WriteHead(up *Head) {
	if w.wroteHead || w.hijacked {
		return
	}
	w.WriteHeader(up.Status)
	if !w.wroteHead {
		return // informational: not passed on
	}
	if !up.Chunked && !noContent(up.Status) && up.ContentLength >= 0 {
		w.length = up.ContentLength
	}
	w.writeHead(up, false)
}

// sendHead writes the status line and header fields. final says the
// handler has returned, so a held body's length is known.
func (w *ResponseWriter) sendHead(final bool) { w.writeHead(nil, final) }

// writeHead is sendHead, with the fields of an upstream's head, up, ahead
// of the map's when up is not nil (WriteHead).
func (w *ResponseWriter) writeHead(up *Head, final bool) {
	w.headSent = true
	bw := w.c.bw
	bw.WriteString("HTTP/1.1 ")
	bw.WriteString(statusLine(w.status))
	bw.WriteString("\r\n")
	upDate := false
	if up != nil {
		upDate = up.writeEndToEnd(bw)
	}
	for k, vs := range w.hdr {
		if len(vs) == 0 || k == "Content-Length" || k == "Transfer-Encoding" || k == "Connection" || k == "Date" ||
			strings.HasPrefix(k, http.TrailerPrefix) {
			continue
		}
		for _, v := range vs {
			writeSafeField(bw, k, v)
		}
	}
	if v := w.hdr["Date"]; upDate {
		// The upstream's, as it would be first in the map.
	} else if len(v) > 0 {
		writeSafeField(bw, "Date", v[0])
	} else if _, set := w.hdr["Date"]; !set {
		bw.WriteString("Date: ")
		bw.WriteString(w.c.s.httpDate())
		bw.WriteString("\r\n")
	}
	switch {
	case w.status == http.StatusSwitchingProtocols:
	case w.noBody:
		if w.length >= 0 && w.status != http.StatusNoContent && w.status != http.StatusNotModified {
			bw.WriteString("Content-Length: ")
			bw.Write(strconv.AppendInt(bw.AvailableBuffer(), w.length, 10))
			bw.WriteString("\r\n")
		}
	case w.length >= 0:
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), w.length, 10))
		bw.WriteString("\r\n")
	case final && !w.forcedChunked() && !w.hasTrailers():
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(len(w.pending)), 10))
		bw.WriteString("\r\n")
	case w.minor == 0:
		w.closeAfter = true // HTTP/1.0 has no chunking: the close ends the body
	default:
		w.chunked = true
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	if w.closeAfter {
		bw.WriteString("Connection: close\r\n")
	} else if w.minor == 0 {
		bw.WriteString("Connection: keep-alive\r\n")
	}
	bw.WriteString("\r\n")
	if len(w.pending) > 0 {
		p := w.pending
		if w.chunked {
			bw.Write(strconv.AppendUint(bw.AvailableBuffer(), uint64(len(p)), 16))
			bw.WriteString("\r\n")
			bw.Write(p)
			bw.WriteString("\r\n")
		} else {
			bw.Write(p)
		}
		w.pending = w.pending[:0]
	}
}

func (w *ResponseWriter) hasTrailers() bool {
	if _, ok := w.hdr["Trailer"]; ok {
		return true
	}
	for k := range w.hdr {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			return true
		}
	}
	return false
}

// finish completes the response after the handler returned and reports
// whether the connection can serve another request.
func (w *ResponseWriter) finish() bool {
	if w.hijacked {
		return false
	}
	if !w.wroteHead {
		w.WriteHeader(http.StatusOK)
	}
	if !w.headSent {
		w.sendHead(true)
	}
	bw := w.c.bw
	if w.chunked {
		bw.WriteString("0\r\n")
		w.writeTrailers()
		bw.WriteString("\r\n")
	}
	if err := bw.Flush(); err != nil {
		return false
	}
	if w.length >= 0 && w.written < w.length && !w.noBody {
		return false // a short body: only a close tells the client
	}
	return !w.closeAfter
}

func (w *ResponseWriter) writeTrailers() {
	bw := w.c.bw
	for k, vs := range w.hdr {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			for _, v := range vs {
				writeSafeField(bw, name, v)
			}
		}
	}
	for _, declared := range w.hdr["Trailer"] {
		for _, name := range strings.Split(declared, ",") {
			name = http.CanonicalHeaderKey(strings.TrimSpace(name))
			for _, v := range w.hdr[name] {
				writeSafeField(bw, name, v)
			}
		}
	}
}

// Hijack hands the connection to the caller (WebSocket tunnels).
func (w *ResponseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.headSent {
		return nil, nil, errors.New("hijack after the response head was sent")
	}
	if w.c.raw != nil && w.c.raw.inRead {
		// Not expected: a request asking for an upgrade is served the
		// usual way (servableInRead). Inside the read the socket's read
		// side is taken, and a reader given it would wait forever.
		return nil, nil, errors.New("hijack inside the server's read")
	}
	w.hijacked = true
	c := w.c
	c.phase.Store(phaseClosing) // the janitor must leave it alone
	// The buffers are the caller's from here on, and the connection lets
	// go of them: a tunnel that idles for hours holds them only as long
	// as its caller does. The connection never reads or writes them
	// again: its loop ends when the handler returns (respond), and the
	// request body fails from now on.
	rw := bufio.NewReadWriter(c.br, c.bw)
	c.br, c.bw = nil, nil
	c.body.hijacked()
	return c.nc, rw, nil
}

// writeSafeField writes a field, replacing line breaks in a value with
// spaces so a header value can never start a new field or response.
func writeSafeField(bw *bufio.Writer, k, v string) {
	// Two IndexByte scans: ContainsAny builds a byte set on every call,
	// and this runs for every field of every response.
	if strings.IndexByte(v, '\r') >= 0 || strings.IndexByte(v, '\n') >= 0 {
		v = strings.NewReplacer("\r", " ", "\n", " ").Replace(v)
	}
	WriteField(bw, k, v)
}

// statusLine is "200 OK" and so on, without allocating for known codes.
func statusLine(code int) string {
	if code >= 100 && code < 600 {
		if s := statusLines[code]; s != "" {
			return s
		}
	}
	return strconv.Itoa(code) + " " + http.StatusText(code)
}

var statusLines = func() (t [600]string) {
	for c := 100; c < 600; c++ {
		if txt := http.StatusText(c); txt != "" {
			t[c] = strconv.Itoa(c) + " " + txt
		}
	}
	return t
}()

// httpDate is the current time in IMF-fixdate, made once a second.
func (s *Server) httpDate() string {
	now := time.Now().Unix()
	if d := s.date.Load(); d != nil && d.unix == now {
		return d.text
	}
	d := &dateText{unix: now, text: time.Unix(now, 0).UTC().Format(http.TimeFormat)}
	s.date.Store(d)
	return d.text
}

type dateText struct {
	unix int64
	text string
}
