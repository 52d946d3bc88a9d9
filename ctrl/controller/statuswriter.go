// This file implements the loop that writes statuses, apart from the sync.

package controller

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/util/workqueue"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// Statuses are written by a loop of their own (statusWriter), as Cloudflare
// is synced by one: a leading sync translates, publishes, and hands the
// translation over. The API server takes writes at -kube-qps (50 a second
// by default), so the statuses of 1,000 routes changed at once take 20
// seconds to write; neither the proxies' next config nor the next sync
// waits for them.
//
// The loop writes the latest translation it was handed. One handed during
// a pass ends the pass before its next object: the next pass compares
// with the cache every status not known written, and what the cut pass
// wrote compares equal there, so nothing is written twice. A pass that
// fails is retried with backoff, or at once for a newer translation.

// statusWriter is the status loop; run runs it.
type statusWriter struct {
	c    *Controller
	wake chan struct{}

	mu   sync.Mutex
	next *translate.Output // handed, not taken yet
	from trace.SpanContext // the sync that handed next

	// forget asks the next pass to compare every status with the cache:
	// the lead was lost (a future leader trusts nothing it wrote before).
	forget atomic.Bool

	// written is the last translation whose statuses were all written;
	// nil: compare everything. Only run touches it.
	written *translate.Output
}

// retryBackoff is how a failed sync, or a failed pass of status writes,
// is retried: after 100 ms, doubling to 30 s, until one succeeds.
func retryBackoff() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 30*time.Second)
}

// errSuperseded ends a pass that a newer translation replaced.
var errSuperseded = errors.New("superseded by a newer translation")

func newStatusWriter(c *Controller) *statusWriter {
	return &statusWriter{c: c, wake: make(chan struct{}, 1)}
}

// hand makes out the translation to write, replacing one not taken yet.
func (w *statusWriter) hand(ctx context.Context, out *translate.Output) {
	w.mu.Lock()
	w.next, w.from = out, trace.SpanContextFromContext(ctx)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// take returns the translation handed last, or nil.
func (w *statusWriter) take() (*translate.Output, trace.SpanContext) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out, from := w.next, w.from
	w.next = nil
	return out, from
}

// newer reports whether a translation was handed since the last take.
func (w *statusWriter) newer() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.next != nil
}

// run writes handed translations until ctx ends.
func (w *statusWriter) run(ctx context.Context) {
	const key = "statuses" // the backoff's one item
	backoff := retryBackoff()
	var retry *translate.Output // a failed pass's translation, to try again
	var timer <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-timer:
		}
		out, from := w.take()
		if out == nil {
			out, from = retry, trace.SpanContext{}
		}
		retry, timer = nil, nil
		if out == nil {
			continue
		}
		switch err := w.pass(ctx, out, from); {
		case err == nil:
			backoff.Forget(key)
		case errors.Is(err, errSuperseded), ctx.Err() != nil:
		default:
			delay := backoff.When(key)
			w.c.log.Error("status writes failed; retrying", "err", err, "in", delay)
			retry, timer = out, time.After(delay)
		}
	}
}

// pass writes the statuses of out that differ from the last translation
// written (all of them, compared with the cache, after a failure, a
// deletion or a change of leader), in a span linked to the sync that
// handed it.
func (w *statusWriter) pass(ctx context.Context, out *translate.Output, from trace.SpanContext) error {
	c := w.c
	if !c.leader.Load() {
		w.written = nil
		return nil
	}
	if w.forget.Swap(false) {
		w.written = nil
	}
	if c.w.deleted.Swap(false) {
		// A deleted object may be back under its name, with no status:
		// compare everything with the cache (unchanged ones write nothing).
		w.written = nil
	}
	ctx, span := c.tracer.Start(ctx, spanStatusWrites, trace.WithLinks(trace.Link{SpanContext: from}))
	compareAll := w.written == nil
	n, failed, err := c.writeStatuses(ctx, w.written, out, w.newer)
	c.Stats.StatusWrites.Add(int64(n))
	if span.IsRecording() {
		span.SetAttributes(attrStatusWrites.Int(n), attrStatusErrors.Int(failed), attrStatusCompareAll.Bool(compareAll))
		if err != nil && !errors.Is(err, errSuperseded) {
			span.SetStatus(codes.Error, "status writes failed") // each error is an event of this span
		}
	}
	span.End()
	switch {
	case errors.Is(err, errSuperseded):
		// written stays: the next pass compares with the cache every
		// status that changed since, those this pass wrote among them.
	case err != nil:
		c.Stats.StatusErrors.Add(1)
		w.written = nil // compare everything next time: writes that worked are then no-ops
	default:
		w.written = out
	}
	return err
}
