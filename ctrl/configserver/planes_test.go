package configserver

import (
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

const (
	tokenA = "plane-a-token"
	tokenB = "plane-b-token"
)

const invalidToken = `Bearer realm="tunnelgate", error="invalid_token"`

// twoPlanes are planes a and b, each with its own token and a config
// told apart from the others by its cluster's endpoint.
func twoPlanes(addrA, addrB string) map[string]Plane {
	return map[string]Plane{
		"ns/a": {Token: tokenA, Config: smallConfig(addrA)},
		"ns/b": {Token: tokenB, Config: smallConfig(addrB)},
	}
}

// fetchAs asks for the config with token and returns the status and,
// on 200, the endpoint of the document's one cluster.
func fetchAs(t *testing.T, ts *testServer, token string) (int, string) {
	t.Helper()
	res, body := ts.get(t, "?wait=0s", "Authorization", "Bearer "+token)
	if res.StatusCode != http.StatusOK {
		if res.StatusCode == http.StatusUnauthorized && res.Header.Get("WWW-Authenticate") != invalidToken {
			t.Errorf("401 with WWW-Authenticate %q, want %q", res.Header.Get("WWW-Authenticate"), invalidToken)
		}
		return res.StatusCode, ""
	}
	doc, err := configwatch.DecodeDocument(body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, doc.Config.Clusters[0].Endpoints[0].Address
}

// Each token reads its own config and nothing else.
func TestPlaneTokensReadTheirOwnConfig(t *testing.T) {
	ts := startServer(t, Options{Token: testToken})
	ts.Publish(smallConfig("10.0.0.1:80"))
	ts.PublishPlanes(twoPlanes("10.0.0.2:80", "10.0.0.3:80"))
	for _, c := range []struct{ who, token, want string }{
		{"shared", testToken, "10.0.0.1:80"},
		{"plane a", tokenA, "10.0.0.2:80"},
		{"plane b", tokenB, "10.0.0.3:80"},
	} {
		if status, got := fetchAs(t, ts, c.token); status != http.StatusOK || got != c.want {
			t.Errorf("%s: status %d, endpoint %q; want 200 with %q", c.who, status, got, c.want)
		}
	}
	if status, _ := fetchAs(t, ts, "plane-c-token"); status != http.StatusUnauthorized {
		t.Errorf("unknown token: status %d, want 401", status)
	}
	res, _ := ts.get(t, "?wait=0s", "Authorization", "Bearer "+tokenA)
	if v := ts.PlaneVersion("ns/a"); v == "" || res.Header.Get("ETag") != configwatch.ETag(v) || v == ts.Version() || v == ts.PlaneVersion("ns/b") {
		t.Errorf("PlaneVersion(a) = %q, ETag %q, shared %q, b %q", v, res.Header.Get("ETag"), ts.Version(), ts.PlaneVersion("ns/b"))
	}
	if v := ts.PlaneVersion("ns/c"); v != "" {
		t.Errorf("PlaneVersion of no plane = %q", v)
	}
	if n := ts.metric(t, "tunnelgate.config_server.published"); n != 3 {
		t.Errorf("published = %d, want 3 (shared, a, b)", n)
	}
}

// changedOf is the channel a request held on sc waits on now: one that
// stays the same was not closed, so nobody held there was woken.
func changedOf(sc *scope) chan struct{} {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.changed
}

func planeScope(t *testing.T, s *Server, key string) *scope {
	t.Helper()
	s.planes.mu.RLock()
	defer s.planes.mu.RUnlock()
	sc := s.planes.byKey[key]
	if sc == nil {
		t.Fatalf("no plane %s", key)
	}
	return sc
}

// A publish wakes only the requests held for the config that changed.
func TestPublishWakesOnlyTheScopeThatChanged(t *testing.T) {
	ts := startServer(t, Options{Token: testToken, MaxWait: time.Hour})
	vs := ts.Publish(smallConfig("10.0.0.1:80"))
	ts.PublishPlanes(twoPlanes("10.0.0.2:80", "10.0.0.3:80"))
	va, vb := ts.PlaneVersion("ns/a"), ts.PlaneVersion("ns/b")
	sa, sb := planeScope(t, ts.Server, "ns/a"), planeScope(t, ts.Server, "ns/b")
	chA := asyncGetAs(t, ts, tokenA, "?version="+va)
	chB := asyncGetAs(t, ts, tokenB, "?version="+vb)
	chS := asyncGet(t, ts, "?version="+vs)
	waitFor(t, "three held requests", func() bool { return ts.metric(t, "tunnelgate.config_server.watchers") == 3 })
	wa, wb, ws := changedOf(sa), changedOf(sb), changedOf(ts.shared)

	// The same planes again, in new configs: nobody is woken.
	ts.PublishPlanes(twoPlanes("10.0.0.2:80", "10.0.0.3:80"))
	if changedOf(sa) != wa || changedOf(sb) != wb || changedOf(ts.shared) != ws {
		t.Error("republishing unchanged planes woke held requests")
	}
	if planeScope(t, ts.Server, "ns/a") != sa {
		t.Error("a plane kept in the set got a new scope (and lost its Encoder)")
	}

	// The shared config changes: the planes' requests stay asleep.
	vs2 := ts.Publish(smallConfig("10.0.0.9:80"))
	if res := receive(t, chS, "the shared publish"); res.StatusCode != http.StatusOK || res.Header.Get("ETag") != configwatch.ETag(vs2) {
		t.Errorf("shared waiter: status %d, ETag %q; want 200 with %s", res.StatusCode, res.Header.Get("ETag"), vs2)
	}
	if changedOf(sa) != wa || changedOf(sb) != wb {
		t.Error("a shared publish woke the planes' held requests")
	}
	chS = asyncGet(t, ts, "?version="+vs2)
	waitFor(t, "three held requests", func() bool { return ts.metric(t, "tunnelgate.config_server.watchers") == 3 })
	ws = changedOf(ts.shared)

	// Plane a changes: its request is answered, b's and the shared one
	// stay held.
	ts.PublishPlanes(twoPlanes("10.0.0.4:80", "10.0.0.3:80"))
	va2 := ts.PlaneVersion("ns/a")
	if res := receive(t, chA, "plane a's publish"); res.StatusCode != http.StatusOK || res.Header.Get("ETag") != configwatch.ETag(va2) || va2 == va {
		t.Errorf("a's waiter: status %d, ETag %q; want 200 with %s", res.StatusCode, res.Header.Get("ETag"), va2)
	}
	if changedOf(sb) != wb || changedOf(ts.shared) != ws {
		t.Error("plane a's publish woke b's or the shared held requests")
	}
	waitFor(t, "two held requests", func() bool { return ts.metric(t, "tunnelgate.config_server.watchers") == 2 })
	select {
	case res := <-chB:
		t.Errorf("b's waiter answered %d", res.StatusCode)
	case res := <-chS:
		t.Errorf("the shared waiter answered %d", res.StatusCode)
	default:
	}
}

// A plane left out is gone: its held request is refused, and so is its
// token from then on. The others are untouched.
func TestRemovedPlaneIsRefused(t *testing.T) {
	ts := startServer(t, Options{Token: testToken, MaxWait: time.Hour})
	ts.PublishPlanes(twoPlanes("10.0.0.2:80", "10.0.0.3:80"))
	ch := asyncGetAs(t, ts, tokenA, "?version="+ts.PlaneVersion("ns/a"))
	waitFor(t, "a held request", func() bool { return ts.metric(t, "tunnelgate.config_server.watchers") == 1 })
	ts.PublishPlanes(map[string]Plane{"ns/b": {Token: tokenB, Config: smallConfig("10.0.0.3:80")}})
	res := receive(t, ch, "the plane's removal")
	if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != invalidToken {
		t.Fatalf("held request: status %d, WWW-Authenticate %q; want 401 %s", res.StatusCode, res.Header.Get("WWW-Authenticate"), invalidToken)
	}
	if status, _ := fetchAs(t, ts, tokenA); status != http.StatusUnauthorized {
		t.Errorf("after removal: status %d, want 401", status)
	}
	if v := ts.PlaneVersion("ns/a"); v != "" {
		t.Errorf("PlaneVersion of a removed plane = %q", v)
	}
	if status, got := fetchAs(t, ts, tokenB); status != http.StatusOK || got != "10.0.0.3:80" {
		t.Errorf("plane b: status %d, endpoint %q", status, got)
	}
	// Both refusals counted as such, nothing else for them.
	if n := ts.metric(t, "tunnelgate.config_server.requests", resultAttr("unauthorized")); n != 2 {
		t.Errorf("requests{unauthorized} = %d, want 2", n)
	}
	if n := ts.metric(t, "tunnelgate.config_server.requests", resultAttr("not_modified")); n > 0 {
		t.Errorf("requests{not_modified} = %d, want none", n)
	}
}

// A plane's new token works at once; requests held with the old one are
// refused, not handed the next config.
func TestPlaneTokenRotation(t *testing.T) {
	ts := startServer(t, Options{Token: testToken, MaxWait: time.Hour})
	ts.PublishPlanes(twoPlanes("10.0.0.2:80", "10.0.0.3:80"))
	ch := asyncGetAs(t, ts, tokenA, "?version="+ts.PlaneVersion("ns/a"))
	waitFor(t, "a held request", func() bool { return ts.metric(t, "tunnelgate.config_server.watchers") == 1 })
	planes := twoPlanes("10.0.0.4:80", "10.0.0.3:80")
	planes["ns/a"] = Plane{Token: "plane-a-rotated", Config: planes["ns/a"].Config}
	ts.PublishPlanes(planes)
	if res := receive(t, ch, "the rotation"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("request held with the old token: status %d, want 401", res.StatusCode)
	}
	if status, _ := fetchAs(t, ts, tokenA); status != http.StatusUnauthorized {
		t.Errorf("old token: status %d, want 401", status)
	}
	if status, got := fetchAs(t, ts, "plane-a-rotated"); status != http.StatusOK || got != "10.0.0.4:80" {
		t.Errorf("new token: status %d, endpoint %q", status, got)
	}
}

// A token must name one config: a plane without one, with the shared
// proxies', or with another plane's is not served, and the shared
// proxies keep theirs. The error names the plane, never the token.
func TestCollidingPlaneTokensGrantNothing(t *testing.T) {
	var logs testproc.SyncBuffer
	ts := startServer(t, Options{Token: testToken, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	ts.Publish(smallConfig("10.0.0.1:80"))
	ts.PublishPlanes(map[string]Plane{
		"ns/shared-token": {Token: testToken, Config: smallConfig("10.0.0.2:80")},
		"ns/twin-1":       {Token: "twin-token", Config: smallConfig("10.0.0.3:80")},
		"ns/twin-2":       {Token: "twin-token", Config: smallConfig("10.0.0.4:80")},
		"ns/no-token":     {Token: "", Config: smallConfig("10.0.0.5:80")},
		"ns/fine":         {Token: tokenA, Config: smallConfig("10.0.0.6:80")},
	})
	if status, got := fetchAs(t, ts, testToken); status != http.StatusOK || got != "10.0.0.1:80" {
		t.Errorf("shared token: status %d, endpoint %q; want the shared config", status, got)
	}
	if status, _ := fetchAs(t, ts, "twin-token"); status != http.StatusUnauthorized {
		t.Errorf("two planes' token: status %d, want 401", status)
	}
	if res, _ := ts.get(t, "?wait=0s", "Authorization", "Bearer "); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("empty token: status %d, want 401", res.StatusCode)
	}
	if status, got := fetchAs(t, ts, tokenA); status != http.StatusOK || got != "10.0.0.6:80" {
		t.Errorf("a plane with its own token: status %d, endpoint %q", status, got)
	}
	for _, key := range []string{"ns/shared-token", "ns/twin-1", "ns/twin-2", "ns/no-token"} {
		if v := ts.PlaneVersion(key); v != "" {
			t.Errorf("%s is served (version %s)", key, v)
		}
		if !strings.Contains(logs.String(), "plane="+key) {
			t.Errorf("no error names %s:\n%s", key, logs.String())
		}
	}
	for _, tok := range []string{testToken, "twin-token", tokenA} {
		if strings.Contains(logs.String(), tok) {
			t.Errorf("the log holds a token:\n%s", logs.String())
		}
	}
	// Refused planes are logged when refused, not at every publish.
	before := strings.Count(logs.String(), "plane not served")
	ts.PublishPlanes(map[string]Plane{
		"ns/twin-1": {Token: "twin-token", Config: smallConfig("10.0.0.3:80")},
		"ns/twin-2": {Token: "twin-token", Config: smallConfig("10.0.0.4:80")},
	})
	if after := strings.Count(logs.String(), "plane not served"); after != before {
		t.Errorf("the same refusals logged again: %d lines, then %d", before, after)
	}
}

// The shared token may be rotated to a served plane's (by hand, or by
// chance): then that token opens neither config.
func TestSharedTokenRotatedOntoAPlaneGrantsNothing(t *testing.T) {
	var mu sync.Mutex
	shared := testToken
	ts := startServer(t, Options{TokenFunc: func() string { mu.Lock(); defer mu.Unlock(); return shared }})
	ts.Publish(smallConfig("10.0.0.1:80"))
	ts.PublishPlanes(twoPlanes("10.0.0.2:80", "10.0.0.3:80"))
	mu.Lock()
	shared = tokenA
	mu.Unlock()
	if status, _ := fetchAs(t, ts, tokenA); status != http.StatusUnauthorized {
		t.Errorf("a token both the shared proxies and a plane have: status %d, want 401", status)
	}
	if status, got := fetchAs(t, ts, tokenB); status != http.StatusOK || got != "10.0.0.3:80" {
		t.Errorf("the other plane: status %d, endpoint %q", status, got)
	}
}

// A plane without a config yet is served as the shared proxies are
// before the first Publish: held, then 304 without an ETag; a nil Config
// later keeps what the plane had.
func TestPlaneWithoutConfigWaits(t *testing.T) {
	ts := startServer(t, Options{Token: testToken, MaxWait: time.Hour})
	ts.PublishPlanes(map[string]Plane{"ns/a": {Token: tokenA}})
	res, _ := ts.get(t, "?wait=10ms", "Authorization", "Bearer "+tokenA)
	if res.StatusCode != http.StatusNotModified || res.Header.Get("ETag") != "" {
		t.Fatalf("status %d, ETag %q; want 304 without ETag", res.StatusCode, res.Header.Get("ETag"))
	}
	ch := asyncGetAs(t, ts, tokenA, "")
	waitFor(t, "a held request", func() bool { return ts.metric(t, "tunnelgate.config_server.watchers") == 1 })
	ts.PublishPlanes(map[string]Plane{"ns/a": {Token: tokenA, Config: smallConfig("10.0.0.2:80")}})
	v := ts.PlaneVersion("ns/a")
	if res := receive(t, ch, "the plane's first config"); res.StatusCode != http.StatusOK || res.Header.Get("ETag") != configwatch.ETag(v) {
		t.Fatalf("status %d, ETag %q; want 200 with %s", res.StatusCode, res.Header.Get("ETag"), v)
	}
	ts.PublishPlanes(map[string]Plane{"ns/a": {Token: tokenA}})
	if got := ts.PlaneVersion("ns/a"); got != v {
		t.Errorf("a nil Config changed the version to %q", got)
	}
}

// PublishPlanes, like Publish, leaves the configs as it found them.
func TestPublishPlanesNeverMutates(t *testing.T) {
	ts := startServer(t, Options{Token: testToken})
	cfg := scaleConfig(5)
	before := deepCopy(t, cfg)
	ts.PublishPlanes(map[string]Plane{"ns/a": {Token: tokenA, Config: cfg}})
	if !reflect.DeepEqual(cfg, before) {
		t.Error("PublishPlanes modified the config")
	}
}
