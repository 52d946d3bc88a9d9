// This file implements the writer to the client and its deadlines.

package dataplane

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Deadlines on clients. A client too slow to send its body, or one that
// stops reading its response, must not hold a goroutine and a backend
// connection for ever. Every listener bounds the wait for a body's next
// bytes (clientTimeouts.body) and for a write to a client to complete
// (clientTimeouts.write), counted from the last progress as nginx counts
// client_body_timeout and send_timeout: a slow but steady upload or
// download is never cut. The proxy's own HTTP/1.1 server times both with
// its janitor (http1.Server); for net/http's servers, netWriter sets the
// connection's (HTTP/1.1) or stream's (HTTP/2) deadlines through the
// response writer, moved forward at most once a second, so an operation
// that stalls fails between the timeout less a second and the timeout.

// clientTimeouts are a listener's deadlines on its clients; zero is none.
type clientTimeouts struct {
	body, write time.Duration
}

// deadliner is what net/http's response writers offer for deadlines, on
// HTTP/1.1 and HTTP/2 alike (http.ResponseController calls the same).
type deadliner interface {
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// moveEvery is how seldom a deadline is moved forward: a deadline costs a
// timer update (on HTTP/2, a message to the connection's goroutine).
const moveEvery = time.Second

// netWriter is how the pipeline sees one of net/http's response writers:
// it remembers the status and counts the body bytes (what the own server
// reports itself), and keeps the write deadline on a client. It forwards
// Flush, and Unwrap lets http.ResponseController reach the connection
// (WebSocket hijacks).
type netWriter struct {
	http.ResponseWriter
	status  int
	written int64

	d       deadliner // nil when the writer offers none
	write   time.Duration
	movedAt time.Time // when the write deadline was last moved
	body    *timedBody
}

var netWriters = sync.Pool{New: func() any { return new(netWriter) }}

// newNetWriter wraps w for the request r, with the listener's timeouts;
// a body to read gets its read deadline (timedBody).
func newNetWriter(w http.ResponseWriter, r *http.Request, t clientTimeouts) *netWriter {
	nw := netWriters.Get().(*netWriter)
	nw.ResponseWriter = w
	nw.write = t.write
	nw.d, _ = w.(deadliner)
	if nw.d != nil && t.body > 0 && r.Body != nil && r.Body != http.NoBody {
		// The documented way to bound a body (http.MaxBytesReader does
		// the same): the pipeline reads r.Body.
		nw.body = &timedBody{r: r.Body, d: nw.d, timeout: t.body}
		r.Body = nw.body
	}
	return nw
}

// release is called when the handler returns. A body left unread is not
// read further (timedBody.settle); the write deadline moves forward once
// more, for the flush net/http makes after the handler returns.
func (w *netWriter) release() {
	if w.body != nil {
		w.body.settle()
	}
	if w.d != nil && w.write > 0 {
		w.d.SetWriteDeadline(time.Now().Add(w.write))
	}
	*w = netWriter{}
	netWriters.Put(w)
}

// moveWriteDeadline moves the write deadline forward before a write that
// may block on the client.
func (w *netWriter) moveWriteDeadline() {
	if w.d == nil || w.write <= 0 {
		return
	}
	if now := time.Now(); now.Sub(w.movedAt) >= moveEvery {
		w.d.SetWriteDeadline(now.Add(w.write))
		w.movedAt = now
	}
}

func (w *netWriter) WriteHeader(code int) {
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
	}
	w.moveWriteDeadline()
	w.ResponseWriter.WriteHeader(code)
}

func (w *netWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.moveWriteDeadline()
	n, err := w.ResponseWriter.Write(p)
	w.written += int64(n)
	return n, err
}

func (w *netWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if w.status == 0 {
			w.status = http.StatusOK
		}
		w.moveWriteDeadline()
		f.Flush()
	}
}

func (w *netWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack is here for callers that assert http.Hijacker instead of using
// http.ResponseController.
func (w *netWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// timedBody is a request body read from one of net/http's servers with a
// read deadline that follows the reads: a read that gets nothing for the
// timeout fails with a timeout error (answered 408).
type timedBody struct {
	r       io.ReadCloser
	d       deadliner
	timeout time.Duration
	movedAt time.Time
	ended   bool // the body ended (or failed): its deadline is gone
}

func (b *timedBody) Read(p []byte) (int, error) {
	if b.ended {
		return b.r.Read(p)
	}
	if now := time.Now(); now.Sub(b.movedAt) >= moveEvery {
		b.d.SetReadDeadline(now.Add(b.timeout))
		b.movedAt = now
	}
	n, err := b.r.Read(p)
	switch {
	case err == io.EOF:
		// No deadline is left behind: on HTTP/1.1 net/http reads the
		// connection in the background once the body has ended, and a
		// deadline then would end the request.
		b.ended = true
		b.d.SetReadDeadline(time.Time{})
	case err != nil:
		b.ended = true
		b.stop()
	}
	return n, err
}

// stop ends reading the body: what is left of it is never to be read.
// Else net/http's HTTP/1.1 server would read on, to reuse the connection,
// before it sends the answer (a 408 would wait on the client it is
// about).
func (b *timedBody) stop() { b.d.SetReadDeadline(time.Unix(1, 0)) }

func (b *timedBody) Close() error { return b.r.Close() }

// settle is called when the handler returns: a body that did not end is
// not read further, so the answer goes out at once and the connection
// closes after it.
func (b *timedBody) settle() {
	if !b.ended {
		b.stop()
	}
}
