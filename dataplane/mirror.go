package dataplane

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// mirror is a compiled RequestMirror filter: a share of requests is copied
// to another cluster and the answers are thrown away.
//
// The client never waits on a mirror: copies are sent by goroutines of
// their own, at most Options.MaxMirrors at a time; beyond that, and for
// requests whose body was too large to keep (maxReplayBody), the copy is
// dropped and counted in Stats.MirrorsDropped.
type mirror struct {
	slot     *clusterSlot
	num, den uint64 // share mirrored: num/den
}

// mirrorTimeout bounds one mirrored exchange, so a stuck mirror backend
// cannot hold a slot for ever.
const mirrorTimeout = 30 * time.Second

func compileMirror(m *proxycfg.Mirror, cluster func(name string) *clusterSlot) (*mirror, error) {
	if m.Cluster == "" {
		return nil, fmt.Errorf("RequestMirror needs a cluster")
	}
	mr := &mirror{slot: cluster(m.Cluster), num: 1, den: 1}
	if mr.slot == nil {
		return nil, fmt.Errorf("RequestMirror: cluster %q is not defined", m.Cluster)
	}
	switch {
	case m.Percent != nil && m.Fraction != nil:
		return nil, fmt.Errorf("RequestMirror: set percent or fraction, not both")
	case m.Percent != nil:
		if *m.Percent < 0 || *m.Percent > 100 {
			return nil, fmt.Errorf("RequestMirror: percent %d out of range 0-100", *m.Percent)
		}
		mr.num, mr.den = uint64(*m.Percent), 100
	case m.Fraction != nil:
		den := m.Fraction.Denominator
		if den == 0 {
			den = 100
		}
		if den < 0 || m.Fraction.Numerator < 0 || m.Fraction.Numerator > den {
			return nil, fmt.Errorf("RequestMirror: fraction %d/%d is not between 0 and 1", m.Fraction.Numerator, den)
		}
		mr.num, mr.den = uint64(m.Fraction.Numerator), uint64(den)
	}
	return mr, nil
}

// mirror sends copies of the request to each mirror that samples it.
func (p *Proxy) mirror(ms []*mirror, x *exchange, r *http.Request) {
	for _, m := range ms {
		if m.num == 0 || (m.num < m.den && rand.Uint64N(m.den) >= m.num) {
			continue
		}
		if !x.bodyKept() || int(p.mirrorsInFlight.Add(1)) > p.opts.MaxMirrors {
			if x.bodyKept() {
				p.mirrorsInFlight.Add(-1)
			}
			p.stats.MirrorsDropped.Add(1)
			continue
		}
		cs := m.slot.state.Load()
		if cs == nil || len(cs.eps) == 0 {
			p.mirrorsInFlight.Add(-1)
			p.stats.MirrorsDropped.Add(1)
			continue
		}
		// The copy owns everything it reads: the client's request may be
		// gone before the mirror is sent.
		out := x.out
		out.in = r.Header.Clone()
		out.xffPrior = append([]string(nil), out.xffPrior...)
		out.plan = x.rule.mirrorPlan(x.be)
		var span *proxySpan
		if p.tracer != nil {
			span = x.startMirrorSpan(m, &out)
		}
		go p.sendMirror(cs, out, x.path, x.query, x.replay, span)
	}
}

// mirrorPlan is the request header plan a mirror copy gets: the rule's
// and the chosen backend's, as the original request.
func (ru *rule) mirrorPlan(b *backend) *headerPlan { return b.reqPlan }

func (p *Proxy) sendMirror(cs *clusterState, out outRequest, path, query string, body []byte, span *proxySpan) {
	defer p.mirrorsInFlight.Add(-1)
	ep := cs.pick(nil)
	ok := false
	if cs.h2 != nil {
		ok = sendMirrorH2(cs, ep, &out, path, query, body)
	} else {
		ok = sendMirrorH1(ep, &out, body)
	}
	if p.tracer != nil {
		p.tracer.endMirrorSpan(span, ep, ok)
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
	c, err := ep.h1.Get(ctx, "")
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
		URL:           &url.URL{Scheme: cs.scheme, Host: ep.addr, Opaque: path, RawQuery: query},
		Host:          out.host,
		Header:        x.h2Header(&http.Request{Header: out.in}),
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
	}
	res, err := cs.h2.RoundTrip(req.WithContext(ctx))
	if err != nil {
		return false
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	return true
}
