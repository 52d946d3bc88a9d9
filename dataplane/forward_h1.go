package dataplane

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"
)

// inlineBody is the largest request body of known length written by the
// handler goroutine before it reads the response. Bigger or unknown
// bodies are written by a goroutine of their own, so that a backend that
// answers before reading everything (a 413, say) cannot deadlock the
// exchange.
const inlineBody = 64 << 10

var chunkedTE = []string{"chunked"}

// pastDeadline unblocks a connection's pending I/O at once.
var pastDeadline = time.Unix(1, 0)

// deadlines returns when the whole exchange must have its response head
// (zero for no limit).
func (x *exchange) deadline() time.Time {
	if x.rule.reqTimeout > 0 {
		return x.start.Add(x.rule.reqTimeout)
	}
	return time.Time{}
}

// tryDeadline bounds one attempt: the backendRequest timeout, within the
// request deadline.
func (x *exchange) tryDeadline(reqDeadline time.Time) time.Time {
	if x.rule.tryTimeout <= 0 {
		return reqDeadline
	}
	d := time.Now().Add(x.rule.tryTimeout)
	if !reqDeadline.IsZero() && reqDeadline.Before(d) {
		return reqDeadline
	}
	return d
}

// forwardH1 sends the request over a pooled HTTP/1.1 connection, retrying
// as the rule allows, and streams the answer back.
func (x *exchange) forwardH1(w http.ResponseWriter, r *http.Request) {
	reqDeadline := x.deadline()
	var last *endpoint
	for attempt := 0; ; attempt++ {
		ep := x.endpointFor(w, r, attempt, last)
		if ep == nil {
			return
		}
		began := x.beginAttempt(ep, attempt)
		c, head, bodyDone, err := x.send(r.Context(), ep, x.tryDeadline(reqDeadline))
		if err != nil {
			x.endAttempt(began, 0, err)
			ep.inflight.Add(-1)
			last = ep
			if x.attemptFailed(w, r, ep, attempt, err, reqDeadline) {
				continue
			}
			return
		}
		x.endAttempt(began, head.status, nil)
		if rp := x.rule.retry; rp != nil && rp.retryable(head.status) && x.mayRetry(attempt, nil, reqDeadline, r) {
			// Drop this answer and try again; keep the connection if its
			// body is small enough to read past.
			if <-bodyDone == nil && !head.closeConn && discardBody(c.br, head, r.Method, 64<<10) {
				c.pool.put(c)
			} else {
				c.close()
			}
			putRespHead(head)
			ep.inflight.Add(-1)
			last = ep
			continue
		}
		x.ep = ep
		x.respondReleasing(w, r, c, head, bodyDone)
		return
	}
}

// endpointFor picks the endpoint of an attempt, the pinned one first if
// a session named one, else any but the one that just failed, and counts
// the attempt in flight on it. With none left it answers 503 and returns
// nil.
func (x *exchange) endpointFor(w http.ResponseWriter, r *http.Request, attempt int, last *endpoint) *endpoint {
	ep := x.ep
	if ep == nil || attempt > 0 {
		ep = x.cs.pick(last)
	}
	if ep == nil {
		reply(w, r, &x.h.p.stats, http.StatusServiceUnavailable, "no ready endpoints for this backend")
		return nil
	}
	ep.inflight.Add(1)
	return ep
}

// attemptFailed handles an attempt that got no response: it counts and
// logs the failure, has the balancer avoid an endpoint that refused the
// connection, and either waits to retry (true) or answers the client.
func (x *exchange) attemptFailed(w http.ResponseWriter, r *http.Request, ep *endpoint, attempt int, err error, reqDeadline time.Time) (retry bool) {
	stats := &x.h.p.stats
	var cb *errClientBody
	if errors.As(err, &cb) {
		// The client stopped sending (or sent less than it said): nothing
		// useful can be answered, but try.
		reply(w, r, stats, http.StatusBadRequest, "incomplete request body")
		return false
	}
	status, msg := upstreamFailure(err, stats)
	x.h.p.logUpstream(x.cs.name, ep.addr, status, err)
	var dial *errDial
	if errors.As(err, &dial) {
		ep.markDown()
	}
	if x.mayRetry(attempt, err, reqDeadline, r) {
		return true
	}
	reply(w, r, stats, status, msg)
	return false
}

// mayRetry decides whether attempt (0-based) may be followed by another,
// and waits out the backoff if so. err is the failure, or nil for a
// retryable status.
func (x *exchange) mayRetry(attempt int, err error, reqDeadline time.Time, r *http.Request) bool {
	rp := x.rule.retry
	if rp == nil || attempt >= rp.attempts {
		return false
	}
	var dial *errDial
	if !x.replayable() && !errors.As(err, &dial) {
		return false // the body has been (partly) sent and is gone
	}
	wait := rp.wait(attempt + 1)
	if !reqDeadline.IsZero() && time.Now().Add(wait).After(reqDeadline) {
		return false
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return false
		}
	}
	x.h.p.stats.Retries.Add(1)
	x.rec.retries++
	return true
}

// send writes the request on a connection to ep and reads the response
// head. A reused connection that turns out to have been closed by the
// server is replaced once by a new one, when the request can be replayed.
// bodyDone delivers the outcome of writing the body.
func (x *exchange) send(ctx context.Context, ep *endpoint, deadline time.Time) (*upConn, *respHead, <-chan error, error) {
	for fresh := false; ; fresh = true {
		var c *upConn
		var err error
		if fresh {
			c, err = ep.h1.fresh(ctx)
		} else {
			c, err = ep.h1.get(ctx)
		}
		if err != nil {
			return nil, nil, nil, err
		}
		if c.reused && !x.replayable() && !c.looksAlive() {
			c.close()
			continue // a new connection: the body must not go into a dead one
		}
		if !deadline.IsZero() {
			c.nc.SetDeadline(deadline)
		}
		head, bodyDone, err := x.exchangeOn(ctx, c, deadline)
		if err == nil {
			if !deadline.IsZero() {
				c.nc.SetDeadline(time.Time{}) // the timeouts bound the head only
			}
			return c, head, bodyDone, nil
		}
		c.close()
		if bodyDone != nil {
			<-bodyDone
		}
		if head != nil {
			putRespHead(head)
		}
		if ctx.Err() != nil {
			return nil, nil, nil, context.Cause(ctx)
		}
		if c.reused && !fresh && stale(err) && x.replayable() {
			continue
		}
		return nil, nil, nil, err
	}
}

// closedBody is a bodyDone channel that has already delivered success.
var closedBody = func() chan error { c := make(chan error, 1); c <- nil; close(c); return c }()

// exchangeOn writes the request and reads the head on c.
func (x *exchange) exchangeOn(ctx context.Context, c *upConn, deadline time.Time) (*respHead, <-chan error, error) {
	writeHead(c.bw, &x.out)
	bodyDone := (<-chan error)(closedBody)
	switch {
	case !x.hasBody:
	case x.replay != nil:
		c.bw.Write(x.replay)
	case x.out.contentLength > 0 && x.out.contentLength <= inlineBody:
		if _, err := writeBody(c.bw, x.body, x.out.contentLength); err != nil {
			return nil, nil, err
		}
	default:
		// The head goes now; the writer owns c.bw from here on.
		if err := c.bw.Flush(); err != nil {
			return nil, nil, err
		}
		ch := make(chan error, 1)
		go writeBodyAsync(c, x.body, x.out.contentLength, ch)
		bodyDone = ch
	}
	if bodyDone == (<-chan error)(closedBody) {
		if err := c.bw.Flush(); err != nil {
			return nil, nil, err
		}
	}
	stop, err := x.awaitResponse(c, deadline)
	if stop != nil {
		defer func() {
			if !stop() {
				c.broken = true // the watch fired and ruined the deadline
			}
		}()
	}
	if err != nil {
		return nil, bodyDone, err
	}
	head := getRespHead()
	if err := readHead(c.br, head); err != nil {
		putRespHead(head)
		return nil, bodyDone, err
	}
	if head.status == http.StatusSwitchingProtocols && x.out.upgrade == "" {
		putRespHead(head)
		return nil, bodyDone, protoErr("101 Switching Protocols without an upgrade request")
	}
	return head, bodyDone, nil
}

// watchAfter is how long the proxy waits for a response before it starts
// watching for the client going away. Watching costs allocations on every
// request, and a client that leaves during a fast exchange loses nothing;
// one that leaves during a long poll frees the backend connection.
const watchAfter = 500 * time.Millisecond

// awaitResponse waits for the first byte of the response. If it is slow
// to come, it arranges for the wait to end when the client goes away, and
// returns the function that stops that watch.
func (x *exchange) awaitResponse(c *upConn, deadline time.Time) (stop func() bool, err error) {
	if c.br.Buffered() > 0 {
		return nil, nil
	}
	early := time.Now().Add(watchAfter)
	if !deadline.IsZero() && !early.Before(deadline) {
		return nil, nil // the deadline comes first anyway
	}
	c.nc.SetReadDeadline(early)
	_, err = c.br.Peek(1)
	c.nc.SetReadDeadline(deadline)
	if err == nil || !isTimeout(err) {
		return nil, err
	}
	return x.watchClient(c), nil
}

// watchClient watches for the client leaving while c waits on the
// backend; if it does, c's pending I/O is cut short.
func (x *exchange) watchClient(c *upConn) func() bool {
	gone := new(atomic.Bool)
	x.clientGone = gone
	return watchClient(x.w, x.r, func() {
		gone.Store(true)
		c.nc.SetDeadline(pastDeadline)
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// writeBodyAsync writes a body while the caller reads the response.
func writeBodyAsync(c *upConn, body io.Reader, n int64, done chan<- error) {
	_, err := writeBody(c.bw, body, n)
	if err != nil {
		c.close() // the backend must not take a truncated body as whole
	}
	done <- err
}

// stale reports whether err means the server closed the connection before
// reading the request: safe to send again on a new connection.
func stale(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// upstreamFailure maps a failure to get a response to the status the
// client gets (502, or 504 for a timeout) and counts it.
func upstreamFailure(err error, stats *Stats) (int, string) {
	if errors.Is(err, errOverloaded) {
		stats.UpstreamErrors.Add(1)
		return http.StatusServiceUnavailable, "the backend has as many connections as allowed"
	}
	if isTimeout(err) {
		stats.Timeouts.Add(1)
		return http.StatusGatewayTimeout, "the backend did not answer in time"
	}
	stats.UpstreamErrors.Add(1)
	var dial *errDial
	if errors.As(err, &dial) {
		return http.StatusBadGateway, "could not connect to the backend"
	}
	var pe *errMalformed
	if errors.As(err, &pe) {
		return http.StatusBadGateway, "the backend sent a malformed response"
	}
	return http.StatusBadGateway, "the backend closed the connection without answering"
}

// respondReleasing responds, then releases the head and the endpoint's
// in-flight count even when respond aborts the handler with a panic. (A
// function of its own: a defer inside forwardH1's loop would allocate.)
func (x *exchange) respondReleasing(w http.ResponseWriter, r *http.Request, c *upConn, head *respHead, bodyDone <-chan error) {
	defer x.ep.inflight.Add(-1)
	defer putRespHead(head)
	x.respond(w, r, c, head, bodyDone)
}

// respond copies the response head to the client, applies response
// filters, streams the body, and returns the connection to its pool when
// the exchange ended cleanly.
func (x *exchange) respond(w http.ResponseWriter, r *http.Request, c *upConn, head *respHead, bodyDone <-chan error) {
	stats := &x.h.p.stats
	hdr := w.Header()
	head.copyTo(hdr, "")
	if head.chunked && r.ProtoMajor == 1 {
		// Stay chunked, as the backend was: net/http would otherwise give
		// a short body a Content-Length and drop the trailers after it.
		hdr["Transfer-Encoding"] = chunkedTE
	}
	x.responseFilters(r, hdr)
	if _, ok := hdr["Content-Type"]; !ok {
		hdr["Content-Type"] = nil // keep net/http from sniffing one
	}
	stats.status(head.status)
	w.WriteHeader(head.status)

	var err error
	bc := bodyCopy{w: w, br: c.br}
	bc.fl, _ = w.(http.Flusher)
	if head.hasBody(r.Method) && (head.chunked || head.contentLength > int64(c.br.Buffered())) {
		// More is to come: the backend may go quiet for as long as it
		// likes (a stream, a stalled download).
		if stop := x.watchClient(c); stop != nil {
			defer func() {
				if !stop() {
					c.broken = true
				}
			}()
		}
	}
	if head.hasBody(r.Method) {
		switch {
		case head.chunked:
			tr := getRespHead()
			if err = bc.chunked(tr); err == nil {
				tr.copyTo(hdr, http.TrailerPrefix)
			}
			putRespHead(tr)
		case head.contentLength >= 0:
			err = bc.fixed(head.contentLength)
		default:
			err = bc.toEOF()
		}
	}
	reuse := err == nil && !head.closeConn
	if reuse {
		select {
		case berr := <-bodyDone:
			reuse = berr == nil
		default:
			reuse = false // still sending a body the backend did not wait for
		}
	}
	if reuse {
		c.pool.put(c)
	} else {
		c.close()
		// Wait for a body writer still running: it reads the client's
		// body, which must not happen after the handler returns.
		<-bodyDone
	}
	if err != nil && bc.downErr == nil && !x.gone() {
		// The backend failed mid-body. Send what arrived, then abort the
		// client's response so it sees a truncated message, not a
		// complete short one.
		stats.UpstreamErrors.Add(1)
		if bc.fl != nil {
			bc.fl.Flush()
		}
		panic(http.ErrAbortHandler)
	}
}

// responseFilters applies the backend's response header plan, CORS and
// session persistence to the response header map before it is sent.
func (x *exchange) responseFilters(r *http.Request, hdr http.Header) {
	x.be.respPlan.apply(hdr)
	ru := x.rule
	if ru.cors != nil {
		ru.cors.handle(r.Header, r.Method, hdr)
	}
	if ru.session != nil {
		x.setSession(r, hdr)
	}
}
