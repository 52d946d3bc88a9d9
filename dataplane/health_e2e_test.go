package dataplane

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// quiet is a log for proxies whose refusals the tests expect.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// The health check the tests' listener carries.
var testHealth = proxycfg.HealthCheck{Path: "/.tunnelgate/health", Header: "X-Monitor-Token", Token: "0123456789abcdef-monitor"}

// healthConfig is a listener with a health check serving: shop (a live
// cluster), down (a cluster without endpoints), redir (a redirect and no
// backend) and mixed (one rule live, one on the cluster without
// endpoints), each on a host of its own.
func healthConfig(live string) *proxycfg.Config {
	onHost := func(r proxycfg.Route, host string) proxycfg.Route { r.Hostnames = []string{host}; return r }
	redirect := proxycfg.Rule{Matches: everyPath(), Filters: []proxycfg.Filter{{Type: proxycfg.FilterRequestRedirect,
		RequestRedirect: &proxycfg.Redirect{Scheme: "https", StatusCode: 301}}}}
	prefix := func(p, cluster string) proxycfg.Rule {
		r := to(cluster)
		r.Matches = []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: p}}}
		return r
	}
	cfg := config([]proxycfg.Route{
		onHost(route("shop", to("app")), "shop.example.com"),
		onHost(route("down", to("gone")), "down.example.com"),
		onHost(route("redir", redirect), "redir.example.com"),
		onHost(route("mixed", prefix("/a", "app"), prefix("/b", "gone")), "mixed.example.com"),
	}, cluster("app", live), cluster("gone"))
	hc := testHealth
	cfg.Listeners[0].HealthCheck = &hc
	return cfg
}

// health asks the origin listener for host's health with the token.
func (e *testEnv) health(method, host, path string) (*http.Response, string) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.url(path), nil)
	req.Host = host
	req.Header.Set(testHealth.Header, testHealth.Token)
	return e.do(e.client, req)
}

// A monitor's request with the token is answered by the proxy, with the
// state of the host's routes and nothing else; without the token, or on
// a listener that does not trust its peer, it is routed as any request.
// The answers are counted apart from user traffic.
func TestHealthAnswers(t *testing.T) {
	var seen atomic.Int64
	be := startBackend(t, func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		echo("app")(w, r)
	})
	var log testproc.SyncBuffer
	al := observe.NewAccessLog(&log, observe.AccessLogOptions{})
	e := newTestEnv(t, healthConfig(be), func(o *Options) { o.AccessLog = al })

	for _, tc := range []struct {
		method, host, path string
		status             int
		body               string
	}{
		{"GET", "shop.example.com", testHealth.Path, 200, "healthy\n"},
		{"GET", "Shop.Example.com:443", testHealth.Path + "?probe=1", 200, "healthy\n"},
		{"HEAD", "shop.example.com", testHealth.Path, 200, ""},
		{"GET", "redir.example.com", testHealth.Path, 200, "healthy\n"},
		{"GET", "down.example.com", testHealth.Path, 503, "unhealthy\n"},
		{"HEAD", "down.example.com", testHealth.Path, 503, ""},
		{"GET", "mixed.example.com", testHealth.Path, 503, "unhealthy\n"},
		{"GET", "nothing.example.com", testHealth.Path, 503, "unhealthy\n"},
		{"POST", "shop.example.com", testHealth.Path, 405, "method not allowed\n"},
	} {
		res, body := e.health(tc.method, tc.host, tc.path)
		if res.StatusCode != tc.status || body != tc.body {
			t.Errorf("%s %s%s: %d %q, want %d %q", tc.method, tc.host, tc.path, res.StatusCode, body, tc.status, tc.body)
		}
		if ct, cc := res.Header.Get("Content-Type"), res.Header.Get("Cache-Control"); !strings.HasPrefix(ct, "text/plain") || cc != "no-store" {
			t.Errorf("%s %s: Content-Type %q, Cache-Control %q", tc.method, tc.host, ct, cc)
		}
		if tc.status == 405 && res.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("405 without Allow: %q", res.Header.Get("Allow"))
		}
	}
	// HTTP/2 to the TLS origin listener, which trusts its peer too.
	req, _ := http.NewRequest("GET", "https://"+e.bound.OriginTLS+testHealth.Path, nil)
	req.Host = "shop.example.com"
	req.Header.Set(testHealth.Header, testHealth.Token)
	if res, body := e.do(e.h2, req); res.StatusCode != 200 || body != "healthy\n" || res.ProtoMajor != 2 {
		t.Errorf("over HTTP/2: %s %s %q", res.Proto, res.Status, body)
	}
	if n := seen.Load(); n != 0 {
		t.Fatalf("the backend saw %d health requests", n)
	}

	// Without the token, with another, or on the plain listener (which
	// does not trust its peer): routed to the backend, which sees it.
	routed := []*http.Request{}
	for _, hdr := range [][]string{nil, {testHealth.Header, "0123456789abcdef-monitoX"}, {testHealth.Header, testHealth.Token[:16]}} {
		req, _ := http.NewRequest("GET", e.url(testHealth.Path), nil)
		req.Host = "shop.example.com"
		if hdr != nil {
			req.Header.Set(hdr[0], hdr[1])
		}
		routed = append(routed, req)
	}
	req, _ = http.NewRequest("GET", "http://"+e.bound.Plain+testHealth.Path, nil)
	req.Host = "shop.example.com"
	req.Header.Set(testHealth.Header, testHealth.Token)
	routed = append(routed, req)
	for i, req := range routed {
		res, body := e.do(e.client, req)
		if res.StatusCode != 200 || echoed(body, "backend") != "app" || echoed(body, "target") != testHealth.Path {
			t.Errorf("request %d without the token or trust: %d %q, want the backend's answer", i, res.StatusCode, body)
		}
	}
	if n := seen.Load(); n != int64(len(routed)) {
		t.Errorf("the backend saw %d requests, want %d", n, len(routed))
	}
	// Down's health is not what its route answers a user: still 503
	// there, from the route.
	if res, body := e.get("down.example.com", testHealth.Path); res.StatusCode != 503 || body == "unhealthy\n" {
		t.Errorf("a user's request for down: %d %q", res.StatusCode, body)
	}

	// Counted apart: the routed requests (and down's) are the rules' and
	// the listener's; the health answers only the health counter's.
	s := e.scrapeMetrics()
	s.want(t, `tunnelgate_health_checks_total{listener="gw/http",result="healthy"}`, "5")
	s.want(t, `tunnelgate_health_checks_total{listener="gw/http",result="unhealthy"}`, "4")
	s.want(t, `tunnelgate_route_requests_total{class="2xx",route="default/shop",rule="0"}`, "4")
	s.want(t, `tunnelgate_route_requests_total{class="5xx",route="default/down",rule="0"}`, "1")
	s.absent(t, `tunnelgate_route_requests_total{class="3xx"`)
	s.absent(t, `tunnelgate_route_requests_total{class="4xx"`)
	s.want(t, `tunnelgate_listener_request_duration_seconds_count{listener="gw/http"}`, "5")
	s.want(t, `tunnelgate_responses_total{class="2xx"}`, "4")

	// And the access log has the routed requests' lines alone.
	closeAfter(t, al, 5)
	lines := parseAccessLog(t, log.String())
	if len(lines) != 5 {
		t.Fatalf("%d access log lines, want the 5 routed requests':\n%s", len(lines), log.String())
	}
}

// Health follows the cluster's endpoints: those the config lists, and
// whether the proxy found them refusing connections.
func TestHealthFollowsEndpoints(t *testing.T) {
	be := startBackend(t, echo("app"))
	e := newTestEnv(t, healthConfig(be))
	want := func(step string, status int) {
		t.Helper()
		if res, body := e.health("GET", "shop.example.com", testHealth.Path); res.StatusCode != status {
			t.Fatalf("%s: %d %q, want %d", step, res.StatusCode, body, status)
		}
	}
	want("a live endpoint", 200)

	cfg := healthConfig(be)
	cfg.Clusters[0].Endpoints = []proxycfg.Endpoint{}
	if err := e.p.Load(cfg); err != nil {
		t.Fatal(err)
	}
	want("its endpoints gone", 503)

	if err := e.p.Load(healthConfig(be)); err != nil {
		t.Fatal(err)
	}
	want("back", 200)

	// An endpoint that refuses connections: not down until a request
	// found it so, then down for a few seconds.
	dead := closedAddr(t)
	if err := e.p.Load(healthConfig(dead)); err != nil {
		t.Fatal(err)
	}
	want("an endpoint not tried yet", 200)
	if res, _ := e.get("shop.example.com", "/"); res.StatusCode != http.StatusBadGateway && res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a request to the dead endpoint: %d", res.StatusCode)
	}
	want("its only endpoint refusing", 503)
	// Beside a live one, the cluster is ready.
	if err := e.p.Load(healthConfig(dead)); err != nil {
		t.Fatal(err)
	}
	cfg = healthConfig(dead)
	cfg.Clusters[0].Endpoints = append(cfg.Clusters[0].Endpoints, proxycfg.Endpoint{Address: be})
	if err := e.p.Load(cfg); err != nil {
		t.Fatal(err)
	}
	want("one endpoint refusing, one live", 200)
}

// A health check the proxy could not answer as written refuses the
// config, naming the listener and the field.
func TestHealthCheckRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(l *proxycfg.Listener)
		field string
	}{
		{"relative path", func(l *proxycfg.Listener) { l.HealthCheck.Path = "health" }, "healthCheck.path"},
		{"empty path", func(l *proxycfg.Listener) { l.HealthCheck.Path = "" }, "healthCheck.path"},
		{"query", func(l *proxycfg.Listener) { l.HealthCheck.Path = "/health?x=1" }, "healthCheck.path"},
		{"space", func(l *proxycfg.Listener) { l.HealthCheck.Path = "/he alth" }, "healthCheck.path"},
		{"dot segment", func(l *proxycfg.Listener) { l.HealthCheck.Path = "/a/../health" }, "healthCheck.path"},
		{"encoded slash", func(l *proxycfg.Listener) { l.HealthCheck.Path = "/a%2Fhealth" }, "healthCheck.path"},
		{"header with a space", func(l *proxycfg.Listener) { l.HealthCheck.Header = "X Token" }, "healthCheck.header"},
		{"empty header", func(l *proxycfg.Listener) { l.HealthCheck.Header = "" }, "healthCheck.header"},
		{"header Host", func(l *proxycfg.Listener) { l.HealthCheck.Header = "host" }, "healthCheck.header"},
		{"hop-by-hop header", func(l *proxycfg.Listener) { l.HealthCheck.Header = "Connection" }, "healthCheck.header"},
		{"short token", func(l *proxycfg.Listener) { l.HealthCheck.Token = "0123456789abcde" }, "healthCheck.token"},
		{"token with a line break", func(l *proxycfg.Listener) { l.HealthCheck.Token = "0123456789abcdef\r\nX: y" }, "healthCheck.token"},
		{"token with a trailing space", func(l *proxycfg.Listener) { l.HealthCheck.Token = "0123456789abcdef " }, "healthCheck.token"},
		{"TCP listener", func(l *proxycfg.Listener) { l.Protocol = proxycfg.ListenerTCP }, "healthCheck"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := healthConfig("127.0.0.1:1")
			if tc.field == "healthCheck" {
				cfg.Routes = nil // a TCP listener takes no HTTP route
				cfg.Clusters = nil
			}
			tc.edit(&cfg.Listeners[0])
			err := New(Options{Log: quiet}).Load(cfg)
			if err == nil {
				t.Fatal("the config was taken")
			}
			if !strings.Contains(err.Error(), `listener "gw/http": `+tc.field) {
				t.Errorf("the error does not name the listener and %s: %v", tc.field, err)
			}
		})
	}
	if err := New(Options{Log: quiet}).Load(healthConfig("127.0.0.1:1")); err != nil {
		t.Errorf("a valid health check: %v", err)
	}
}

// The host's rules, as the health answer reads them: every rule a request
// for the host could match on the listener, those of routes without
// hostnames and of wildcards included, whatever their paths; weights,
// backend statuses, fail statuses and redirects as a request would meet
// them.
func TestHostReady(t *testing.T) {
	live := "127.0.0.1:1" // never dialled: health makes no connection
	onHost := func(r proxycfg.Route, hosts ...string) proxycfg.Route { r.Hostnames = hosts; return r }
	exact := func(p, cluster string) proxycfg.Rule {
		r := to(cluster)
		r.Matches = []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathExact, Value: p}, Method: "POST"}}
		return r
	}
	weighted := func(backends ...proxycfg.BackendRef) proxycfg.Rule {
		return proxycfg.Rule{Matches: everyPath(), Backends: backends}
	}
	cfg := config([]proxycfg.Route{
		onHost(route("a", to("app")), "a.example.com"),
		onHost(route("b", exact("/rare", "gone")), "b.example.com"),
		onHost(route("wild", to("app")), "*.w.example.com"),
		onHost(route("wild-down", exact("/x", "gone")), "*.d.example.com"),
		onHost(route("zero", weighted(proxycfg.BackendRef{Cluster: "app", Weight: 0}, proxycfg.BackendRef{Cluster: "gone", Weight: 1})), "zero.example.com"),
		onHost(route("split", weighted(proxycfg.BackendRef{Cluster: "gone", Weight: 1}, proxycfg.BackendRef{Cluster: "app", Weight: 1})), "split.example.com"),
		onHost(route("status", weighted(proxycfg.BackendRef{Status: 500, Weight: 1})), "status.example.com"),
		onHost(route("failed", proxycfg.Rule{Matches: everyPath(), FailStatus: 500, Backends: []proxycfg.BackendRef{{Cluster: "app", Weight: 1}}}), "failed.example.com"),
		onHost(route("nobackend", proxycfg.Rule{Matches: everyPath()}), "none.example.com"),
	}, cluster("app", live), cluster("gone"))
	p := New(Options{Log: quiet})
	p.serveView(viewOf(0))
	if err := p.Load(cfg); err != nil {
		t.Fatal(err)
	}
	cc := p.current.Load()
	vh := pickListener(cc.origin[0], "a.example.com")
	for host, want := range map[string]bool{
		"a.example.com":      true,
		"b.example.com":      false, // a rule only POST /rare reaches still counts
		"x.w.example.com":    true,
		"x.y.w.example.com":  true,
		"w.example.com":      false, // no route: the wildcard does not take its own suffix
		"x.d.example.com":    false,
		"zero.example.com":   false, // the live backend has no weight
		"split.example.com":  true,  // one backend with weight can send
		"status.example.com": false,
		"failed.example.com": false,
		"none.example.com":   false,
		"other.test":         false,
	} {
		if got := cc.hostReady(vh, host, 0); got != want {
			t.Errorf("%s: ready %v, want %v", host, got, want)
		}
	}

	// A route without hostnames serves every host: its rules count for
	// each.
	all := route("all", exact("/all", "gone"))
	all.Namespace, all.Listeners, all.Created = "default", []string{"gw/http"}, cfg.Routes[0].Created
	cfg.Routes = append(cfg.Routes, all)
	cfg.Version = "with a catch-all"
	if err := p.Load(cfg); err != nil {
		t.Fatal(err)
	}
	cc = p.current.Load()
	vh = pickListener(cc.origin[0], "a.example.com")
	if cc.hostReady(vh, "a.example.com", 0) {
		t.Error("a.example.com is ready beside a catch-all rule on a cluster without endpoints")
	}
}

// A health answer leaves no trace span: only the request after it does.
func TestHealthAnswerIsNotTraced(t *testing.T) {
	e, exp := tracedEnv(t, healthConfig(startBackend(t, echo("app"))))
	if res, _ := e.health("GET", "shop.example.com", testHealth.Path); res.StatusCode != 200 {
		t.Fatalf("health: %d", res.StatusCode)
	}
	if res, _ := e.get("nothing.example.com", "/"); res.StatusCode != 404 {
		t.Fatalf("unrouted: %d", res.StatusCode)
	}
	srv := waitSpans(t, exp, 1)[0]
	wantAttrs(t, srv, map[string]string{"http.response.status_code": "404"})
}

// A health check set, changed or removed on a listener by a config that
// is patched in (only the listener changed) takes effect at once, and a
// bad one is refused there too.
func TestHealthCheckPatched(t *testing.T) {
	be := startBackend(t, echo("app"))
	without := healthConfig(be)
	without.Listeners[0].HealthCheck = nil
	e := newTestEnv(t, without)
	routed := func(step string, want bool) {
		t.Helper()
		res, body := e.health("GET", "shop.example.com", testHealth.Path)
		if got := echoed(body, "backend") == "app"; got != want || res.StatusCode != 200 {
			t.Errorf("%s: %d %q; routed %v, want %v", step, res.StatusCode, body, got, want)
		}
	}
	routed("without a health check", true)

	with := healthConfig(be)
	with.Version = "with"
	if applied, err := e.p.Apply(with); err != nil || applied != proxycfg.AppliedRoutes {
		t.Fatalf("Apply: %v, %v; want the listener patched", applied, err)
	}
	routed("with a health check", false)

	bad := healthConfig(be)
	bad.Version = "bad"
	bad.Listeners[0].HealthCheck.Token = "short"
	if _, err := e.p.Apply(bad); err == nil || !strings.Contains(err.Error(), `listener "gw/http": healthCheck.token`) {
		t.Errorf("a short token patched in: %v", err)
	}
	routed("after the bad one was refused", false)

	other := healthConfig(be)
	other.Version = "other"
	other.Listeners[0].HealthCheck.Token = "another token, 16+ bytes"
	if _, err := e.p.Apply(other); err != nil {
		t.Fatal(err)
	}
	routed("the token changed", true)

	without.Version = "without again"
	if _, err := e.p.Apply(without); err != nil {
		t.Fatal(err)
	}
	routed("removed", true)
}
