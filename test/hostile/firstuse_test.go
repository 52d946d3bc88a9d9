package hostile

// firstuse_test.go: many first requests at once, to rules and clusters
// that have never served one.
//
// A cluster endpoint's HTTP/1.1 pool (dataplane's endpoint.pool) and the
// counters of a rule and of a cluster (observe.RuleStats and
// observe.UpstreamStats: Respond, Result, Head) are not made when a config
// is loaded but at the first request that needs them. Making things
// lazily under concurrency is where it goes wrong: two first requests
// each make their own pool or counters and one set is lost (with the
// connections or the counts in it), or one request uses what the other
// has not finished making, and an answer goes to the wrong client or a
// count goes nowhere.
//
// So each round loads a config with clusters that have never served a
// request (each with backends of its own, on new addresses, so their
// endpoints are new too) and then, on every way in at once, 64 clients
// per proxy send their first requests together: their connections to
// the proxy are open before, and the clients start on one signal (with
// more Ps than CPUs, and the garbage collector always at work, so that a
// goroutine can stop anywhere). Some rounds hold every answer at the
// backends until all requests have arrived, so that the counters, which
// are made as answers come back, are made by all of them at once. Some
// rounds change the config in the middle of the burst (endpoints alone,
// rules edited in place, or a whole recompile): half the clients'
// requests are held at the backends, on the first config, while the
// change is applied; the other half go out on the new one; then all are
// answered together. Requests in flight finish on the config they
// started with.
//
// What must hold:
//
//   - every client gets exactly its own answer: status 200 from a backend
//     of the cluster its path routes to, carrying its nonce and its path;
//     no request fails;
//   - across a change, the requests sent before it (held at the backends
//     while it is applied) were routed by the first config and finish on
//     it, and those sent after it by the new one: they reach only the
//     endpoints it lists, and carry the header its edited rules set;
//   - each backend saw each request once;
//   - every connection a backend has open is one the proxies count in
//     tunnelgate_upstream_connections (a pool made twice and one copy
//     lost would leave connections nobody accounts for, or closes);
//   - afterwards each proxy's /metrics counts exactly the requests it was
//     sent, per rule (route_requests_total, all 2xx, and the latency
//     histogram's count) and per cluster (upstream_requests_total, all
//     2xx, and the response-head histogram's count).

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

const (
	// firstUseClients send their first requests at once, per proxy and
	// round, spread over the proxy's ways in and the round's clusters.
	firstUseClients = 64
	// firstUseClusters are the round's new clusters, one rule each.
	firstUseClusters = 4
	// firstUseArrival bounds the wait for held requests to reach the
	// backends; firstUseHold bounds how long a backend holds one (the
	// test releases them well before, unless it is failing).
	firstUseArrival = 10 * time.Second
	firstUseHold    = 15 * time.Second
	// firstUseSettle bounds the wait for the counts to reach what was
	// sent: a rule's response is counted after its last byte is written,
	// so a client can have it before it is counted.
	firstUseSettle = 5 * time.Second
	// firstUseRepeats is how many times every kind of round is run: each
	// round makes the lazy things again, and a lost race shows in some
	// rounds only. (Counters made with a Store in place of the
	// CompareAndSwap lost counts in about 4 rounds in 10; a pool made
	// that way lost connections in 1 round in 5 to 8.)
	firstUseRepeats = 3
	// firstUseProcs is the GOMAXPROCS the test runs with, at least, and
	// firstUseGCPercent its GOGC.
	firstUseProcs     = 32
	firstUseGCPercent = 1
)

// fuKind is one kind of round.
type fuKind struct {
	name string
	// hold holds every answer at the backends until every request of the
	// round has arrived (or firstUseArrival has passed).
	hold bool
	// change, when set, is the config change made in the middle of the
	// burst, and how the proxies must apply it: AppliedClusters changes
	// the clusters' endpoints; AppliedRoutes edits the rules in place as
	// well (they set X-Edited on the requests they route); AppliedAll
	// rotates the session keys too, so the config is compiled whole.
	// Every round with a change holds its answers.
	change proxycfg.Applied
}

var fuKinds = []fuKind{
	{name: "fresh config, answered at once"},
	{name: "fresh config, answers held until all arrived", hold: true},
	{name: "endpoints changed mid-burst", hold: true, change: proxycfg.AppliedClusters},
	{name: "rules edited in place mid-burst", hold: true, change: proxycfg.AppliedRoutes},
	{name: "config compiled whole mid-burst", hold: true, change: proxycfg.AppliedAll},
}

// TestFirstUseAnswersEveryClientItsOwnAndCountsEveryRequest: concurrent
// first requests to clusters and rules that have served none each get
// their own backend's answer, none fails, and every one is counted once,
// per rule and per cluster, round after round of fresh configs, and with
// the config changed in the middle of a burst.
func TestFirstUseAnswersEveryClientItsOwnAndCountsEveryRequest(t *testing.T) {
	// More Ps than CPUs, so that the operating system preempts the
	// proxy's goroutines at any instruction, inside a lazy make too, as
	// a machine of many cores runs them side by side; and a collection
	// running all along, so that the allocation a lazy make is takes its
	// slow path and its window stays open. Both are set back after.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(firstUseProcs, runtime.GOMAXPROCS(0))))
	defer debug.SetGCPercent(debug.SetGCPercent(firstUseGCPercent))
	warmGate := newFUGate()
	defer warmGate.release()
	warm := newFUBackend(t, "warm", warmGate)
	// Per-rule latency and per-cluster connections are served at the
	// route level of detail only; their lazily made counters are what
	// this test races.
	e := newEnv(t, warm.addr, withOptions(func(o *dataplane.Options) { o.MetricsDetail = observe.DetailRoute }))
	f := newFirstUse(t, e)

	// Open the clients' connections to the proxies, as many on each way
	// in as a burst has clients there: every client's request is held
	// until all have arrived, so none reuses another's connection.
	shots := f.shots(func(i int) (string, *fuCluster) {
		return "/warm/", &fuCluster{name: "backend", allowed: map[string]bool{"warm": true}}
	})
	done := launch(shots)
	warmGate.waitFor(t, len(shots))
	warmGate.release()
	done()
	if reportShots(t, "warming up", shots) > 0 {
		t.Fatal("the harness's own route does not answer every client its own")
	}

	for range firstUseRepeats {
		for _, kind := range fuKinds {
			t.Run(fmt.Sprintf("round %d, %s", f.rounds+1, kind.name), func(t *testing.T) { f.round(t, kind) })
		}
	}
}

// firstUse is the test's view of an env: its ways in grouped by the proxy
// that serves them.
type firstUse struct {
	e      *env
	groups []fuGroup
	// portHTTP and portHTTPS are the listener-ports proxy's ports, which
	// its config must keep.
	portHTTP, portHTTPS int
	rounds              int
	// sessionKeys are the configs' session keys: a round that compiles
	// the config whole rotates them, and they stay rotated, so that the
	// next round's fresh config differs from the served one only in its
	// routes and clusters.
	sessionKeys [][]byte
}

// fuGroup is one proxy: its admin listener and the paths it serves.
type fuGroup struct {
	admin string
	proxy *dataplane.Proxy
	paths []path
}

func newFirstUse(t *testing.T, e *env) *firstUse {
	f := &firstUse{e: e, sessionKeys: e.cfg.SessionKeys}
	for _, p := range e.paths {
		admin := e.adminOf(p)
		i := slices.IndexFunc(f.groups, func(g fuGroup) bool { return g.admin == admin })
		if i < 0 {
			f.groups = append(f.groups, fuGroup{admin: admin, proxy: e.proxy(p)})
			i = len(f.groups) - 1
		}
		f.groups[i].paths = append(f.groups[i].paths, p)
		port := func() int {
			_, s, err := net.SplitHostPort(p.addr)
			n, err2 := strconv.Atoi(s)
			if err != nil || err2 != nil {
				t.Fatalf("%s: address %q", p.name, p.addr)
			}
			return n
		}
		switch p.name {
		case "ports/h1":
			f.portHTTP = port()
		case "ports-tls/h1":
			f.portHTTPS = port()
		}
	}
	if len(f.groups) != 3 || f.portHTTP == 0 || f.portHTTPS == 0 {
		t.Fatalf("harness: %d proxies, ports %d and %d: want 3 proxies and both listener ports", len(f.groups), f.portHTTP, f.portHTTPS)
	}
	return f
}

// fuCluster is one of a round's clusters, with its rule.
type fuCluster struct {
	name   string // cluster name, also the rule's name
	prefix string // the rule's path prefix
	// backends are all the cluster's backends in the round; first and
	// after are those the config lists before and after a change
	// mid-burst (without a change, first).
	backends     []*fuBackend
	first, after []*fuBackend
	// allowed names every backend that may answer the cluster's requests.
	allowed map[string]bool
}

// names are the names of backends, as a set.
func names(backends []*fuBackend) map[string]bool {
	m := map[string]bool{}
	for _, b := range backends {
		m[b.name] = true
	}
	return m
}

// round loads a config with firstUseClusters clusters that never served a
// request, sends the burst, and checks the answers and the counts.
func (f *firstUse) round(t *testing.T, kind fuKind) {
	f.rounds++
	n := f.rounds
	var gate *fuGate
	if kind.hold {
		gate = newFUGate()
		defer gate.release()
	}
	route := fmt.Sprintf("fu-%d", n)
	var clusters []*fuCluster
	for k := range firstUseClusters {
		cl := &fuCluster{
			name:    fmt.Sprintf("fu-%d-%d", n, k),
			prefix:  fmt.Sprintf("/fu/%d/%d/", n, k),
			allowed: map[string]bool{},
		}
		count := 2
		if kind.change != 0 {
			count = 3
		}
		for j := range count {
			b := newFUBackend(t, fmt.Sprintf("%s-b%d", cl.name, j), gate)
			cl.backends = append(cl.backends, b)
			cl.allowed[b.name] = true
		}
		// Before a change: b0 and b1; after it: b1 and b2, so that b0's
		// endpoint is swept with requests on it and b2's pool is made
		// after the change.
		cl.first, cl.after = cl.backends[:2], cl.backends[len(cl.backends)-2:]
		clusters = append(clusters, cl)
	}

	// The round's route and clusters are new. The first round only adds
	// them, and the config is patched in; every later one replaces all
	// the last round's clusters, which would leave more than a quarter of
	// the proxy's cluster slots empty, so it is compiled whole.
	fresh := proxycfg.AppliedAll
	if n == 1 {
		fresh = proxycfg.AppliedRoutes
	}
	f.apply(t, f.config(n, route, clusters, false, false), fresh)
	shots := f.shots(func(i int) (string, *fuCluster) {
		cl := clusters[i%firstUseClusters]
		return cl.prefix, cl
	})

	switch {
	case kind.change != 0:
		edit := kind.change != proxycfg.AppliedClusters
		var wave1, wave2 []*fuShot
		for i, s := range shots {
			if i/firstUseClusters%2 == 0 { // each cluster has shots in both waves
				s.allowed = names(s.cl.first)
				wave1 = append(wave1, s)
			} else {
				s.allowed, s.edited = names(s.cl.after), edit
				wave2 = append(wave2, s)
			}
		}
		done1 := launch(wave1)
		gate.waitFor(t, len(wave1))
		if kind.change == proxycfg.AppliedAll {
			f.sessionKeys = append([][]byte{[]byte(fmt.Sprintf("first-use session key %04d", n))}, f.sessionKeys...)
		}
		f.apply(t, f.config(n, route, clusters, true, edit), kind.change)
		// Wave 1 routed by the first config and sent, held at the
		// backends; wave 2 is routed by the new one.
		done2 := launch(wave2)
		gate.waitFor(t, len(shots))
		gate.release()
		done1()
		done2()
	case kind.hold:
		done := launch(shots)
		gate.waitFor(t, len(shots))
		gate.release()
		done()
	default:
		launch(shots)()
	}

	if bad := reportShots(t, route, shots); bad > 0 {
		t.Errorf("%d of %d first requests did not get their own answer", bad, len(shots))
	}
	f.checkBackends(t, clusters, shots)
	f.checkMetrics(t, route, clusters, shots)
	f.checkConns(t, clusters, kind.change != 0)
}

// config is e's config (its route to the warm-up backend) with route
// routing each cluster's prefix to it. after gives the clusters their
// endpoints after the change; edit has the rules set X-Edited: 1. The
// config has f's session keys.
func (f *firstUse) config(n int, route string, clusters []*fuCluster, after, edit bool) *proxycfg.Config {
	base := f.e.cfg
	r := proxycfg.Route{
		Kind: proxycfg.KindHTTP, Namespace: "default", Name: route,
		Created:   time.Date(2026, 2, 1, 0, 0, 0, n, time.UTC),
		Listeners: slices.Clone(base.Routes[0].Listeners),
	}
	var cls []proxycfg.Cluster
	for _, cl := range clusters {
		rule := proxycfg.Rule{
			Name:     cl.name,
			Matches:  []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: cl.prefix}}},
			Backends: []proxycfg.BackendRef{{Cluster: cl.name, Weight: 1}},
		}
		if edit {
			rule.Filters = []proxycfg.Filter{{Type: proxycfg.FilterRequestHeaderModifier,
				RequestHeaderModifier: &proxycfg.HeaderModifier{Set: []proxycfg.Header{{Name: "X-Edited", Value: "1"}}}}}
		}
		r.Rules = append(r.Rules, rule)
		eps := cl.first
		if after {
			eps = cl.after
		}
		c := proxycfg.Cluster{Name: cl.name, Protocol: proxycfg.ProtoHTTP1}
		for _, b := range eps {
			c.Endpoints = append(c.Endpoints, proxycfg.Endpoint{Address: b.addr})
		}
		cls = append(cls, c)
	}
	cfg := *base
	cfg.Version = fmt.Sprintf("first-use-%d", n)
	if after {
		cfg.Version += "-changed"
	}
	cfg.Routes = append(slices.Clone(base.Routes), r)
	cfg.SessionKeys = f.sessionKeys
	cfg.Clusters = append(slices.Clone(base.Clusters), cls...)
	return &cfg
}

// apply gives cfg to every proxy (the listener-ports one with its own
// listeners) and fails unless each applied it as want says.
func (f *firstUse) apply(t *testing.T, cfg *proxycfg.Config, want proxycfg.Applied) {
	t.Helper()
	for _, g := range f.groups {
		c := cfg
		if g.proxy == f.e.pPorts {
			c = portsConfig(cfg, f.portHTTP, f.portHTTPS)
		}
		got, err := g.proxy.Apply(c)
		if err != nil {
			t.Fatalf("proxy %s: Apply %s: %v", g.admin, cfg.Version, err)
		}
		if got != want {
			t.Errorf("proxy %s: config %s applied as %v, want %v: the round no longer tests what it says", g.admin, cfg.Version, got, want)
		}
	}
}

// fuShot is one client's request and what came back.
type fuShot struct {
	group  int // index in firstUse.groups
	p      path
	cl     *fuCluster
	target string // path, the nonce its last segment
	nonce  string
	// allowed, when set, narrows cl.allowed to the backends of the
	// config the request was sent under; edited says the rules of that
	// config set X-Edited.
	allowed map[string]bool
	edited  bool

	status int
	header http.Header
	body   string
	err    error
}

// shots makes firstUseClients requests per proxy, the i-th to the target
// pick gives it (the cluster i mod firstUseClusters in a round), spread
// over the proxy's paths so that each path takes every cluster in turn.
func (f *firstUse) shots(pick func(i int) (prefix string, cl *fuCluster)) []*fuShot {
	var out []*fuShot
	for gi, g := range f.groups {
		n := len(g.paths)
		for i := range firstUseClients {
			prefix, cl := pick(i)
			nonce := fmt.Sprintf("%s-%d-%d", rand.Text(), gi, i)
			p := g.paths[(i+i/firstUseClusters)%n]
			out = append(out, &fuShot{group: gi, p: p, cl: cl, target: prefix + nonce, nonce: nonce})
		}
	}
	return out
}

// launch sends every shot at once, each from a goroutine of its own that
// waits for one start signal; done returns when all have their answer.
func launch(shots []*fuShot) (done func()) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, s := range shots {
		wg.Go(func() {
			<-start
			s.send()
		})
	}
	close(start)
	return wg.Wait
}

// send makes s's request and reads the whole answer.
func (s *fuShot) send() {
	ctx, cancel := context.WithTimeout(context.Background(), firstUseHold+askTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.p.url(s.target), nil)
	if err != nil {
		s.err = err
		return
	}
	req.Header.Set("X-Nonce", s.nonce)
	res, err := s.p.client.Do(req)
	if err != nil {
		s.err = err
		return
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	s.status, s.header, s.body, s.err = res.StatusCode, res.Header, string(b), err
}

// wrong says what is wrong with s's answer; "" when it is its own.
func (s *fuShot) wrong() string {
	at := s.p.name + " GET " + s.target
	if s.status == 0 {
		return fmt.Sprintf("%s: no answer: %v", at, s.err)
	}
	if s.err != nil {
		return fmt.Sprintf("%s: %d, body broke off: %v", at, s.status, s.err)
	}
	if s.status != http.StatusOK {
		return fmt.Sprintf("%s: status %d (body %q), want 200", at, s.status, clip(s.body))
	}
	nonces, backends := s.header.Values("X-Nonce"), s.header.Values("X-Backend")
	if len(nonces) != 1 || nonces[0] != s.nonce {
		return fmt.Sprintf("%s: got the answer for nonce %q (backend %q, body %q)", at, nonces, backends, clip(s.body))
	}
	if len(backends) != 1 || !s.cl.allowed[backends[0]] {
		return fmt.Sprintf("%s: answered by backend %q, not one of cluster %s's", at, backends, s.cl.name)
	}
	be := backends[0]
	if got := s.header.Get("X-Path"); got != s.target {
		return fmt.Sprintf("%s: backend %s saw path %q", at, be, got)
	}
	if want := fuBody(be, s.nonce, s.target); s.body != want {
		return fmt.Sprintf("%s: body %q, want %q", at, clip(s.body), want)
	}
	if s.allowed != nil && !s.allowed[be] {
		return fmt.Sprintf("%s: answered by backend %s, which the config it was sent under does not list", at, be)
	}
	if got := s.header.Get("X-Edited") == "1"; got != s.edited {
		return fmt.Sprintf("%s: X-Edited %q, want it set %v: routed by the other config than the one it was sent under", at, s.header.Get("X-Edited"), s.edited)
	}
	return ""
}

// reportShots fails t for the first few shots without their own answer,
// and returns how many there were.
func reportShots(t *testing.T, what string, shots []*fuShot) int {
	t.Helper()
	bad := 0
	for _, s := range shots {
		if msg := s.wrong(); msg != "" {
			if bad++; bad <= 8 {
				t.Errorf("%s: %s", what, msg)
			}
		}
	}
	return bad
}

// checkBackends fails unless each cluster's backends saw exactly the
// requests sent to it, on every proxy together.
func (f *firstUse) checkBackends(t *testing.T, clusters []*fuCluster, shots []*fuShot) {
	t.Helper()
	for _, cl := range clusters {
		sent := 0
		for _, s := range shots {
			if s.cl == cl {
				sent++
			}
		}
		var seen int64
		var each []string
		for _, b := range cl.backends {
			seen += b.hits.Load()
			each = append(each, fmt.Sprintf("%s %d", b.name, b.hits.Load()))
		}
		if seen != int64(sent) {
			t.Errorf("cluster %s: its backends saw %d requests (%s), %d were sent", cl.name, seen, strings.Join(each, ", "), sent)
		} else {
			t.Logf("cluster %s: %s", cl.name, strings.Join(each, ", "))
		}
	}
}

// checkMetrics fails unless each proxy's /metrics counts, for each rule
// and cluster of the round, exactly the requests that proxy was sent:
// all 2xx, and as many in the latency histograms.
func (f *firstUse) checkMetrics(t *testing.T, route string, clusters []*fuCluster, shots []*fuShot) {
	t.Helper()
	for gi, g := range f.groups {
		want := map[string]float64{}
		for _, cl := range clusters {
			sent := 0
			for _, s := range shots {
				if s.group == gi && s.cl == cl {
					sent++
				}
			}
			ruleLabels := fmt.Sprintf(`route="default/%s",rule="%s"`, route, cl.name)
			for i, class := range observe.StatusClasses {
				v := 0.0
				if i == observe.StatusClass(http.StatusOK) {
					v = float64(sent)
				}
				want[fmt.Sprintf(`tunnelgate_route_requests_total{class="%s",%s}`, class, ruleLabels)] = v
			}
			want[`tunnelgate_route_request_duration_seconds_count{`+ruleLabels+`}`] = float64(sent)
			for _, result := range observe.UpstreamResults {
				v := 0.0
				if result == "2xx" {
					v = float64(sent)
				}
				want[fmt.Sprintf(`tunnelgate_upstream_requests_total{cluster="%s",result="%s"}`, cl.name, result)] = v
			}
			want[fmt.Sprintf(`tunnelgate_upstream_response_seconds_count{cluster="%s"}`, cl.name)] = float64(sent)
		}
		// Counts come after the answers: wait (boundedly) for them to
		// reach what was sent, then hold them to it exactly.
		var got map[string]float64
		for deadline := time.Now().Add(firstUseSettle); ; time.Sleep(10 * time.Millisecond) {
			got = scrapeMetrics(t, g.admin)
			if fuMatches(got, want) || time.Now().After(deadline) {
				break
			}
		}
		var bad []string
		for series, v := range want {
			if have, ok := got[series]; !ok && v != 0 {
				bad = append(bad, fmt.Sprintf("%s missing, want %v", series, v))
			} else if ok && have != v {
				bad = append(bad, fmt.Sprintf("%s = %v, want %v", series, have, v))
			}
		}
		slices.Sort(bad)
		for _, b := range bad {
			t.Errorf("proxy %s (%s…): %s", g.admin, g.paths[0].name, b)
		}
	}
}

// checkConns fails unless, for each cluster, the connections its
// backends have open are the ones the proxies count for it in
// tunnelgate_upstream_connections, and a backend the change removed has
// none left open once its requests are done.
func (f *firstUse) checkConns(t *testing.T, clusters []*fuCluster, changed bool) {
	t.Helper()
	type tally struct{ counted, open, removedOpen int64 }
	measure := func() map[string]tally {
		out := map[string]tally{}
		var scrapes []map[string]float64
		for _, g := range f.groups {
			scrapes = append(scrapes, scrapeMetrics(t, g.admin))
		}
		for _, cl := range clusters {
			var n tally
			for _, s := range scrapes {
				for _, state := range []string{"idle", "active"} {
					n.counted += int64(s[fmt.Sprintf(`tunnelgate_upstream_connections{cluster="%s",state="%s"}`, cl.name, state)])
				}
			}
			current := cl.first
			if changed {
				current = cl.after
			}
			for _, b := range cl.backends {
				if slices.Contains(current, b) {
					n.open += b.open.Load()
				} else {
					n.removedOpen += b.open.Load()
				}
			}
			out[cl.name] = n
		}
		return out
	}
	// Connections close, and are counted out, a moment after the last
	// answer: wait (boundedly) for the books to balance.
	var got map[string]tally
	for deadline := time.Now().Add(firstUseSettle); ; time.Sleep(10 * time.Millisecond) {
		got = measure()
		balanced := true
		for _, n := range got {
			balanced = balanced && n.counted == n.open && n.removedOpen == 0
		}
		if balanced || time.Now().After(deadline) {
			break
		}
	}
	for _, cl := range clusters {
		n := got[cl.name]
		if n.counted != n.open {
			t.Errorf("cluster %s: its backends have %d connections open from the proxies, the proxies count %d", cl.name, n.open, n.counted)
		}
		if n.removedOpen != 0 {
			t.Errorf("cluster %s: %d connections still open to the backend the change removed", cl.name, n.removedOpen)
		}
	}
}

// fuMatches reports whether got holds want. A counter at zero may be
// left out of a scrape (a class or result not seen yet): missing reads as
// zero.
func fuMatches(got, want map[string]float64) bool {
	for series, v := range want {
		if g, ok := got[series]; (ok || v != 0) && g != v {
			return false
		}
	}
	return true
}

// ---- Backends ----

// fuBackend answers every request with its name, the request's X-Nonce,
// its path and its X-Edited, in fields and in the body.
type fuBackend struct {
	name string
	addr string
	gate *fuGate // nil: answer at once
	hits atomic.Int64
	open atomic.Int64 // connections open from the proxies
}

// newFUBackend starts a backend on loopback, held by gate (nil: not
// held). It stops when the test ends.
func newFUBackend(t testing.TB, name string, gate *fuGate) *fuBackend {
	b := &fuBackend{name: name, gate: gate}
	srv := httptest.NewUnstartedServer(b)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			b.open.Add(1)
		case http.StateClosed, http.StateHijacked:
			b.open.Add(-1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	b.addr = srv.Listener.Addr().String()
	return b
}

func (b *fuBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.hits.Add(1)
	if b.gate != nil {
		b.gate.hold()
	}
	nonce := r.Header.Get("X-Nonce")
	h := w.Header()
	h.Set("X-Backend", b.name)
	h.Set("X-Nonce", nonce)
	h.Set("X-Path", r.URL.Path)
	if v := r.Header.Get("X-Edited"); v != "" {
		h.Set("X-Edited", v)
	}
	io.WriteString(w, fuBody(b.name, nonce, r.URL.Path))
}

// fuBody is the body backend answers to nonce and path with.
func fuBody(backend, nonce, path string) string {
	return "backend=" + backend + " nonce=" + nonce + " path=" + path + "\n"
}

// fuGate holds the requests arriving at its backends until it is
// released (or firstUseHold passes), and counts them.
type fuGate struct {
	arrived atomic.Int64
	open    chan struct{}
	once    sync.Once
}

func newFUGate() *fuGate { return &fuGate{open: make(chan struct{})} }

func (g *fuGate) hold() {
	g.arrived.Add(1)
	t := time.NewTimer(firstUseHold)
	defer t.Stop()
	select {
	case <-g.open:
	case <-t.C:
	}
}

func (g *fuGate) release() { g.once.Do(func() { close(g.open) }) }

// waitFor waits until n requests have arrived, or firstUseArrival has
// passed: then some request never reached a backend, which the checks of
// the answers report.
func (g *fuGate) waitFor(t testing.TB, n int) {
	t.Helper()
	for deadline := time.Now().Add(firstUseArrival); g.arrived.Load() < int64(n); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Logf("only %d of %d requests reached the backends within %v", g.arrived.Load(), n, firstUseArrival)
			return
		}
	}
}
