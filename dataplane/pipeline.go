// This file implements the request pipeline, from refusal to the forward.

package dataplane

import (
	"math/rand/v2"
	"net/http"
	"strings"

	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
	"github.com/tunnelgate/tunnelgate/matcher"
)

// serve runs the pipeline, noting in x.rec what it chose:
//
//	refuse what no request may hold → pick the listener by host → (a load
//	balancer monitor's health request answered: health.go) → match a
//	rule → fail-closed checks → Cloudflare Access → CORS preflight →
//	redirect → rewrite →
//	choose a backend → its own rewrite → take the body's start → mirrors →
//	forward
//
// A step that may end the request answers it itself and returns true. The
// exchange is filled in as the steps go.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, x *exchange) {
	x.h, x.w, x.r, x.start = h, w, r, x.rec.start
	if x.refuseMalformed() || x.refuseUnconfigured() || x.refuseNonPathTarget() {
		return
	}
	scheme := clientScheme(r, h.trusted)
	vh, answered := x.chooseListener(scheme)
	if vh != nil {
		x.rec.listener = vh.stats
		if vh.health != nil && x.answerHealth(vh) { // a load balancer monitor's (health.go)
			return
		}
	}
	if answered || x.readEncodedSlashes(vh) {
		return
	}
	x.rec.path, x.rec.query = x.path, x.query
	t, answered := x.matchRule(vh)
	if answered || x.failClosed() || x.checkAccess() || x.answerPreflight() || x.redirect(t.Redirect, scheme) {
		return
	}
	host := x.rewrite(t.Rewrite)
	if x.chooseBackend() || x.findEndpoints() {
		return
	}
	if rw := t.BackendRewrite(x.be); rw != nil {
		host = x.rewrite(rw) // never beside the rule's own (compiled refuses both)
	}
	x.prepareOutRequest(host, scheme)
	defer x.releaseBody() // the body's buffer, however the request ends
	if x.receiveBody() {
		return
	}
	x.sendMirrors()
	x.forward()
}

// answer replies with status and msg (reply), for a step that ends the
// request; it returns true, as such a step does.
func (x *exchange) answer(status int, msg string) bool {
	reply(x.w, x.r, &x.h.p.stats, status, msg)
	return true
}

// refuseMalformed answers a request no listener may take (wellFormed).
func (x *exchange) refuseMalformed() bool {
	// The own HTTP/1.1 server's parser has checked an origin-form request
	// already; every other way in is checked here.
	if _, own := x.w.(*http1.ResponseWriter); !(own && x.r.URL == nil) && !wellFormed(x.r) {
		return x.answer(http.StatusBadRequest, "malformed request: the method must be a token, the target must not hold spaces or control characters, the host must be a host name or address")
	}
	return false
}

// refuseUnconfigured takes the compiled config the request is served from, and
// answers 503 while there is none.
func (x *exchange) refuseUnconfigured() bool {
	if x.cc = x.h.p.current.Load(); x.cc == nil {
		return x.answer(http.StatusServiceUnavailable, "no configuration loaded yet")
	}
	return false
}

// refuseNonPathTarget takes the request's normalised path and its query
// (reqpath.go), and answers a target that has no path (the authority or
// asterisk form) or a path no listener takes.
func (x *exchange) refuseNonPathTarget() bool {
	path, query, ok := splitTarget(x.r)
	if !ok {
		return x.answer(http.StatusBadRequest, "request target must be a path")
	}
	x.path, x.query = matcher.NormalizePath(path), query
	return x.refusePath(pathRefusal(x.path))
}

// refusePath answers 400 with why, a path refusal, when there is one.
func (x *exchange) refusePath(why string) bool {
	if why == "" {
		return false
	}
	x.h.p.stats.ClientBadPaths.Add(1)
	return x.answer(http.StatusBadRequest, why)
}

// readEncodedSlashes applies the listener's (else the proxy's) reading of
// encoded slashes and backslashes to the path: it refuses the request,
// reads them as '/', or keeps them (reqpath.go).
func (x *exchange) readEncodedSlashes(vh *vhost) bool {
	if !hasEncodedSlash(x.path) {
		return false
	}
	switch vh.encodedSlashes(x.h.p.slashes) {
	case slashesDecode:
		x.path = decodeSlashes(x.path)
		return x.refusePath(pathRefusal(x.path)) // "/%2F.;" is "/.;" now
	case slashesKeep:
		return false
	default:
		return x.refusePath("the request path holds an encoded slash or backslash (%2F, %5C or \\), which this listener refuses (encodedSlashes)")
	}
}

// chooseListener picks the listener that takes the request's host: on a
// socket of its own (a Gateway address, a listener port) among that
// socket's listeners, on a direct port among the port's, and behind the
// tunnel among every port's. None is no
// answer yet: the request then matches no rule.
func (x *exchange) chooseListener(scheme string) (vh *vhost, answered bool) {
	h, r, cc := x.h, x.r, x.cc
	if h.isGateway {
		if ge := cc.gateways[h.gateway]; ge != nil {
			vh = pickListener(ge.listeners, r.Host)
			// A connection made for one listener (its SNI) that asks for a
			// host of another, as HTTP/2 connection reuse may: the client
			// must open a connection for that host (RFC 9110 §15.5.20).
			if r.TLS != nil && r.TLS.ServerName != "" && !strings.EqualFold(httpsyntax.HostWithoutPort(r.Host), r.TLS.ServerName) &&
				vh != pickListener(ge.listeners, r.TLS.ServerName) {
				return nil, x.answer(http.StatusMisdirectedRequest, "this connection was made for another listener's host")
			}
		}
	} else if h.port != 0 {
		vh = pickListener(cc.ports[h.port], r.Host)
	} else {
		// Every port at once: the listeners of the client's scheme first,
		// then, for a host that has none of that scheme, the others.
		first, second := cc.origin[0], cc.origin[1]
		if scheme == "https" {
			first, second = second, first
		}
		if vh = pickListener(first, r.Host); vh == nil {
			vh = pickListener(second, r.Host)
		}
	}
	if vh != nil && vh.certRequired && !h.isGateway {
		// No handshake with the client happened here (behind the tunnel
		// TLS ended at Cloudflare's edge): fail closed.
		return nil, x.answer(http.StatusForbidden, "this listener requires a client certificate, checked only on its Gateway address")
	}
	return vh, false
}

// matchRule finds the rule of the listener's routes that takes the
// request, and notes it in the record; none is a 404.
func (x *exchange) matchRule(vh *vhost) (t *compiled.Target, answered bool) {
	r := x.r
	if vh != nil && vh.table != nil {
		t, _ = vh.table.Match(&matcher.Request{Host: r.Host, Path: x.path, Method: r.Method, Header: r.Header, RawQuery: x.query})
	}
	if t == nil {
		x.h.p.stats.NoRoute.Add(1)
		return nil, x.answer(http.StatusNotFound, "no route matches this request")
	}
	x.rule = t.Rule
	x.rec.rule = &x.cc.rules[t.Rule.ID]
	return t, false
}

// failClosed answers with the rule's fail status: the translation found
// it could not be served as written (its route's conditions say why).
func (x *exchange) failClosed() bool {
	if s := x.rule.FailStatus; s != 0 {
		return x.answer(s, "this route rule cannot be served; see the route's status conditions")
	}
	return false
}

// answerPreflight answers a CORS preflight for a rule with a CORS filter
// itself: the backend never sees it.
func (x *exchange) answerPreflight() bool {
	ru, r := x.rule, x.r
	if ru.CORS == nil || !isPreflight(r) {
		return false
	}
	hdr := x.w.Header()
	ru.CORS.Handle(r.Header, r.Method, hdr)
	ru.RespPlan.Apply(hdr)
	x.h.p.stats.Status(http.StatusNoContent)
	x.w.WriteHeader(http.StatusNoContent)
	return true
}

// redirect answers with the rule's RequestRedirect, if it has one.
func (x *exchange) redirect(rd *compiled.Redirect, scheme string) bool {
	if rd == nil {
		return false
	}
	ru, r := x.rule, x.r
	port := x.h.port
	if port == 0 { // behind the tunnel the client used the scheme's port
		port = 80
		if scheme == "https" {
			port = 443
		}
	}
	loc, code := rd.Location(scheme, r.Host, port, x.path, x.query)
	hdr := x.w.Header()
	hdr["Location"] = []string{loc}
	if ru.CORS != nil {
		ru.CORS.Handle(r.Header, r.Method, hdr)
	}
	ru.RespPlan.Apply(hdr)
	x.h.p.stats.Status(code)
	x.w.WriteHeader(code)
	return true
}

// rewrite applies the rule's URLRewrite, if it has one, to the path sent
// upstream, and returns the host sent upstream.
func (x *exchange) rewrite(rw *compiled.Rewrite) (host string) {
	host = x.r.Host
	if rw != nil {
		x.path, host = rw.Apply(x.path, host)
	}
	return host
}

// chooseBackend picks the backend the request goes to (pickBackend), and
// answers when the rule has none with weight or the backend answers a
// status of its own.
func (x *exchange) chooseBackend() bool {
	if !x.pickBackend(x.r) {
		return x.answer(http.StatusInternalServerError, "this route rule has no backend with weight")
	}
	if x.be.Status != 0 {
		return x.answer(x.be.Status, "this backend cannot be served; see the route's status conditions")
	}
	return false
}

// findEndpoints takes the chosen backend's cluster, and answers 503 when
// it has no endpoint ready.
func (x *exchange) findEndpoints() bool {
	x.slot = x.cc.clusters[x.be.Cluster]
	x.rec.slot = x.slot
	x.cs = x.slot.state.Load()
	if x.cs == nil || len(x.cs.addrs) == 0 {
		return x.answer(http.StatusServiceUnavailable, "no ready endpoints for this backend")
	}
	return false
}

// prepareOutRequest sets out the request as it will leave for the
// backend, and who the client is for the per-client connection caps.
func (x *exchange) prepareOutRequest(host, scheme string) {
	h, r := x.h, x.r
	x.client = clientIP(r, h.trusted)
	x.out = outRequest{
		method:        r.Method,
		target:        x.target(r),
		host:          host,
		in:            r.Header,
		plan:          x.be.ReqPlan,
		untrusted:     !h.trusted,
		peer:          peerIP(r.RemoteAddr),
		xfp:           scheme,
		contentLength: r.ContentLength,
	}
	if h.trusted {
		x.out.xffPrior = r.Header["X-Forwarded-For"]
	}
	if rw, own := x.w.(*http1.ResponseWriter); own {
		// The same fields as r.Header, which the proxy never changes, in
		// the client's order.
		x.out.fields = rw.RequestFields()
	}
	x.out.identityNames = x.cc.identityNames
	if a := x.rule.Access; a != nil {
		x.out.access, x.out.identity, x.out.token = &a.Headers, x.identity, x.token
	}
	x.out.cookie, x.out.cookieSet = accessCookies(r.Header["Cookie"], x.token)
}

// receiveBody takes what of the request body must arrive before a
// backend connection is taken (takeBody), which answers a body that fails
// to arrive.
func (x *exchange) receiveBody() bool {
	r := x.r
	x.hasBody = r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
	if !x.hasBody {
		x.out.contentLength = 0
		return false
	}
	return !x.takeBody(x.w, r)
}

// sendMirrors sends the copies the rule's and the backend's mirrors ask
// for; they are not waited for.
func (x *exchange) sendMirrors() {
	if len(x.rule.Mirrors) > 0 || len(x.be.Mirrors) > 0 {
		p := x.h.p
		p.mirror(x.rule.Mirrors, x, x.r)
		p.mirror(x.be.Mirrors, x, x.r)
	}
}

// forward sends the request to the backend and its response to the
// client: through a WebSocket tunnel, over HTTP/2, or on a pooled
// HTTP/1.1 connection.
func (x *exchange) forward() {
	w, r := x.w, x.r
	switch {
	case isWebSocket(r):
		x.forwardWebSocket(w, r)
	case x.cs.t.h2 != nil:
		x.forwardH2(w, r)
	default:
		x.forwardH1(w, r)
	}
}

// pickBackend picks the backend ref: the one a valid session names, or
// a weighted random choice.
func (x *exchange) pickBackend(r *http.Request) bool {
	ru := x.rule
	if ru.TotalWeight == 0 {
		return false
	}
	if ru.Session != nil && x.pinned(r) {
		return true
	}
	x.newSession = ru.Session != nil
	if len(ru.Backends) == 1 {
		x.be = &ru.Backends[0]
		return true
	}
	n := rand.IntN(ru.TotalWeight)
	for i := range ru.Backends {
		if n < ru.Backends[i].CumWeight {
			x.be = &ru.Backends[i]
			return true
		}
	}
	return false // unreachable: cumWeight of the last equals totalWeight
}

// pinned looks for a valid session token naming a backend of this rule
// with its endpoint still ready. A pin whose endpoint is gone is ignored,
// and a new session starts.
func (x *exchange) pinned(r *http.Request) bool {
	ru := x.rule
	tok := ru.Session.Token(r.Header)
	if tok == "" {
		return false
	}
	who, start, last, ok := x.cc.session.Decode(tok, ru.SessionScope)
	if !ok || !ru.Session.Valid(start, last, x.start) {
		return false
	}
	cluster, addr, ok := strings.Cut(who, " ")
	if !ok {
		return false
	}
	for i := range ru.Backends {
		b := &ru.Backends[i]
		if b.Cluster == compiled.NoCluster || b.CumWeight == 0 || (i > 0 && b.CumWeight == ru.Backends[i-1].CumWeight) {
			continue
		}
		slot := x.cc.clusters[b.Cluster]
		if slot.name != cluster {
			continue
		}
		cs := slot.state.Load()
		if cs == nil {
			continue
		}
		if ep := cs.find(addr); ep != nil {
			x.be, x.ep = b, ep
			x.sessionStart = start
			return true
		}
	}
	return false
}
