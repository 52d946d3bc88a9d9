package dataplane

import (
	"context"
	"net/http"
)

// Watching for the client going away. While the proxy waits on a backend
// (a slow response head, a quiet event stream, a long poll), a client that
// leaves should free the backend connection at once, not when the backend
// next writes. Watching costs a goroutine or a few allocations, so the
// proxy only watches where a wait can be long: a response head that has
// not come within watchAfter, and a streamed body.

// clientWatcher is implemented by the origin server's response writer
// (http1.ResponseWriter), whose connection nothing reads during a
// request: it watches by reading.
type clientWatcher interface {
	WatchClient(onGone func()) (stop func() bool)
}

// watchClient arranges for onGone to run if the client goes away, until
// stop is called; stop reports whether it stopped the watch before onGone
// ran. It returns nil when the client cannot be watched.
func watchClient(w http.ResponseWriter, r *http.Request, onGone func()) (stop func() bool) {
	if cw, ok := w.(clientWatcher); ok {
		return cw.WatchClient(onGone)
	}
	if r.Context().Done() == nil {
		return nil
	}
	return context.AfterFunc(r.Context(), onGone)
}
