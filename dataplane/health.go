// This file answers load balancer monitors' health requests.

package dataplane

import (
	"crypto/subtle"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/matcher"
)

// A Cloudflare load balancer's monitor probes each origin of a pool (a
// cluster's tunnel) with a request for the load balanced hostname, which
// cloudflared passes to the origin listener like any other. A listener
// with a HealthCheck (proxycfg.Listener.HealthCheck) answers such a
// request itself, when it carries the check's path and, in the check's
// header, its token: 200 "healthy" while every rule serving the request's
// host can send to a backend, 503 "unhealthy" otherwise. So the load
// balancer fails over when a cluster's backends are down, not only when
// its tunnel is.
//
// What is answered, and to whom:
//
//   - Only the origin listeners answer (the handlers that trust their
//     peer: cloudflared's origins, plain and TLS, unless
//     ServeOptions.UntrustedOrigin): monitors reach a pool's origins
//     through the tunnel. Gateway addresses,
//     listener ports and the plain listener route the request as any
//     other: there anyone on the network could try tokens, and none of
//     them is a load balancer's origin.
//   - The path is compared with the request's normalised path; the query
//     is ignored. A request with the path but without the token (missing,
//     or another value; compared in constant time) is routed as any
//     other, so an application's own path of that name keeps working and
//     nothing tells the token was wrong.
//   - GET and HEAD are answered; another method with the token gets 405,
//     counted nowhere (it asks nothing of the routes).
//   - The answer says healthy or unhealthy and nothing else: not which
//     route or endpoint failed. It is not cached (Cache-Control:
//     no-store).
//   - It is not user traffic: counted in tunnelgate_health_checks_total
//     under the listener whose check it carried, and in no listener's or
//     rule's latency or requests, no response count, no trace and no
//     access log line (tunnelgate_requests_total, which counts every
//     request as it arrives, counts it).
//
// What healthy means (hostReady): every rule a request for the host could
// match on that listener, whatever its path (matcher.Table.Serving: the
// rules of the host's exact, wildcard and catch-all hostnames), is ready:
// it redirects (it needs no backend), or one of its backends with weight
// and no status of its own has a cluster with an endpoint the proxy
// would send to. An endpoint is one while it is listed in the config and
// has not refused a connection in the last few seconds (endpoint.down):
// a cluster whose endpoints are all gone, or all refusing, is not ready.
// A rule that fails closed (FailStatus), or whose backends are all
// without weight or answer a status, is not ready. A host no rule serves
// is unhealthy.
//
// It is computed at each health request from the compiled config the
// request loaded, not kept per host: endpoint state changes between
// configs (a connection refused), which a list made at compile time
// would not see, and a walk over one host's rules, once per monitor
// interval (60 s by default), costs less than keeping such lists fresh
// across patches and endpoint updates. A listener without a HealthCheck
// pays one nil check per request.

// healthCheck is a listener's HealthCheck, compiled.
type healthCheck struct {
	path   string
	header string // canonical, as the request's header map keys it
	token  []byte
	// stats are the listener's, where its health answers are counted.
	stats *observe.ListenerStats
}

// newHealthCheck compiles hc, which checkHealthCheck passed, for a
// listener counted in stats.
func newHealthCheck(hc *proxycfg.HealthCheck, stats *observe.ListenerStats) *healthCheck {
	return &healthCheck{path: hc.Path, header: http.CanonicalHeaderKey(hc.Header), token: []byte(hc.Token), stats: stats}
}

// checkHealthCheck reports what is wrong with a listener's health check,
// naming the field; nil when nothing is.
func checkHealthCheck(l *proxycfg.Listener) error {
	hc := l.HealthCheck
	var errs []error
	if l.Protocol != proxycfg.ListenerHTTP && l.Protocol != proxycfg.ListenerHTTPS {
		errs = append(errs, errors.New("healthCheck: only HTTP and HTTPS listeners answer health requests"))
	}
	switch p := hc.Path; {
	case !strings.HasPrefix(p, "/"):
		errs = append(errs, errors.New("healthCheck.path: must be an absolute path, starting with \"/\""))
	case !httpsyntax.ValidTarget(p) || strings.ContainsAny(p, "?#"):
		errs = append(errs, errors.New("healthCheck.path: must be a path alone, without spaces, control characters, query or fragment"))
	case matcher.NormalizePath(p) != p || pathRefusal(p) != "" || hasEncodedSlash(p):
		errs = append(errs, errors.New("healthCheck.path: must be in normal form (no dot segments, repeated slashes, encoded slashes or needless escapes), as requests' paths are compared"))
	}
	if !httpsyntax.IsToken(hc.Header) {
		errs = append(errs, errors.New("healthCheck.header: must be a header field name (a token, RFC 9110 §5.1)"))
	} else if h := http.CanonicalHeaderKey(hc.Header); h == "Host" || httpsyntax.HopByHop(h) {
		errs = append(errs, errors.New("healthCheck.header: must not be Host or a hop-by-hop field, which do not reach the proxy as sent"))
	}
	switch t := hc.Token; {
	case len(t) < proxycfg.MinHealthTokenLen:
		errs = append(errs, errors.New("healthCheck.token: must be at least 16 bytes"))
	case !httpsyntax.ValidFieldValue(t) || httpsyntax.TrimOWS(t) != t:
		errs = append(errs, errors.New("healthCheck.token: must be a header field value without control characters or leading or trailing whitespace"))
	}
	return errors.Join(errs...)
}

// healthCheckOf returns the health check of the vhost's listeners that
// the request carries (its path and token), or nil.
func (v *vhost) healthCheckOf(path string, hdr http.Header) *healthCheck {
	for _, hc := range v.health {
		if path != hc.path {
			continue
		}
		for _, val := range hdr[hc.header] {
			if subtle.ConstantTimeCompare([]byte(val), hc.token) == 1 {
				return hc
			}
		}
	}
	return nil
}

// Health answers' headers and bodies.
var (
	noStore      = []string{"no-store"}
	allowGetHead = []string{"GET, HEAD"}
)

// answerHealth answers a load balancer monitor's health request on the
// listener vh, if the request is one and this handler takes them.
func (x *exchange) answerHealth(vh *vhost) bool {
	if !x.h.trusted {
		return false
	}
	hc := vh.healthCheckOf(x.path, x.r.Header)
	if hc == nil {
		return false
	}
	// Counted apart: finish leaves the record out of every listener's
	// and rule's metrics, traces and the access log.
	x.rec.monitor = true
	w, r := x.w, x.r
	hdr := w.Header()
	hdr["Content-Type"] = textPlain
	hdr["X-Content-Type-Options"] = nosniff
	hdr["Cache-Control"] = noStore
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr["Allow"] = allowGetHead
		w.WriteHeader(http.StatusMethodNotAllowed)
		io.WriteString(w, "method not allowed\n")
		return true
	}
	ready := x.cc.hostReady(vh, r.Host, time.Now().UnixNano())
	hc.stats.HealthCheck(ready)
	status, body := http.StatusOK, "healthy\n"
	if !ready {
		status, body = http.StatusServiceUnavailable, "unhealthy\n"
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		io.WriteString(w, body)
	}
	return true
}

// hostReady reports whether every rule of the vhost that a request for
// host could match is ready (ruleReady) at now (unix nanoseconds), and
// there is one.
func (cc *compiledConfig) hostReady(vh *vhost, host string, now int64) bool {
	if vh.table == nil {
		return false
	}
	any := false
	for t := range vh.table.Serving(host) {
		any = true
		if !cc.targetReady(t, now) {
			return false
		}
	}
	return any
}

// targetReady reports whether a request that matched t could be
// answered by the rule: by a redirect, or by a backend with weight whose
// cluster has an endpoint the proxy would send to.
func (cc *compiledConfig) targetReady(t *compiled.Target, now int64) bool {
	if t.Redirect != nil {
		return true
	}
	ru := t.Rule
	if ru.FailStatus != 0 {
		return false
	}
	prev := 0
	for i := range ru.Backends {
		b := &ru.Backends[i]
		weight := b.CumWeight - prev
		prev = b.CumWeight
		if weight > 0 && b.Status == 0 && b.Cluster != compiled.NoCluster && clusterReady(cc.clusters[b.Cluster], now) {
			return true
		}
	}
	return false
}

// clusterReady reports whether the cluster has an endpoint the proxy
// would send to at now: listed in its config, and not down (refused a
// connection in the last downFor). It makes no endpoint: those not made
// yet have not been tried, so are not down.
func clusterReady(s *clusterSlot, now int64) bool {
	if s == nil {
		return false
	}
	cs := s.state.Load()
	if cs == nil || len(cs.addrs) == 0 {
		return false
	}
	eps := cs.madeEndpoints()
	if eps == nil {
		return true
	}
	for _, e := range eps {
		if !e.down(now) {
			return true
		}
	}
	return false
}

// sameHealthChecks reports whether two vhosts' health checks are the
// same, for a vhost kept from an earlier config (views.go).
func sameHealthChecks(a, b []*healthCheck) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].path != b[i].path || a[i].header != b[i].header || subtle.ConstantTimeCompare(a[i].token, b[i].token) != 1 || a[i].stats != b[i].stats {
			return false
		}
	}
	return true
}
