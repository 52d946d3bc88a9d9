// This file lets a handler wait on a backend while watching its client.

package http1

import (
	"net"
	"sync"
	"sync/atomic"
	"syscall"
)

// Watching a client while its handler waits. A handler that waits on a
// backend (a slow answer, a long poll, a quiet event stream) should free
// the backend as soon as its client leaves, not when the backend next
// sends. Nothing reads a client's connection while its handler runs, so
// the server looks at it, but only where a wait grows long: the handler
// says what it waits on with WaitOn, and the janitor, once a second, looks
// at the socket of each connection whose handler has waited, with nothing
// moving, since an earlier tick. It looks without reading or waiting (a
// peek that would not block): a stream the client closed or reset means
// it left. A quick exchange costs two uncontended locks and no timer; a
// long one a peek a second.

// Interrupter is what a handler waits on: a backend connection (*Conn),
// or a stream it can cancel.
type Interrupter interface{ Interrupt() }

// watch is one connection's: what its handler waits on.
type watch struct {
	mu sync.Mutex
	on Interrupter // nil when the handler waits on nothing
	// watchable says the request body has been read whole: only then is
	// a readable socket not the client still sending it.
	watchable bool
	gone      atomic.Bool // the client left while watched (this request)
	active    atomic.Bool // on != nil, for a lock-free look
	// rc is the client's socket, for the janitor's peek; nil where the
	// connection has none. b is the peek's byte.
	rc syscall.RawConn
	b  [1]byte
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

// checkWatch is the janitor's, for a connection whose handler has waited
// since an earlier tick: should the client have closed or reset its
// stream, the wait is interrupted and ClientGone reports it. Bytes (a
// request sent early) mean the client is still there.
func (c *conn) checkWatch() {
	w := &c.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.on == nil || !w.watchable || w.gone.Load() {
		return
	}
	if c.clientLeft() {
		w.gone.Store(true)
		w.on.Interrupt()
	}
}

// clientLeft reports whether the client closed or reset its stream, from
// a peek at its socket that neither reads nor waits; false where there
// is no socket to look at. The janitor's alone (the peek's byte is its).
func (c *conn) clientLeft() bool {
	w := &c.watch
	if w.rc == nil {
		return false
	}
	left := false
	// Control holds the descriptor open while the peek runs, should the
	// connection be closed meanwhile.
	if err := w.rc.Control(func(fd uintptr) { left = recvPeekLeft(fd, w.b[:]) }); err != nil {
		return false
	}
	return left
}

// stopWatch ends the wait: the janitor's peek no longer interrupts
// anything for this request.
func (c *conn) stopWatch() {
	w := &c.watch
	if !w.active.Load() {
		return
	}
	w.mu.Lock()
	w.on = nil
	w.active.Store(false)
	w.mu.Unlock()
}

// syscallConn is nc's raw socket, or nil.
func syscallConn(nc net.Conn) syscall.RawConn {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}
