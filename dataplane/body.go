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
// hold a connection by announcing a body and not sending it (it cannot:
// nothing is taken until the body has started).

// startRead is the longest body of known length read whole before a
// backend connection is taken; longer bodies are streamed once their first
// bytes have arrived.
const startRead = 16 << 10

// takeBody reads what must arrive before a backend connection is taken:
//   - a body the rule keeps for retries and mirrors (at most rule.buffer
//     bytes), or one of at most startRead bytes by its Content-Length, is
//     read whole: it is sent with its length and may be sent again;
//   - any other body is read until its first bytes arrived, then streamed
//     as it comes (a gRPC or chunked stream is never held back).
//
// A body that fails to arrive is answered here: 408 when it stopped
// (RFC 9110 §15.5.9), else 400.
func (x *exchange) takeBody(w http.ResponseWriter, r *http.Request) bool {
	x.body = r.Body
	var err error
	switch n := r.ContentLength; {
	case x.rule.Buffer > 0 && n <= x.rule.Buffer: // n may be -1: unknown
		err = x.bufferBody(r, x.rule.Buffer)
	case n > 0 && n <= startRead:
		err = x.bufferBody(r, n)
	default:
		err = x.startBody()
	}
	if err != nil {
		replyClientBody(w, r, &x.h.p.stats, &http1.ClientBodyError{Err: err})
		return false
	}
	return true
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

// startBody waits for the first bytes of a body to be streamed. A body
// that ends in them is kept whole.
func (x *exchange) startBody() error {
	buf := make([]byte, startRead)
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

// startedBody is a body whose first bytes were read ahead.
type startedBody struct {
	head []byte
	rest io.Reader
}

func (b *startedBody) Read(p []byte) (int, error) {
	if len(b.head) > 0 {
		n := copy(p, b.head)
		b.head = b.head[n:]
		return n, nil
	}
	return b.rest.Read(p)
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
