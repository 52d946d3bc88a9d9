// This file lets a handler wait on a backend while watching its client.

package http1

import (
	"sync"
	"sync/atomic"
	"time"
)

// Watching a client while its handler waits. A handler that waits on a
// backend (a slow answer, a long poll, a quiet event stream) should free
// the backend as soon as its client leaves, not when the backend next
// sends. Nothing reads a client's connection while its handler runs, so
// the server reads it, but only where a wait grows long: the handler says
// what it waits on with WaitOn, and the janitor starts watching a
// connection whose handler has waited, with nothing moving, for a second
// or more. A quick exchange costs two uncontended locks and no timer; a
// long one costs a goroutine.

// Interrupter is what a handler waits on: a backend connection (*Conn),
// or a stream it can cancel.
type Interrupter interface{ Interrupt() }

// watch is one connection's: what its handler waits on, and the watching
// goroutine once the janitor started one.
type watch struct {
	mu sync.Mutex
	on Interrupter // nil when the handler waits on nothing
	// watchable says the request body has been read whole: only then is
	// nothing else reading the client's connection.
	watchable bool
	running   chan struct{} // closed when the watching goroutine ends; nil if none
	gone      atomic.Bool   // the client left while watched (this request)
	active    atomic.Bool   // on != nil, for a lock-free look
}

// WaitOn says the handler now waits on u, until WaitOn(nil): should the
// client leave meanwhile, u is interrupted and ClientGone reports it. It
// must be called from the handler's goroutine, while nothing else reads
// the request body (a body still being read is not watched: its client is
// sending).
func (w *ResponseWriter) WaitOn(u Interrupter) {
	c := w.c
	if u == nil {
		c.stopWatch()
		c.setPhase(phaseBusy)
		return
	}
	c.watch.mu.Lock()
	c.watch.on, c.watch.watchable = u, c.body.done
	c.watch.mu.Unlock()
	c.watch.active.Store(true)
	c.setPhase(phaseWait)
}

// ClientGone reports whether the client left while the handler waited.
func (w *ResponseWriter) ClientGone() bool { return w.c.watch.gone.Load() }

// startWatch is the janitor's: it starts reading the client's connection
// for the handler waiting on it; an error (a close, a reset) means the
// client is gone. Data (a request sent early) means it is not, and the
// watch ends there.
func (c *conn) startWatch() {
	w := &c.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.on == nil || !w.watchable || w.running != nil {
		return
	}
	done := make(chan struct{})
	w.running = done
	on := w.on
	go func() {
		defer close(done)
		if _, err := c.br.Peek(1); err != nil && !isTimeout(err) {
			w.gone.Store(true)
			on.Interrupt()
		}
	}()
}

// stopWatch ends the wait: a watching goroutine is cut short and waited
// for, so that the connection is the handler's alone again.
func (c *conn) stopWatch() {
	w := &c.watch
	if !w.active.Load() {
		return
	}
	w.mu.Lock()
	running := w.running
	w.on, w.running = nil, nil
	w.active.Store(false)
	w.mu.Unlock()
	if running != nil {
		c.nc.SetReadDeadline(pastDeadline)
		<-running
		c.nc.SetReadDeadline(time.Time{})
	}
}
