// This file implements the live streams: the cap on them, cutting a route's when it goes, and draining them at shutdown.

package dataplane

import (
	"context"
	"sync"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// liveStreams are the connections the stream sockets hold. Each is
// counted against the cap from its arrival to its close, and held
// under its route's identity once it has one, so that a config without
// that route cuts it: cloudflared does not cut its streams when its
// own config changes, so the proxy must. Cutting cancels the
// connection's context, which ends its pipe (pipe.Stopped).
type liveStreams struct {
	max int
	// ctx is every connection's parent: drain cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	n        int
	draining bool
	idle     chan struct{} // closed when n comes to 0 while draining
	byRoute  map[proxycfg.RouteID]map[*liveStream]struct{}
}

// liveStream is one connection held under its route.
type liveStream struct {
	route  *streamRoute
	cancel context.CancelFunc
}

func newLiveStreams(max int) *liveStreams {
	ctx, cancel := context.WithCancel(context.Background())
	return &liveStreams{max: max, ctx: ctx, cancel: cancel, byRoute: map[proxycfg.RouteID]map[*liveStream]struct{}{}}
}

// admission is what admit decided.
type admission int

const (
	admitted admission = iota
	overLimit
	draining
)

// admit counts a connection in, unless the cap is reached or the
// sockets are draining. It returns the connection's context, and done,
// which counts it out.
func (l *liveStreams) admit() (context.Context, func(), admission) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.draining:
		return nil, nil, draining
	case l.n >= l.max:
		return nil, nil, overLimit
	}
	l.n++
	ctx, cancel := context.WithCancel(l.ctx)
	return ctx, func() { cancel(); l.done() }, admitted
}

func (l *liveStreams) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if l.n == 0 && l.idle != nil {
		close(l.idle)
		l.idle = nil
	}
}

// count is the number of connections held.
func (l *liveStreams) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// hold files the connection of ctx under r's identity, for cut, and
// returns the context to relay it in; leave takes it out. It reports
// false when ctx is already cut.
func (l *liveStreams) hold(ctx context.Context, r *streamRoute) (context.Context, func(), bool) {
	ls := &liveStream{route: r}
	ctx, ls.cancel = context.WithCancel(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if ctx.Err() != nil {
		ls.cancel()
		return nil, nil, false
	}
	set := l.byRoute[r.id]
	if set == nil {
		set = map[*liveStream]struct{}{}
		l.byRoute[r.id] = set
	}
	set[ls] = struct{}{}
	return ctx, func() {
		ls.cancel()
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(set, ls)
		if len(set) == 0 {
			delete(l.byRoute, r.id)
		}
	}, true
}

// cut cancels the connections of every route gone says is gone.
func (l *liveStreams) cut(gone func(*streamRoute) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, set := range l.byRoute {
		for ls := range set {
			if gone(ls.route) {
				ls.cancel()
			}
		}
	}
}

// drain admits no more connections, waits up to grace for those held to
// end, then cuts every one left and waits for them.
func (l *liveStreams) drain(grace time.Duration) {
	l.mu.Lock()
	l.draining = true
	if l.n == 0 {
		l.mu.Unlock()
		l.cancel()
		return
	}
	idle := make(chan struct{})
	l.idle = idle
	l.mu.Unlock()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
	l.cancel()
	<-idle
}
