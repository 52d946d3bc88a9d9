// This file forwards a request to an HTTP/1.1 backend.

package dataplane

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
)

var chunkedTE = []string{"chunked"}

// deadlines returns when the whole exchange must have its response head
// (zero for no limit).
func (x *exchange) deadline() time.Time {
	if x.rule.RequestTimeout > 0 {
		return x.start.Add(x.rule.RequestTimeout)
	}
	return time.Time{}
}

// tryDeadline bounds one attempt: the backendRequest timeout, within the
// request deadline.
func (x *exchange) tryDeadline(reqDeadline time.Time) time.Time {
	if x.rule.TryTimeout <= 0 {
		return reqDeadline
	}
	d := time.Now().Add(x.rule.TryTimeout)
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
			err = x.failure(err)
			x.endAttempt(began, 0, err)
			ep.inflight.Add(-1)
			last = ep
			if x.attemptFailed(w, r, ep, attempt, err, reqDeadline) {
				continue
			}
			return
		}
		x.endAttempt(began, head.Status, nil)
		if rp := x.rule.Retry; rp != nil && rp.Retryable(head.Status) && x.mayRetry(attempt, nil, reqDeadline, r) {
			// Drop this answer and try again; keep the connection if its
			// body is small enough to read past.
			x.waitOff()
			c.Drop(head, r.Method, 64<<10, bodyDone)
			http1.PutHead(head)
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

// attemptFailed handles an attempt that got no response (err as failure
// counts it): it counts and logs the failure, has the balancer avoid an
// endpoint that refused the connection, and either waits to retry (true)
// or answers the client. An attempt cut short because the client left is
// none of these: the request is abandoned.
func (x *exchange) attemptFailed(w http.ResponseWriter, r *http.Request, ep *endpoint, attempt int, err error, reqDeadline time.Time) (retry bool) {
	stats := &x.h.p.stats
	if err == errClientGone {
		x.abandon()
	}
	if errors.Is(err, http1.ErrRequestLine) {
		// Checked on arrival, so only a rewrite could have made it:
		// nothing was sent, and no backend is to blame.
		reply(w, r, stats, http.StatusInternalServerError, "the request cannot be written to the backend")
		return false
	}
	var cb *http1.ClientBodyError
	if errors.As(err, &cb) {
		// The client stopped sending, sent less than it said or sent a
		// malformed body: its error, not the backend's (RFC 9110 §15.5.1,
		// §15.5.9).
		replyClientBody(w, r, stats, cb)
		return false
	}
	status, msg := upstreamFailure(err, stats)
	if backendsFault(err) {
		x.h.p.logUpstream(x.cs.name, ep.addr, status, err)
	}
	var dial *http1.DialError
	if errors.As(err, &dial) {
		ep.markDown()
	}
	if x.mayRetry(attempt, err, reqDeadline, r) {
		return true
	}
	reply(w, r, stats, status, msg)
	return false
}

// replyClientBody answers a request whose body could not be read: 408
// when it stopped arriving (RFC 9110 §15.5.9), else 400.
func replyClientBody(w http.ResponseWriter, r *http.Request, stats *observe.Counters, cb *http1.ClientBodyError) {
	if isTimeout(cb.Err) {
		stats.ClientBodyTimeouts.Add(1)
		reply(w, r, stats, http.StatusRequestTimeout, "the request body did not arrive in time")
		return
	}
	stats.ClientBadBodies.Add(1)
	reply(w, r, stats, http.StatusBadRequest, "incomplete or malformed request body")
}

// mayRetry decides whether attempt (0-based) may be followed by another,
// and waits out the backoff if so. err is the failure, or nil for a
// retryable status.
func (x *exchange) mayRetry(attempt int, err error, reqDeadline time.Time, r *http.Request) bool {
	rp := x.rule.Retry
	if rp == nil || attempt >= rp.Attempts {
		return false
	}
	if !x.replayable() && !neverSent(err) {
		return false // it may have reached the backend, which may act on it twice
	}
	wait := rp.Wait(attempt + 1)
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

// neverSent reports whether err means no byte of the request left the
// proxy: no connection could be made, or none was free.
func neverSent(err error) bool {
	var dial *http1.DialError
	return errors.As(err, &dial) || errors.Is(err, http1.ErrOverloaded) || errors.Is(err, http1.ErrClientOverloaded) ||
		errors.Is(err, http1.ErrUploadsOverloaded)
}

// send writes the request on a connection to ep and reads the response
// head. A reused connection that turns out to have been closed by the
// server is replaced once by a new one, when the request can be replayed
// (it is idempotent; a server closing as a request arrives may have read
// it).
// bodyDone delivers the outcome of writing the body.
func (x *exchange) send(ctx context.Context, ep *endpoint, deadline time.Time) (*http1.Conn, *http1.Head, <-chan error, error) {
	for fresh := false; ; fresh = true {
		var c *http1.Conn
		var err error
		if fresh {
			c, err = x.dial(ctx, ep)
		} else {
			c, err = x.get(ctx, ep)
		}
		if err != nil {
			return nil, nil, nil, err
		}
		if !deadline.IsZero() {
			c.SetDeadline(deadline)
		}
		head, bodyDone, err := x.exchangeOn(c)
		if err == nil {
			if !deadline.IsZero() {
				c.SetDeadline(time.Time{}) // the timeouts bound the head only
			}
			return c, head, bodyDone, nil
		}
		c.Close()
		if bodyDone != nil {
			// A body writer that failed to read the client's body closed
			// the connection under the exchange: the client is to blame,
			// not what the backend then did. The same goes for a body
			// written inline (at most 64 KiB), whose failure is err.
			// (net/http's server also cancels the request's context
			// when a body read fails, so this comes first.)
			var cb *http1.ClientBodyError
			if berr := <-bodyDone; errors.As(berr, &cb) {
				return nil, nil, nil, berr
			}
			if errors.As(err, &cb) {
				return nil, nil, nil, err
			}
		}
		if ctx.Err() != nil {
			return nil, nil, nil, context.Cause(ctx)
		}
		if c.Reused() && !fresh && stale(err) && x.replayable() {
			continue
		}
		return nil, nil, nil, err
	}
}

// get returns a connection to ep for the exchange: an idle one, or a new
// one (dial).
func (x *exchange) get(ctx context.Context, ep *endpoint) (*http1.Conn, error) {
	if _, own := x.w.(*http1.ResponseWriter); !own {
		return ep.pool().Get(ctx, x.client, x.uploading())
	}
	if c, err := ep.pool().Idle(x.client, x.uploading()); c != nil || err != nil {
		return c, err
	}
	return x.dial(ctx, ep)
}

// dial dials a new connection to ep for the exchange. net/http's servers
// end ctx, and the dial with it, when the client leaves; on the own
// server the client is watched while the dial lasts (a backend slow to
// accept takes up to the dial timeout), and the dial is cut short if it
// leaves.
func (x *exchange) dial(ctx context.Context, ep *endpoint) (*http1.Conn, error) {
	if _, own := x.w.(*http1.ResponseWriter); !own {
		return ep.pool().Dial(ctx, x.client, x.uploading())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	x.waitOn(cancelStream(cancel))
	defer x.waitOff()
	return ep.pool().Dial(ctx, x.client, x.uploading())
}

// exchangeOn writes the request and reads the head on c. While it waits
// for the answer the client is watched (waitOn); on success the watch goes
// on through the body (respond ends it), on failure it is ended here.
func (x *exchange) exchangeOn(c *http1.Conn) (*http1.Head, <-chan error, error) {
	if err := writeHead(c.Writer(), &x.out); err != nil {
		return nil, nil, err
	}
	var body io.Reader
	if x.hasBody {
		body = x.body
	}
	bodyDone, err := c.Send(body, x.replay, x.out.contentLength)
	if err != nil {
		return nil, bodyDone, err
	}
	if !c.Streaming() { // else the client is still sending its body
		x.waitOn(c)
	}
	head := http1.GetHead()
	if err := c.ReadResponse(head, x.out.upgrade != ""); err != nil {
		x.waitOff()
		http1.PutHead(head)
		return nil, bodyDone, err
	}
	return head, bodyDone, nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// stale reports whether err means the server closed the connection before
// reading the request: safe to send again on a new connection.
func stale(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// backendsFault reports whether a failed attempt is the backend's doing,
// to be counted against it: not when the client's body failed, when the
// client is at its share of the endpoint's connections (or of those for
// uploads), when the client went away, nor when the request could not be
// written.
func backendsFault(err error) bool {
	if err == errClientGone {
		return false
	}
	var cb *http1.ClientBodyError
	return !errors.As(err, &cb) && !errors.Is(err, http1.ErrRequestLine) && !errors.Is(err, http1.ErrClientOverloaded) &&
		!errors.Is(err, http1.ErrUploadsOverloaded)
}

// upstreamFailure maps a failure to get a response to the status the
// client gets (502, or 504 for a timeout) and counts it.
func upstreamFailure(err error, stats *observe.Counters) (int, string) {
	if errors.Is(err, http1.ErrOverloaded) {
		stats.UpstreamErrors.Add(1)
		return http.StatusServiceUnavailable, "the backend has as many connections as allowed"
	}
	if errors.Is(err, http1.ErrClientOverloaded) {
		stats.ClientLimited.Add(1)
		return http.StatusServiceUnavailable, "this client holds as many connections to the backend as one client may"
	}
	if errors.Is(err, http1.ErrUploadsOverloaded) {
		stats.ClientUploadLimited.Add(1)
		return http.StatusServiceUnavailable, "the backend's connections for uploads still arriving are taken"
	}
	if isTimeout(err) {
		stats.Timeouts.Add(1)
		return http.StatusGatewayTimeout, "the backend did not answer in time"
	}
	stats.UpstreamErrors.Add(1)
	var dial *http1.DialError
	if errors.As(err, &dial) {
		return http.StatusBadGateway, "could not connect to the backend"
	}
	var pe *http1.ProtocolError
	if errors.As(err, &pe) {
		return http.StatusBadGateway, "the backend sent a malformed response"
	}
	return http.StatusBadGateway, "the backend closed the connection without answering"
}

// respondReleasing responds, then releases the head and the endpoint's
// in-flight count even when respond aborts the handler with a panic. (A
// function of its own: a defer inside forwardH1's loop would allocate.)
func (x *exchange) respondReleasing(w http.ResponseWriter, r *http.Request, c *http1.Conn, head *http1.Head, bodyDone <-chan error) {
	defer x.ep.inflight.Add(-1)
	defer http1.PutHead(head)
	x.respond(w, r, c, head, bodyDone)
}

// respond copies the response head to the client, applies response
// filters, streams the body, and returns the connection to its pool when
// the exchange ended cleanly. A short body (responseBuffer) is read whole
// and the connection given back before the client is sent anything, so
// that a client slow to take it holds memory, not the backend.
func (x *exchange) respond(w http.ResponseWriter, r *http.Request, c *http1.Conn, head *http1.Head, bodyDone <-chan error) {
	stats := &x.h.p.stats
	var body []byte // the whole body, when it was read before the head went out
	var upErr error
	if n := head.ContentLength; n > 0 && n <= responseBuffer && !head.Chunked && head.HasBody(r.Method) {
		if buf := x.h.p.buffers.get(int(n)); buf != nil {
			defer buf.release()
			var got int
			got, upErr = c.ReadBody(head, buf.b[:n])
			body = buf.b[:got]
			x.waitOff() // before Finish: a watch firing later would interrupt a pooled connection
			c.Finish(head, upErr == nil, r.Method, bodyDone)
		}
	}
	var hdr http.Header
	if rw, own := w.(*http1.ResponseWriter); own && body != nil && !x.filtersResponse() {
		// A whole body and nothing to change in the head: the origin
		// server writes the backend's head on as it is, without the map.
		stats.Status(head.Status)
		rw.WriteHead(head)
	} else {
		hdr = w.Header()
		head.CopyTo(hdr)
		if head.Chunked && r.ProtoMajor == 1 {
			// Stay chunked, as the backend was: net/http would otherwise give
			// a short body a Content-Length and drop the trailers after it.
			hdr["Transfer-Encoding"] = chunkedTE
		}
		x.writeHeader(w, r, hdr, head.Status)
	}

	fl, _ := w.(http.Flusher)
	if body != nil {
		w.Write(body) // a failure is the client's: the backend is done
	} else {
		// The client is still watched while the body streams: the
		// backend may go quiet for as long as it likes (an event stream,
		// a stalled download).
		var downErr error
		upErr, downErr = c.CopyBody(w, fl, head, r.Method, hdr)
		x.waitOff() // before Finish: a watch firing later would interrupt a pooled connection
		c.Finish(head, upErr == nil && downErr == nil, r.Method, bodyDone)
	}
	if upErr != nil && !x.gone() {
		// The backend failed mid-body. Send what arrived, then abort the
		// client's response so it sees a truncated message, not a
		// complete short one.
		stats.UpstreamErrors.Add(1)
		if fl != nil {
			fl.Flush()
		}
		panic(http.ErrAbortHandler)
	}
}

// writeHeader sends the answer's head from the header map hdr, a
// backend's fields copied in: the response filters applied, and the
// status counted.
func (x *exchange) writeHeader(w http.ResponseWriter, r *http.Request, hdr http.Header, status int) {
	x.responseFilters(r, hdr)
	if _, ok := hdr["Content-Type"]; !ok {
		hdr["Content-Type"] = nil // keep net/http from sniffing one
	}
	x.h.p.stats.Status(status)
	w.WriteHeader(status)
}

// filtersResponse reports whether responseFilters has anything to do.
func (x *exchange) filtersResponse() bool {
	return x.be.RespPlan != nil || x.rule.CORS != nil || x.rule.Session != nil
}

// responseFilters applies the backend's response header plan, CORS and
// session persistence to the response header map before it is sent.
func (x *exchange) responseFilters(r *http.Request, hdr http.Header) {
	x.be.RespPlan.Apply(hdr)
	ru := x.rule
	if ru.CORS != nil {
		ru.CORS.Handle(r.Header, r.Method, hdr)
	}
	if ru.Session != nil {
		x.setSession(r, hdr)
	}
}
