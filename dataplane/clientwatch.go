package dataplane

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"
)

// Watching for the client going away. While the proxy waits on a backend
// (a slow response head, a quiet event stream, a long poll), a client that
// leaves should free the backend connection at once, not when the backend
// next writes. Watching costs a goroutine or a few allocations, so the
// proxy only watches where a wait can be long: a response head that has
// not come within watchAfter, and a streamed body.

// clientWatcher is implemented by the origin server's response writer,
// whose connection nothing reads during a request: it watches by reading.
type clientWatcher interface {
	watchClient(onGone func()) (stop func() bool)
}

// watchClient arranges for onGone to run if the client goes away, until
// stop is called; stop reports whether it stopped the watch before onGone
// ran. It returns nil when the client cannot be watched.
func watchClient(w http.ResponseWriter, r *http.Request, onGone func()) (stop func() bool) {
	if cw, ok := w.(clientWatcher); ok {
		return cw.watchClient(onGone)
	}
	if r.Context().Done() == nil {
		return nil
	}
	return context.AfterFunc(r.Context(), onGone)
}

// watchClient reads from the client connection in a goroutine: an error
// (the client closed or reset it) means it is gone. It only watches once
// the request body has been read whole, since the handler may still be
// reading it; a client that sends its next request early is alive, and
// the watch ends there.
func (w *srvResponse) watchClient(onGone func()) func() bool {
	c := w.c
	if w.hijacked || !c.body.done {
		return nil
	}
	var fired atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := c.br.Peek(1); err != nil && !isTimeout(err) {
			fired.Store(true)
			onGone()
		}
	}()
	return func() bool {
		c.nc.SetReadDeadline(pastDeadline)
		<-done
		c.nc.SetReadDeadline(time.Time{})
		return !fired.Load()
	}
}
