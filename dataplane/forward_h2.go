// This file forwards a request to an HTTP/2 backend.

package dataplane

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
)

// forwardH2 sends the request through net/http's HTTP/2 transport (h2c or
// TLS with h2): gRPC and other HTTP/2 backends. Streams in both directions
// are copied as they come, and trailers are passed on.
func (x *exchange) forwardH2(w http.ResponseWriter, r *http.Request) {
	reqDeadline := x.deadline()
	var last *endpoint
	for attempt := 0; ; attempt++ {
		ep := x.endpointFor(w, r, attempt, last)
		if ep == nil {
			return
		}
		began := x.beginAttempt(ep, attempt)
		res, cancel, err := x.roundTripH2(r, ep, x.tryDeadline(reqDeadline))
		if err != nil {
			x.waitOff()
			err = x.failure(err)
			x.endAttempt(began, 0, err)
			cancel()
			ep.inflight.Add(-1)
			last = ep
			if x.attemptFailed(w, r, ep, attempt, err, reqDeadline) {
				continue
			}
			return
		}
		x.endAttempt(began, res.StatusCode, nil)
		if rp := x.rule.Retry; rp != nil && rp.Retryable(res.StatusCode) && x.mayRetry(attempt, nil, reqDeadline, r) {
			x.waitOff()
			res.Body.Close()
			cancel()
			ep.inflight.Add(-1)
			last = ep
			continue
		}
		x.ep = ep
		func() {
			defer ep.inflight.Add(-1) // deferred: respondH2 may abort with a panic
			defer cancel()
			defer x.waitOff() // the client stays watched while the body streams
			x.respondH2(w, r, res)
		}()
		return
	}
}

// clientBody is a request body streamed from the client to an HTTP/2
// backend. The transport reads it in a goroutine of its own and reports
// any failure as its own; clientBody remembers that reading the client
// failed, so the exchange can tell the client's fault from the backend's.
type clientBody struct {
	r      io.Reader
	failed atomic.Pointer[http1.ClientBodyError]
}

func (b *clientBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		cerr := &http1.ClientBodyError{Err: err}
		b.failed.Store(cerr)
		return n, cerr
	}
	return n, err
}

func (b *clientBody) Close() error { return nil }

// failure is the client's failure to send the body, or nil; b may be nil.
func (b *clientBody) failure() error {
	if b == nil {
		return nil
	}
	if e := b.failed.Load(); e != nil {
		return e
	}
	return nil
}

// errHeaderTimeout is a deadline that passed before the response head.
type errHeaderTimeout struct{}

func (errHeaderTimeout) Error() string   { return "timed out waiting for the response head" }
func (errHeaderTimeout) Timeout() bool   { return true }
func (errHeaderTimeout) Temporary() bool { return true }

func (x *exchange) roundTripH2(r *http.Request, ep *endpoint, deadline time.Time) (*http.Response, context.CancelFunc, error) {
	ctx, cancel := context.WithCancelCause(r.Context())
	if !deadline.IsZero() {
		// A deadline on the head only: once it has arrived the stream may
		// run as long as it likes.
		t := time.AfterFunc(time.Until(deadline), func() { cancel(errHeaderTimeout{}) })
		defer t.Stop()
	}
	out := &http.Request{
		Method:        r.Method,
		URL:           &url.URL{Scheme: x.cs.t.scheme, Host: ep.addr, Opaque: x.path, RawQuery: x.query},
		Host:          x.out.host,
		Header:        x.h2Header(r),
		ContentLength: x.out.contentLength,
		Body:          http.NoBody,
	}
	switch {
	case x.replay != nil:
		replay := x.replay
		out.Body = io.NopCloser(bytes.NewReader(replay))
		out.GetBody = func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(replay)), nil
		}
	case x.hasBody:
		x.h2body = &clientBody{r: x.body}
		out.Body = x.h2body
	}
	if x.bodyKept() { // else the client is still sending its body
		x.waitOn(cancelStream(func() { cancel(nil) }))
	}
	res, err := x.cs.t.h2.RoundTrip(out.WithContext(ctx))
	if err != nil {
		if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
			err = c
		}
		if cerr := x.h2body.failure(); cerr != nil {
			err = cerr
		}
		return nil, func() { cancel(nil) }, err
	}
	return res, func() { cancel(nil) }, nil
}

// h2Header builds the upstream header map with the same rules writeHead
// applies on HTTP/1.1. "TE: trailers" is kept: gRPC servers require it.
func (x *exchange) h2Header(r *http.Request) http.Header {
	o := &x.out
	h := make(http.Header, len(r.Header)+4)
	conn := r.Header["Connection"]
	for k, vs := range r.Header {
		if o.forwards(k, conn) {
			h[k] = vs
		}
	}
	if o.cookieSet && o.cookie != "" && o.keepsCookie() {
		h["Cookie"] = []string{o.cookie}
	}
	if httpsyntax.HasToken(r.Header["Te"], "trailers") {
		h["Te"] = []string{"trailers"}
	}
	{
		ops := o.plan.Ops()
		for i := range ops {
			op := &ops[i]
			if len(op.Values) > 0 {
				h[op.Name] = append(h[op.Name][:len(h[op.Name]):len(h[op.Name])], op.Values...)
			}
		}
	}
	if o.identity != nil {
		for _, f := range identityFields(o.access, o.identity) {
			if f[0] != "" {
				h[f[0]] = []string{f[1]}
			}
		}
		h[accessHeader] = []string{o.token}
	}
	if o.traceparent != "" {
		h["Traceparent"] = []string{o.traceparent}
		if o.tracestate != "" {
			h["Tracestate"] = []string{o.tracestate}
		}
	}
	xff := o.peer
	if len(o.xffPrior) > 0 {
		xff = strings.Join(o.xffPrior, ", ") + ", " + o.peer
	}
	// The proxy's values first, then any a modifier adds, as on HTTP/1.1.
	if !o.plan.Replaces("X-Forwarded-For") {
		h["X-Forwarded-For"] = append([]string{xff}, h["X-Forwarded-For"]...)
	}
	if !o.plan.Replaces("X-Forwarded-Proto") {
		h["X-Forwarded-Proto"] = append([]string{o.xfp}, h["X-Forwarded-Proto"]...)
	}
	return h
}

// copyBufPool holds the buffers HTTP/2 response bodies are copied through.
var copyBufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// respondH2 streams an HTTP/2 response to the client, flushing after
// every read so gRPC messages are not held back, then sends the trailers.
func (x *exchange) respondH2(w http.ResponseWriter, r *http.Request, res *http.Response) {
	defer res.Body.Close()
	stats := &x.h.p.stats
	hdr := w.Header()
	conn := res.Header["Connection"]
	for k, vs := range res.Header {
		if httpsyntax.HopByHop(k) || (len(conn) > 0 && httpsyntax.HasToken(conn, k)) {
			continue
		}
		hdr[k] = vs
	}
	switch {
	case res.StatusCode == http.StatusNoContent || res.StatusCode == http.StatusNotModified:
		delete(hdr, "Content-Length") // see http1's noContent
	case len(res.Trailer) > 0 && r.ProtoMajor == 1:
		// Declared trailers reach an HTTP/1.1 client only in a chunked
		// body, which a Content-Length would rule out.
		delete(hdr, "Content-Length")
		hdr["Transfer-Encoding"] = chunkedTE
	}
	x.writeHeader(w, r, hdr, res.StatusCode)
	fl, _ := w.(http.Flusher)
	bp := copyBufPool.Get().(*[]byte)
	defer copyBufPool.Put(bp)
	buf := *bp
	for {
		n, err := res.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			if x.gone() {
				return
			}
			if x.h2body.failure() == nil { // else the client's body failed, not the backend
				stats.UpstreamErrors.Add(1)
			}
			if fl != nil {
				fl.Flush()
			}
			panic(http.ErrAbortHandler)
		}
	}
	for k, vs := range res.Trailer {
		if httpsyntax.TrailerAllowed(k) {
			hdr[http.TrailerPrefix+k] = vs
		}
	}
}
