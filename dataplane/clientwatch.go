// This file notices a client that went away.

package dataplane

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
)

// Noticing a client that left. While the proxy waits on a backend (a
// dial, a slow response head, a quiet event stream, a long poll), a
// client that leaves should free the backend connection at once, not when
// the backend next writes. An exchange says what it waits on (waitOn)
// until it is done with it (waitOff): the proxy's own HTTP/1.1 server
// looks at the client's socket once a second once a wait has lasted a
// second (http1.ResponseWriter.WaitOn); net/http's servers cancel the request's
// context when the client leaves (closes its connection, half-closes it,
// or resets its HTTP/2 stream), and the wait ends with it.
//
// A wait cut short that way is the client's doing, not the backend's:
// whatever error the backend connection reports then, the attempt is not
// counted against the backend, the endpoint is not avoided, nothing is
// retried or logged, and nothing is answered (failure, clientLeft).

// statusClientClosed is the status recorded (access log, metrics, trace)
// for a request whose client went away before its answer: nginx's 499,
// "client closed request". It is never sent: the client is gone, and one
// that only half-closed its connection is cut off rather than told a
// status.
const statusClientClosed = 499

// errClientGone is an attempt cut short because its client went away: no
// backend is to blame.
var errClientGone = errors.New("the client went away before the backend answered")

// failure is how the exchange counts an attempt's err: errClientGone when
// the client left meanwhile (which is why the attempt failed: its dial,
// head or stream was cut short), else err. A failure to read the
// client's body stays what it is, though net/http's server also ends the
// request's context then.
func (x *exchange) failure(err error) error {
	var cb *http1.ClientBodyError
	if errors.As(err, &cb) || errors.Is(err, http1.ErrRequestLine) {
		return err
	}
	if x.clientLeft() {
		return errClientGone
	}
	return err
}

// clientLeft reports whether the client went away. The own server says
// so when its watch saw the client leave (the request's context there
// ends only when the server stops); net/http's servers end the request's
// context, which nothing else ends while the handler runs (the exchange
// cancels only contexts of its own, derived from it).
func (x *exchange) clientLeft() bool {
	if _, own := x.w.(*http1.ResponseWriter); own {
		return x.gone()
	}
	return x.r.Context().Err() != nil
}

// abandon ends a request whose client went away: it is counted as the
// client's (observe.Counters.ClientGone), recorded with statusClientClosed, and the
// handler is aborted so that nothing is sent.
func (x *exchange) abandon() {
	stats := &x.h.p.stats
	stats.ClientGone.Add(1)
	stats.Status(statusClientClosed)
	x.rec.status = statusClientClosed
	panic(http.ErrAbortHandler)
}

// waitOn arranges for u to be interrupted if the client leaves while the
// exchange waits on it, until waitOff.
func (x *exchange) waitOn(u http1.Interrupter) {
	if rw, ok := x.w.(*http1.ResponseWriter); ok {
		rw.WaitOn(u)
		x.waiting = true
		return
	}
	if x.r.Context().Done() == nil {
		return
	}
	gone := new(atomic.Bool)
	x.clientGone = gone
	x.stopWait = context.AfterFunc(x.r.Context(), func() {
		gone.Store(true)
		u.Interrupt()
	})
}

// waitOff ends what waitOn started; it is safe to call when nothing was.
// Call it before the connection waited on goes back to its pool: a watch
// that fired later would interrupt another request's exchange.
func (x *exchange) waitOff() {
	switch {
	case x.waiting:
		x.w.(*http1.ResponseWriter).WaitOn(nil)
		x.waiting = false
	case x.stopWait != nil:
		x.stopWait()
		x.stopWait = nil
	}
}

// gone reports whether the client left while the exchange waited.
func (x *exchange) gone() bool {
	if rw, ok := x.w.(*http1.ResponseWriter); ok {
		return rw.ClientGone()
	}
	return x.clientGone != nil && x.clientGone.Load()
}

// cancelStream lets a cancel function be waited on: an HTTP/2 stream to a
// backend, or a dial, is interrupted by cancelling its context.
type cancelStream context.CancelFunc

func (f cancelStream) Interrupt() { f() }
