package dataplane

import (
	"context"
	"sync/atomic"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
)

// Noticing a client that left. While the proxy waits on a backend (a slow
// response head, a quiet event stream, a long poll), a client that leaves
// should free the backend connection at once, not when the backend next
// writes. An exchange says what it waits on (waitOn) until it is done
// with it (waitOff): the proxy's own HTTP/1.1 server watches the client's
// connection itself once a wait has lasted a second
// (http1.ResponseWriter.WaitOn); net/http's servers cancel the request's
// context when the client leaves, and the wait ends with it.

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
// backend is interrupted by cancelling its request.
type cancelStream context.CancelFunc

func (f cancelStream) Interrupt() { f() }
