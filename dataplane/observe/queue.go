// This file implements the bounded queue the tracer and the access log
// drain.

package observe

import (
	"sync"
	"time"
)

// drainQueue is a bounded queue that one goroutine empties, every so
// often or as soon as it is half full. The access log's lines and the
// tracer's spans go through one: the request path offers an item and
// moves on. It never blocks (a full queue refuses the item, for the
// caller to count) and never wakes the goroutine item by item, which
// would cost every request a goroutine switch.
type drainQueue[T any] struct {
	items chan T
	kick  chan struct{} // the queue is filling: drain now
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

func newDrainQueue[T any](size int) *drainQueue[T] {
	return &drainQueue[T]{
		items: make(chan T, size),
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
}

// offer queues v, or reports false when the queue is full.
func (q *drainQueue[T]) offer(v T) bool {
	select {
	case q.items <- v:
		if len(q.items) >= cap(q.items)/2 {
			select {
			case q.kick <- struct{}{}:
			default:
			}
		}
		return true
	default:
		return false
	}
}

// run is the draining goroutine: every interval, when kicked, and once
// more at close, it hands each queued item to take, then calls drained.
func (q *drainQueue[T]) run(interval time.Duration, take func(T), drained func()) {
	defer close(q.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	drain := func() {
		for {
			select {
			case v := <-q.items:
				take(v)
			default:
				drained()
				return
			}
		}
	}
	for {
		select {
		case <-tick.C:
			drain()
		case <-q.kick:
			drain()
		case <-q.stop:
			drain()
			return
		}
	}
}

// close has run drain what is queued, and waits for it to return. It is
// safe to call more than once. (The channel of items is never closed: a
// request finishing at that moment must not send on a closed channel.)
func (q *drainQueue[T]) close() {
	q.once.Do(func() {
		close(q.stop)
		<-q.done
	})
}
