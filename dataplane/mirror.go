// This file sends mirrored requests.

package dataplane

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
)

// mirrorTimeout bounds one mirrored exchange, so a stuck mirror backend
// cannot hold a slot for ever.
const mirrorTimeout = 30 * time.Second

// mirror sends copies of the request to each mirror that samples it.
func (p *Proxy) mirror(ms []*compiled.Mirror, x *exchange, r *http.Request) {
	for _, m := range ms {
		if !m.Sampled() {
			continue
		}
		if !x.bodyKept() || int(p.mirrorsInFlight.Add(1)) > p.opts.MaxMirrors {
			if x.bodyKept() {
				p.mirrorsInFlight.Add(-1)
			}
			p.stats.MirrorsDropped.Add(1)
			continue
		}
		slot := x.cc.clusters[m.Cluster]
		cs := slot.state.Load()
		if cs == nil || len(cs.addrs) == 0 {
			p.mirrorsInFlight.Add(-1)
			p.stats.MirrorsDropped.Add(1)
			continue
		}
		// The copy owns everything it reads: the client's request may be
		// gone before the mirror is sent.
		out := x.out.detached()
		out.plan = x.be.ReqPlan // the rule's and the backend's, as the original's
		var span *observe.Span
		if p.tracer != nil {
			span = x.startMirrorSpan(slot, &out)
		}
		// The copy holds the body's buffer too: it may be sent after the
		// request has ended. HTTP/2's transport may read it later still.
		if x.buf != nil {
			x.buf.hold()
			if cs.t.h2 != nil {
				x.buf.loosen()
			}
		}
		go p.sendMirror(cs, out, x.path, x.query, x.replay, x.buf, span)
	}
}

func (p *Proxy) sendMirror(cs *clusterState, out outRequest, path, query string, body []byte, buf *bodyBuf, span *observe.Span) {
	defer p.mirrorsInFlight.Add(-1)
	defer buf.release()
	ep := cs.pick(nil)
	ok := false
	if cs.t.h2 != nil {
		ok = sendMirrorH2(cs, ep, &out, path, query, body)
	} else {
		ok = sendMirrorH1(ep, &out, body)
	}
	if p.tracer != nil {
		endMirrorSpan(p.tracer, span, ep, ok)
	}
	if ok {
		p.stats.MirrorsSent.Add(1)
	} else {
		p.stats.MirrorsDropped.Add(1)
	}
}

func sendMirrorH1(ep *endpoint, out *outRequest, body []byte) bool {
	ctx, cancel := context.WithTimeout(context.Background(), mirrorTimeout)
	defer cancel()
	c, err := ep.pool().Get(ctx, "", false)
	if err != nil {
		return false
	}
	c.SetDeadline(time.Now().Add(mirrorTimeout))
	if err := writeHead(c.Writer(), out); err != nil {
		c.Close()
		return false
	}
	bodyDone, err := c.Send(nil, body, int64(len(body)))
	head := http1.GetHead()
	defer http1.PutHead(head)
	if err != nil || c.ReadResponse(head, false) != nil {
		c.Close()
		return false
	}
	c.SetDeadline(time.Time{})
	c.Drop(head, out.method, 1<<20, bodyDone)
	return true
}

func sendMirrorH2(cs *clusterState, ep *endpoint, out *outRequest, path, query string, body []byte) bool {
	ctx, cancel := context.WithTimeout(context.Background(), mirrorTimeout)
	defer cancel()
	x := exchange{out: *out}
	req := &http.Request{
		Method:        out.method,
		URL:           &url.URL{Scheme: cs.t.scheme, Host: ep.addr, Opaque: path, RawQuery: query},
		Host:          out.host,
		Header:        x.h2Header(&http.Request{Header: out.in}),
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
	}
	res, err := cs.t.h2.RoundTrip(req.WithContext(ctx))
	if err != nil {
		return false
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	return true
}
