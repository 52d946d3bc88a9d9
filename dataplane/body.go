// This file reads, buffers and streams request bodies.

package dataplane

import (
	"bytes"
	"io"
	"net/http"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
)

// The request body on its way in. What the proxy reads of it before it
// takes a backend connection decides two things: whether the request can
// be sent again (a body kept in memory can), and whether a client can
// hold a connection by sending its body slowly, or not at all.
//
// To an HTTP/1.1 backend, a body is read into memory until it ends or
// passes Options.RequestBuffer (buffers.go), whatever its framing: a
// client trickling a body within the bound holds memory, charged against
// the budget, and no connection. Only a body longer than the bound, or
// one over startRead that the budget had no room for, is streamed, on a
// connection in the endpoint's upload share
// (http1.PoolSettings.MaxUploadConns), which leaves the rest of the
// endpoint's connections to requests that wait on nobody but the backend.
//
// To an HTTP/2 backend (gRPC, h2c, TLS with h2) a body is streamed as it
// comes, so that a client stream is never held back: only a body the rule
// keeps for retries and mirrors, or a short one, is read first. Such a
// stream holds an HTTP/2 stream, not a connection of its own.

// startRead is the longest body of known length read whole before an
// HTTP/2 backend is sent the request, or an HTTP/1.1 one when the budget
// is taken; longer bodies are then streamed once their first bytes have
// arrived.
const startRead = 16 << 10

// takeBody reads what must arrive before a backend connection is taken
// (see above); a body that is streamed has its first bytes read, so that
// nothing is taken for a client that sends none.
//
// A body that fails to arrive is answered here: 408 when it stopped
// (RFC 9110 §15.5.9), else 400.
func (x *exchange) takeBody(w http.ResponseWriter, r *http.Request) bool {
	x.body = r.Body
	var err error
	switch n := r.ContentLength; {
	case x.cs.t.h2 == nil && !isWebSocket(r): // HTTP/1.1 to the backend
		// (A WebSocket handshake with a body, which nothing sends, keeps
		// the rules below: its connection becomes a tunnel, and a pooled
		// buffer must not outlive the request.)
		err = x.receiveWhole(r, max(x.h.p.opts.RequestBuffer, x.rule.Buffer))
	case x.rule.Buffer > 0 && n <= x.rule.Buffer: // n may be -1: unknown
		err = x.bufferBody(r, x.rule.Buffer)
	case n > 0 && n <= startRead:
		err = x.bufferBody(r, n)
	default:
		err = x.startBody(startRead)
	}
	if err != nil {
		replyClientBody(w, r, &x.h.p.stats, &http1.ClientBodyError{Err: err})
		return false
	}
	return true
}

// receiveWhole reads the body into the proxy's buffers until it ends, or
// limit bytes have arrived, or the budget has no room for more; in the
// last two cases what arrived is sent first and the rest streamed. The
// buffer starts small and doubles as bytes arrive, so a client that
// announces a large body holds memory only for what it sent. The buffer
// is the exchange's (x.buf) until the request ends (releaseBody), or,
// for a body that streams, until what it holds has been sent.
func (x *exchange) receiveWhole(r *http.Request, limit int64) error {
	want := limit // bytes to read before deciding
	if n := r.ContentLength; n > 0 && n < limit {
		want = n
	}
	bs := x.h.p.buffers
	buf := bs.get(int(min(want, minBuffer)))
	if buf == nil {
		return x.receiveUnbudgeted(r, 0)
	}
	x.buf = buf
	n := 0
	for int64(n) < want {
		if n == len(buf.b) {
			next := bs.grow(buf, n, int(min(want, 2*int64(n))))
			if next == nil {
				return x.receiveUnbudgeted(r, n)
			}
			buf, x.buf = next, next
		}
		k, err := r.Body.Read(buf.b[n:min(int64(len(buf.b)), want)])
		n += k
		if err == io.EOF {
			x.keep(buf.b[:n])
			return nil
		}
		if err != nil {
			return err
		}
	}
	if r.ContentLength == int64(n) {
		x.keep(buf.b[:n])
		return nil
	}
	// As long as the bound, or longer: a body of unknown length that
	// ends right there is kept whole, any other is streamed.
	sb := x.stream(r, n)
	if r.ContentLength < 0 {
		k, err := io.ReadFull(r.Body, sb.one[:])
		switch {
		case k == 0 && err == io.EOF:
			x.keep(sb.head)
			x.buf, sb.buf = sb.buf, nil // kept: the exchange's again
			return nil
		case k == 0:
			return err
		}
		sb.more = sb.one[:k]
	}
	return nil
}

// receiveUnbudgeted goes on with a body the budget has no room for, of
// which the first n bytes are in x.buf. As before the budget existed, a
// body of at most startRead bytes by its length is read whole, in memory
// of its own (no more than its connection's own buffers cost), so that a
// taken budget never puts a short request on the upload share; any other
// is streamed once its first bytes have arrived.
func (x *exchange) receiveUnbudgeted(r *http.Request, n int) error {
	if cl := r.ContentLength; cl > 0 && cl <= startRead {
		b := make([]byte, cl)
		if x.buf != nil {
			copy(b, x.buf.b[:n])
			x.releaseBody() // the budget's again at once
		}
		if _, err := io.ReadFull(r.Body, b[n:]); err != nil {
			return err
		}
		x.keep(b)
		return nil
	}
	if n > 0 {
		x.stream(r, n)
		return nil
	}
	x.releaseBody()
	return x.startBody(startRead)
}

// stream makes the body a startedBody whose head is the first n bytes of
// x.buf, which it owns from here on: the buffer goes back as soon as they
// have been sent, so that a long upload holds a connection but none of
// the budget.
func (x *exchange) stream(r *http.Request, n int) *startedBody {
	sb := &startedBody{head: x.buf.b[:n], rest: r.Body, buf: x.buf}
	x.buf, x.body = nil, sb
	return sb
}

// releaseBody gives back the buffer the request's body was read into,
// and that of a streamed body's head not yet sent; it runs when the
// request ends, however it ends.
func (x *exchange) releaseBody() {
	x.buf.release()
	x.buf = nil
	if sb, ok := x.body.(*startedBody); ok {
		sb.free()
	}
}

// bufferBody reads up to limit bytes of the body into memory, for a retry
// or mirror to send again. An unknown length that turns out longer is
// streamed once.
func (x *exchange) bufferBody(r *http.Request, limit int64) error {
	buf := bytes.NewBuffer(make([]byte, 0, max(r.ContentLength, 512)))
	n, err := buf.ReadFrom(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return err
	}
	if n > limit { // unknown length, and too long: stream what is left
		x.body = &startedBody{head: buf.Bytes(), rest: r.Body}
		return nil
	}
	x.keep(buf.Bytes())
	return nil
}

// startBody waits for the first bytes of a body to be streamed, at most
// size of them. A body that ends in them is kept whole.
func (x *exchange) startBody(size int) error {
	buf := make([]byte, size)
	n, err := io.ReadAtLeast(x.body, buf, 1)
	switch {
	case err == io.EOF && n == 0: // an empty chunked body
		x.keep(nil)
		return nil
	case err != nil:
		return err
	}
	x.body = &startedBody{head: buf[:n], rest: x.body}
	return nil
}

// keep makes b the whole body, sent with its length.
func (x *exchange) keep(b []byte) {
	if b == nil {
		b = []byte{}
	}
	x.replay, x.body = b, nil
	x.out.contentLength = int64(len(b))
	x.hasBody = len(b) > 0
}

// startedBody is a body whose first bytes were read ahead: head, then
// more (a byte read to tell whether the body went on), then rest.
type startedBody struct {
	head, more []byte
	rest       io.Reader
	one        [1]byte // more's memory
	// buf is the proxy's buffer head is in, given back once head has
	// been read (free); nil when head is memory of its own.
	buf *bodyBuf
}

func (b *startedBody) Read(p []byte) (int, error) {
	if len(b.head) > 0 {
		n := copy(p, b.head)
		b.head = b.head[n:]
		if len(b.head) == 0 {
			b.free()
		}
		return n, nil
	}
	if len(b.more) > 0 {
		n := copy(p, b.more)
		b.more = b.more[n:]
		return n, nil
	}
	return b.rest.Read(p)
}

// free gives back the buffer of the body's head; the head is not read
// again.
func (b *startedBody) free() {
	b.head = nil
	b.buf.release()
	b.buf = nil
}

// bodyKept reports whether the request's body can be sent again: it has
// none, or it is in memory.
func (x *exchange) bodyKept() bool { return !x.hasBody || x.replay != nil }

// replayable reports whether the request may be sent again after it may
// have reached a backend: it is idempotent and its body was kept.
func (x *exchange) replayable() bool { return x.bodyKept() && idempotent(x.r) }

// uploading reports whether the request's body is still to come from
// the client when the request is sent: its backend connection then waits
// on the client (http1.Pool's upload share).
func (x *exchange) uploading() bool { return x.hasBody && x.replay == nil }
