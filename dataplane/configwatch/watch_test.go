package configwatch_test

import (
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
)

func TestProxyServesTheControllersConfig(t *testing.T) {
	a := backend(t, "a")
	ctl := startController(t, "", configserver.Options{})
	px := startProxy(t, ctl.url, configwatch.Options{})

	// No config yet: not ready, requests 503, the client held.
	waitFor(t, "the proxy's request to be held", func() bool { _, held := ctl.counts(""); return held == 1 })
	if code, _ := px.admin("/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz before a config: %d", code)
	}
	if code, _ := px.get("app.example"); code != http.StatusServiceUnavailable {
		t.Fatalf("request before a config: %d", code)
	}

	v := ctl.Publish(config("", a))
	px.waitServes("app.example", "a")
	if code, _ := px.admin("/readyz"); code != 200 {
		t.Fatalf("/readyz with a config: %d", code)
	}
	if px.p.Version() != v {
		t.Errorf("proxy version %q, want %q", px.p.Version(), v)
	}
	if _, body := px.admin("/config"); !strings.Contains(body, "version: "+v) {
		t.Errorf("/config: %q", body)
	}
	s := px.w.Stats()
	// Counted just after the config is applied, which waitServes sees.
	waitFor(t, "the full load counted", func() bool { return s.Loads[configwatch.LoadFull].Load() > 0 })
	if s.Loads[configwatch.LoadFull].Load() != 1 || s.LastSuccess.Load() == 0 {
		t.Errorf("full loads %d, last success %d", s.Loads[configwatch.LoadFull].Load(), s.LastSuccess.Load())
	}
	// The client waits for the next version.
	waitFor(t, "the proxy's request to be held", func() bool { _, held := ctl.counts(v); return held == 1 })

	// Its metrics are on the proxy's admin listener.
	_, scrape := px.admin("/metrics")
	for series, want := range map[string]string{
		`tunnelgate_config_watch_loads_total{kind="full"}`:          "1",
		`tunnelgate_config_watch_loads_total{kind="clusters"}`:      "0",
		`tunnelgate_config_watch_failures_total{reason="rejected"}`: "0",
	} {
		if got, ok := metricLine(scrape, series); !ok || got != want {
			t.Errorf("%s = %q (present %v), want %s", series, got, ok, want)
		}
	}
	if got, ok := metricLine(scrape, "tunnelgate_config_watch_last_success_seconds"); !ok {
		t.Errorf("no last_success in\n%s", scrape)
	} else if sec, _ := strconv.ParseFloat(got, 64); time.Since(time.Unix(int64(sec), 0)) > time.Hour {
		t.Errorf("last_success %s is not recent", got)
	}
}

// An endpoint change is applied with UpdateCluster: the router is not
// recompiled. A route change is loaded whole.
func TestClusterChangeDoesNotRecompile(t *testing.T) {
	a, b := backend(t, "a"), backend(t, "b")
	ctl := startController(t, "", configserver.Options{})
	ctl.Publish(config("", a))
	px := startProxy(t, ctl.url, configwatch.Options{})
	px.waitServes("app.example", "a")

	v2 := ctl.Publish(config("", b))
	px.waitServes("app.example", "b")
	st, ws := px.p.Stats(), px.w.Stats()
	waitFor(t, "the cluster update to be counted", func() bool {
		return st.ClusterUpdates.Load() == 1 && ws.Loads[configwatch.LoadClusters].Load() == 1
	})
	if st.ConfigLoaded.Load() != 1 || st.ClusterUpdates.Load() != 1 {
		t.Errorf("after an endpoint change: %d loads, %d cluster updates; want 1 and 1", st.ConfigLoaded.Load(), st.ClusterUpdates.Load())
	}
	if ws.Loads[configwatch.LoadClusters].Load() != 1 || ws.Loads[configwatch.LoadFull].Load() != 1 {
		t.Errorf("client loads: full %d, clusters %d", ws.Loads[configwatch.LoadFull].Load(), ws.Loads[configwatch.LoadClusters].Load())
	}
	waitFor(t, "the proxy to name the new version", func() bool { return px.p.Version() == v2 })

	// The same endpoints in another config with a route edited: that
	// route compiled alone.
	ctl.Publish(config("extra", b))
	px.waitServes("extra.example", "b")
	// Counted once it serves: a request may see it first.
	waitFor(t, "the route patch to be counted", func() bool {
		return st.RoutePatches.Load() == 1 && ws.Loads[configwatch.LoadRoutes].Load() == 1
	})
	if st.ConfigLoaded.Load() != 1 || st.ClusterUpdates.Load() != 1 || ws.Loads[configwatch.LoadRoutes].Load() != 1 {
		t.Errorf("after a route edit: %d loads, %d cluster updates, %d route loads; want 1, 1, 1",
			st.ConfigLoaded.Load(), st.ClusterUpdates.Load(), ws.Loads[configwatch.LoadRoutes].Load())
	}
}

// With the controller gone the proxy keeps serving; a controller back on
// the same address with a new config is followed.
func TestControllerAwayAndBack(t *testing.T) {
	a, b := backend(t, "a"), backend(t, "b")
	ctl := startController(t, "", configserver.Options{})
	ctl.Publish(config("", a))
	px := startProxy(t, ctl.url, configwatch.Options{})
	px.waitServes("app.example", "a")

	ctl.stop()
	ws := px.w.Stats()
	waitFor(t, "failed requests", func() bool { return ws.Failures[configwatch.FailUnreachable].Load() >= 3 })
	if code, body := px.get("app.example"); code != 200 || body != "a" {
		t.Fatalf("with the controller away: %d %q", code, body)
	}
	if code, _ := px.admin("/readyz"); code != 200 {
		t.Fatalf("/readyz with the controller away: %d", code)
	}

	// A new controller (another replica, or this one restarted) with a
	// config that changed meanwhile.
	ctl2 := startController(t, ctl.addr, configserver.Options{})
	v := ctl2.Publish(config("new", b))
	px.waitServes("new.example", "b")
	if px.p.Version() != v {
		t.Errorf("version %q, want %q", px.p.Version(), v)
	}
}

// A config the proxy refuses leaves the previous one serving, and the
// client waits for the next version instead of asking again and again.
func TestRejectedConfigKeepsThePreviousAndWaits(t *testing.T) {
	a, b := backend(t, "a"), backend(t, "b")
	ctl := startController(t, "", configserver.Options{})
	good := ctl.Publish(config("", a))
	px := startProxy(t, ctl.url, configwatch.Options{})
	px.waitServes("app.example", "a")

	bad := config("", a)
	bad.Routes[0].Rules[0].Backends[0].Cluster = "missing"
	badVersion := ctl.Publish(bad)
	ws := px.w.Stats()
	waitFor(t, "the rejection", func() bool { return ws.Failures[configwatch.FailRejected].Load() == 1 })
	if code, body := px.get("app.example"); code != 200 || body != "a" {
		t.Fatalf("after a rejected config: %d %q", code, body)
	}
	if px.p.Version() != good {
		t.Errorf("version %q, want the previous %q", px.p.Version(), good)
	}
	if _, body := px.admin("/config"); !strings.Contains(body, "last rejected config") {
		t.Errorf("/config does not show the rejection: %q", body)
	}

	// The next request names the refused version, so the server holds it.
	waitFor(t, "a request held with the refused version", func() bool { _, held := ctl.counts(badVersion); return held == 1 })
	before, _ := ctl.counts("")
	time.Sleep(200 * time.Millisecond)
	if after, held := ctl.counts(badVersion); after != before || held != 1 {
		t.Fatalf("the client asked again while held: %d requests, then %d (held %d)", before, after, held)
	}
	if n := ws.Failures[configwatch.FailRejected].Load(); n != 1 {
		t.Fatalf("rejected %d times, want once", n)
	}

	ctl.Publish(config("", b))
	px.waitServes("app.example", "b")
}

// A proxy started with a cache file serves its last config while the
// controller cannot be reached, and follows it once it can.
func TestCacheServesWithoutTheController(t *testing.T) {
	a, b := backend(t, "a"), backend(t, "b")
	cache := filepath.Join(t.TempDir(), "config.json")
	ctl := startController(t, "", configserver.Options{})
	v := ctl.Publish(config("", a))
	first := startProxy(t, ctl.url, configwatch.Options{CacheFile: cache})
	first.waitServes("app.example", "a")
	first.stop()
	ctl.stop()

	second := startProxy(t, ctl.url, configwatch.Options{CacheFile: cache})
	second.waitServes("app.example", "a")
	ws := second.w.Stats()
	// Counted just after the config is applied, which waitServes sees.
	waitFor(t, "the cache load counted", func() bool { return ws.Loads[configwatch.LoadCache].Load() > 0 })
	if ws.Loads[configwatch.LoadCache].Load() != 1 || second.p.Version() != v {
		t.Errorf("cache loads %d, version %q (want %q)", ws.Loads[configwatch.LoadCache].Load(), second.p.Version(), v)
	}
	if code, _ := second.admin("/readyz"); code != 200 {
		t.Errorf("/readyz from the cache: %d", code)
	}
	waitFor(t, "the controller found away", func() bool { return ws.Failures[configwatch.FailUnreachable].Load() > 0 })

	// The controller is back with new endpoints for the same routes: the
	// cached routes are kept and only the cluster is replaced.
	ctl2 := startController(t, ctl.addr, configserver.Options{})
	ctl2.Publish(config("", b))
	second.waitServes("app.example", "b")
	// Counted just after the update is applied, which waitServes sees.
	st := second.p.Stats()
	waitFor(t, "the cluster update counted", func() bool { return st.ClusterUpdates.Load() > 0 })
	if st.ConfigLoaded.Load() != 1 || st.ClusterUpdates.Load() != 1 {
		t.Errorf("%d loads, %d cluster updates; want the cache's load and one cluster update", st.ConfigLoaded.Load(), st.ClusterUpdates.Load())
	}
}

// A token the controller refuses is counted; a rotated token file is
// read at the next request.
func TestTokenFileRotation(t *testing.T) {
	a := backend(t, "a")
	ctl := startController(t, "", configserver.Options{})
	ctl.Publish(config("", a))
	tokenFile := writeFile(t, filepath.Join(t.TempDir(), "token"), "old-token\n")
	px := startProxy(t, ctl.url, configwatch.Options{TokenFile: tokenFile})
	ws := px.w.Stats()
	waitFor(t, "refusals", func() bool { return ws.Failures[configwatch.FailUnauthorized].Load() >= 2 })
	if px.p.Ready() {
		t.Fatal("a proxy with a refused token got a config")
	}
	writeFile(t, tokenFile, token)
	px.waitServes("app.example", "a")
}

func TestMissingTokenFile(t *testing.T) {
	ctl := startController(t, "", configserver.Options{})
	ctl.Publish(config("", backend(t, "a")))
	px := startProxy(t, ctl.url, configwatch.Options{TokenFile: filepath.Join(t.TempDir(), "absent")})
	ws := px.w.Stats()
	waitFor(t, "token failures", func() bool { return ws.Failures[configwatch.FailToken].Load() >= 2 })
	if requests, _ := ctl.counts(""); requests != 0 {
		t.Errorf("%d requests sent without a token", requests)
	}
}

// Something that is not a controller, answering with what the client
// cannot use: it backs off, and asks with the version the server named
// so it is not sent the same bytes at once.
func TestUnusableAnswersBackOff(t *testing.T) {
	var mu sync.Mutex
	var versions []string
	done := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		versions = append(versions, r.URL.Query().Get(configwatch.ParamVersion))
		n := len(versions)
		mu.Unlock()
		if n == 3 {
			close(done)
		}
		if n == 1 {
			w.Header().Set("ETag", configwatch.ETag("garbled"))
			w.Write([]byte("{not json"))
			return
		}
		http.Error(w, "oops", http.StatusInternalServerError)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	px := startProxy(t, "http://"+ln.Addr().String(), configwatch.Options{})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the client stopped asking")
	}
	px.stop()
	mu.Lock()
	defer mu.Unlock()
	if versions[0] != "" || versions[1] != "garbled" {
		t.Errorf("versions asked %q; want the ETag's after the undecodable answer", versions)
	}
	// The third answer may have been cut short by stop.
	if n := px.w.Stats().Failures[configwatch.FailBadAnswer].Load(); n < 2 {
		t.Errorf("bad answers %d, want at least 2", n)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, o := range []configwatch.Options{
		{URL: "ftp://controller"},
		{URL: "controller:9443"},
		{URL: "https://"},
		{URL: "https://controller/?x=1"},
		{URL: "https://controller", CertFile: "cert.pem"},
	} {
		if _, err := configwatch.New(nil, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
