package dataplane

import (
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/matcher"
)

// patchConfig is a config of routes routes over two listeners (hostnames
// *.a.example and *.b.example), each with a path-and-header rule and a
// default, to clusters c0..c3.
func patchConfig(routes int) *proxycfg.Config {
	cfg := &proxycfg.Config{Schema: proxycfg.SchemaVersion, Version: "v0", Listeners: []proxycfg.Listener{
		{Name: "gw/a", Hostname: "*.a.example", Port: 80, Protocol: proxycfg.ListenerHTTP},
		{Name: "gw/b", Hostname: "*.b.example", Port: 80, Protocol: proxycfg.ListenerHTTP},
	}}
	for c := range 4 {
		cfg.Clusters = append(cfg.Clusters, cluster(fmt.Sprint("c", c), fmt.Sprintf("127.0.0.1:%d", 1000+c)))
	}
	for r := range routes {
		l := []string{"a", "b"}[r%2]
		cfg.Routes = append(cfg.Routes, proxycfg.Route{Kind: proxycfg.KindHTTP, Namespace: "ns", Name: fmt.Sprint("r", r),
			Created: time.Date(2026, 1, 1, 0, 0, r, 0, time.UTC), Listeners: []string{"gw/" + l},
			Hostnames: []string{fmt.Sprintf("h%d.%s.example", r%5, l)},
			Rules: []proxycfg.Rule{
				{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: fmt.Sprint("/p", r%3)},
					Headers: []proxycfg.ValueMatch{{Type: proxycfg.MatchExact, Name: "x-canary", Value: "1"}}}},
					Backends: []proxycfg.BackendRef{{Cluster: fmt.Sprint("c", r%4), Weight: 1}}},
				{Matches: everyPath(), Backends: []proxycfg.BackendRef{{Cluster: fmt.Sprint("c", (r+1)%4), Weight: 1}}},
			}})
	}
	return cfg
}

// edit returns cfg with a copy of route i changed by change, which may
// replace the route's fields and its rules' matches and backends but not
// change what they point to (the config served shares it).
func edit(cfg *proxycfg.Config, version string, i int, change func(r *proxycfg.Route)) *proxycfg.Config {
	next := *cfg
	next.Version = version
	next.Routes = slices.Clone(cfg.Routes)
	r := next.Routes[i]
	r.Rules = slices.Clone(r.Rules)
	for j := range r.Rules {
		r.Rules[j].Matches = slices.Clone(r.Rules[j].Matches)
		r.Rules[j].Backends = slices.Clone(r.Rules[j].Backends)
	}
	change(&r)
	next.Routes[i] = r
	return &next
}

// decisions describes what cc decides for a set of requests on each view
// it serves: the listener (vhost) each picks and how it reads the
// request, then the rule that takes it (route, index, ID, backends, what
// it answers), or none; and, for each socket of its own, its TLS
// configuration.
func decisions(cc *compiledConfig) []string {
	var out []string
	names, sets := viewsOf(cc)
	for k, set := range sets {
		for _, l := range []string{"a", "b", "c", "d"} {
			for h := range 6 {
				host := fmt.Sprintf("h%d.%s.example", h, l)
				vh := pickListener(set, host)
				for _, path := range []string{"/", "/p0", "/p1/x", "/p2", "/q"} {
					for _, canary := range []string{"", "1"} {
						out = append(out, names[k]+" "+decision(cc, vh, host, path, canary))
					}
				}
			}
		}
	}
	for _, e := range gatewayAddrs(cc) {
		out = append(out, "socket "+e.String()+" "+socketTLS(cc.gateways[e].tls))
	}
	return out
}

// viewsOf names and lists the listener sets of cc's views: the origin's
// two, each port's, each socket of its own's, in that order.
func viewsOf(cc *compiledConfig) ([]string, []*listenerSet) {
	names := []string{"origin http", "origin https"}
	sets := []*listenerSet{cc.origin[0], cc.origin[1]}
	for _, port := range slices.Sorted(maps.Keys(cc.ports)) {
		names, sets = append(names, fmt.Sprint("port ", port)), append(sets, cc.ports[port])
	}
	for _, e := range gatewayAddrs(cc) {
		names, sets = append(names, "socket "+e.String()), append(sets, cc.gateways[e].listeners)
	}
	return names, sets
}

func gatewayAddrs(cc *compiledConfig) []gatewayAddr {
	return slices.SortedFunc(maps.Keys(cc.gateways), func(a, b gatewayAddr) int { return strings.Compare(a.String(), b.String()) })
}

// socketTLS describes a socket's TLS configuration: how it asks for
// client certificates, and the certificate each server name gets.
func socketTLS(c *tls.Config) string {
	if c == nil {
		return "plain"
	}
	d := fmt.Sprint("client auth ", c.ClientAuth, " CAs ", c.ClientCAs != nil)
	for _, sni := range []string{"", "h1.a.example", "h2.a.example", "h1.b.example", "h1.c.example", "h2.c.example", "h1.d.example"} {
		cert, err := c.GetCertificate(&tls.ClientHelloInfo{ServerName: sni})
		if err != nil {
			d += " " + sni + ": none"
			continue
		}
		d += fmt.Sprintf(" %s: %x", sni, sha256.Sum256(cert.Certificate[0]))[:len(sni)+10]
	}
	return d
}

// decision describes what vhost vh (nil: no listener) decides for a GET
// of host and path, with x-canary: canary when it is not empty.
func decision(cc *compiledConfig, vh *vhost, host, path, canary string) string {
	d := host + path + "?" + canary + " → "
	if vh == nil {
		return d + "no listener"
	}
	d += fmt.Sprintf("vhost %s cert %v slashes %d %v: ", vh.name, vh.certRequired, vh.slashes, vh.slashesDefault)
	if vh.table == nil {
		return d + "no table"
	}
	hdr := http.Header{}
	if canary != "" {
		hdr.Set("X-Canary", canary)
	}
	tg, ok := vh.table.Match(&matcher.Request{Host: host, Path: path, Method: "GET", Header: hdr})
	if !ok {
		return d + "none"
	}
	ru := tg.Rule
	// The rule by its identity (route and index), and whether its ID
	// finds it: a patch numbers an added route's rules after every other,
	// where a whole compile numbers them in config order.
	idOK := ru.ID < len(cc.rules) && cc.rules[ru.ID].Rule == ru
	d += fmt.Sprintf("%s[%d] id finds it %v fail %d redirect %v plan %v:", ru.Route, ru.Index, idOK, ru.FailStatus, tg.Redirect != nil, ru.RespPlan != nil)
	for _, b := range ru.Backends {
		// The cluster by its name: a patch numbers a cluster added after
		// every other.
		name := "-"
		if b.Cluster != compiled.NoCluster {
			name = cc.clusters[b.Cluster].name
		}
		d += fmt.Sprintf(" cluster %s weight %d status %d plans %v %v", name, b.CumWeight, b.Status, b.ReqPlan != nil, b.RespPlan != nil)
	}
	return d
}

// checkSameAsWhole holds what p serves to what a proxy given cfg whole,
// serving the same views, serves.
func checkSameAsWhole(t *testing.T, p *Proxy, cfg *proxycfg.Config) {
	t.Helper()
	whole := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ListenerPorts: p.opts.ListenerPorts})
	defer whole.Close()
	whole.serveView(p.views)
	mustLoad(t, whole, cfg)
	got, want := decisions(p.current.Load()), decisions(whole.current.Load())
	if len(got) != len(want) {
		gotViews, _ := viewsOf(p.current.Load())
		wantViews, _ := viewsOf(whole.current.Load())
		t.Fatalf("patched and whole differ: %d decisions, want %d (views %q, want %q)", len(got), len(want), gotViews, wantViews)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("patched and whole differ:\n got %s\nwant %s", got[i], want[i])
		}
	}
}

// A route edited in place is compiled alone: the tables of the other
// listener are kept, the config served before is left as it was, and
// what is served is what a whole compile serves.
func TestRouteEditPatched(t *testing.T) {
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Close()
	p.serveView(viewOf(0))
	cfg := patchConfig(40)
	mustLoad(t, p, cfg)
	before := p.current.Load()
	beforeDecisions := decisions(before)

	next := edit(cfg, "v1", 6, func(r *proxycfg.Route) { // on gw/a
		r.Rules[0].Matches[0].Path = &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/q"}
		r.Rules[1].Backends[0].Weight = 3
		r.Rules[1].Filters = []proxycfg.Filter{{Type: proxycfg.FilterResponseHeaderModifier, ResponseHeaderModifier: &proxycfg.HeaderModifier{Set: []proxycfg.Header{{Name: "X-Op", Value: "1"}}}}}
		r.Hostnames = []string{"h5.a.example"}
	})
	next.Clusters = slices.Clone(cfg.Clusters)
	next.Clusters[2] = cluster("c2", "127.0.0.1:2999")
	how, err := p.Apply(next)
	if err != nil || how != proxycfg.AppliedRoutes {
		t.Fatalf("Apply: %v, %v; want proxycfg.AppliedRoutes", how, err)
	}
	after := p.current.Load()
	if after.origin[0].vhosts["*.b.example"] != before.origin[0].vhosts["*.b.example"] {
		t.Error("the table of a listener with no edited route was built again")
	}
	if after.origin[0].vhosts["*.a.example"] == before.origin[0].vhosts["*.a.example"] {
		t.Error("the table of the edited route's listener was kept")
	}
	if !slices.Equal(decisions(before), beforeDecisions) {
		t.Error("the config served before changed")
	}
	if eps := p.slots["c2"].state.Load().endpoints(); len(eps) != 1 || eps[0].addr != "127.0.0.1:2999" {
		t.Error("the changed cluster was not replaced")
	}
	if p.Stats().RoutePatches.Load() != 1 || p.Stats().ConfigLoaded.Load() != 1 {
		t.Errorf("%d patches, %d loads; want 1, 1", p.Stats().RoutePatches.Load(), p.Stats().ConfigLoaded.Load())
	}
	checkSameAsWhole(t, p, next)

	// An edited route that does not compile: refused, nothing changes.
	bad := edit(next, "v2", 7, func(r *proxycfg.Route) {
		r.Rules[0].Matches[0].Path = &proxycfg.PathMatch{Type: proxycfg.PathRegex, Value: "(("}
	})
	if _, err := p.Apply(bad); err == nil || !strings.Contains(err.Error(), "ns/r7") {
		t.Fatalf("a broken edit: %v, want an error naming ns/r7", err)
	}
	if p.Version() != "v1" {
		t.Fatalf("serving %q after a refused edit", p.Version())
	}

	// A route renamed is another route: one deleted and one added, a
	// patch too.
	renamed := edit(next, "w1", 3, func(r *proxycfg.Route) { r.Name = "renamed" })
	if how, err := p.Apply(renamed); err != nil || how != proxycfg.AppliedRoutes {
		t.Errorf("a route renamed: %v, %v; want proxycfg.AppliedRoutes", how, err)
	}
	checkSameAsWhole(t, p, renamed)
	// A cluster that kept routes name removed: compiled whole, which
	// refuses it.
	mustLoad(t, p, next)
	gone := edit(next, "w5", 3, func(r *proxycfg.Route) { r.Hostnames = []string{"h1.b.example"} })
	gone.Clusters = slices.Delete(slices.Clone(gone.Clusters), 0, 1)
	if _, err := p.Apply(gone); err == nil || !strings.Contains(err.Error(), `cluster "c0" is not defined`) {
		t.Errorf("a cluster still named removed: %v, want it refused", err)
	}
	// A cluster added, and a route edited to send to it: clusters are
	// matched by name, so a patch too.
	mustLoad(t, p, next)
	addedCluster := edit(next, "w6", 3, func(r *proxycfg.Route) { r.Rules[0].Backends[0].Cluster = "c4" })
	addedCluster.Clusters = append(slices.Clone(addedCluster.Clusters), cluster("c4", "127.0.0.1:1004"))
	if how, err := p.Apply(addedCluster); err != nil || how != proxycfg.AppliedRoutes {
		t.Errorf("a cluster added: %v, %v; want proxycfg.AppliedRoutes", how, err)
	}
	checkSameAsWhole(t, p, addedCluster)

	// A route attached to another listener too: taken out of no list,
	// filed in the other's, where a whole compile files it.
	mustLoad(t, p, next)
	both := edit(next, "w4", 3, func(r *proxycfg.Route) { r.Listeners = []string{"gw/a", "gw/b"} })
	if how, err := p.Apply(both); err != nil || how != proxycfg.AppliedRoutes {
		t.Errorf("a route's listeners changed: %v, %v; want proxycfg.AppliedRoutes", how, err)
	}
	checkSameAsWhole(t, p, both)

	// Not edits in place: compiled whole.
	for name, c := range map[string]*proxycfg.Config{
		"a rule added":   edit(next, "w2", 3, func(r *proxycfg.Route) { r.Rules = append(r.Rules, to("c0")) }),
		"a rule renamed": edit(next, "w3", 3, func(r *proxycfg.Route) { r.Rules[0].Name = "named" }),
	} {
		mustLoad(t, p, next)
		how, err := p.Apply(c)
		if err != nil || how != proxycfg.AppliedAll {
			t.Errorf("%s: %v, %v; want proxycfg.AppliedAll", name, how, err)
		}
		checkSameAsWhole(t, p, c)
	}
}

// Listener changes a patch leaves to a whole compile: those a whole
// compile refuses (reported by it), and those it would not gain on.
func TestListenerChangesCompiledWhole(t *testing.T) {
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Close()
	p.serveView(viewOf(0))
	cfg := patchConfig(40)
	mustLoad(t, p, cfg)
	with := func(version string, change func(c *proxycfg.Config)) *proxycfg.Config {
		next := *cfg
		next.Version = version
		next.Listeners = slices.Clone(cfg.Listeners)
		change(&next)
		return &next
	}
	added := proxycfg.Listener{Name: "gw/c", Hostname: "*.c.example", Port: 80, Protocol: proxycfg.ListenerHTTP}
	for _, c := range []struct {
		name    string
		cfg     *proxycfg.Config
		wantErr string // "": compiled whole, no error
	}{
		{"two listeners of one name", with("w1", func(c *proxycfg.Config) {
			c.Listeners = append(c.Listeners, proxycfg.Listener{Name: "gw/a", Hostname: "*.c.example", Port: 80, Protocol: proxycfg.ListenerHTTP})
		}), `listener "gw/a": defined twice`},
		{"a listener removed that routes name", with("w2", func(c *proxycfg.Config) { c.Listeners = c.Listeners[:1] }), `listener "gw/b" is not defined`},
		{"a listener edited into one refused", with("w3", func(c *proxycfg.Config) { c.Listeners[0].Protocol = "UDP" }), `protocol "UDP" is not HTTP, HTTPS, TCP or TLS`},
		{"a listener edited into one of streams", with("w3", func(c *proxycfg.Config) { c.Listeners[0].Protocol = proxycfg.ListenerTCP }), `listener "gw/a" is TCP, which takes stream routes only`},
		{"a listener added that sockets of their own refuse", with("w4", func(c *proxycfg.Config) {
			l := added
			l.Address = "gw.example"
			c.Listeners = append(c.Listeners, l)
		}), `listener "gw/c": address "gw.example" is not an IP address`},
		{"a listener added with the session keys rotated", with("w5", func(c *proxycfg.Config) {
			c.Listeners = append(c.Listeners, added)
			c.SessionKeys = [][]byte{[]byte("a session key of thirty-two bytes")}
		}), ""},
		{"too many listeners added", with("w6", func(c *proxycfg.Config) {
			for i := range maxEditedRoutes + 1 {
				l := added
				l.Name, l.Hostname = fmt.Sprint("gw/n", i), fmt.Sprintf("*.n%d.example", i)
				c.Listeners = append(c.Listeners, l)
			}
		}), ""},
	} {
		mustLoad(t, p, cfg)
		how, err := p.Apply(c.cfg)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: %v, want an error saying %s", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil || how != proxycfg.AppliedAll {
			t.Errorf("%s: %v, %v; want proxycfg.AppliedAll", c.name, how, err)
		}
		checkSameAsWhole(t, p, c.cfg)
	}
}

// withRoute returns cfg with route r inserted at i; withoutRoute, with
// route i deleted. The other routes are shared.
func withRoute(cfg *proxycfg.Config, version string, i int, r proxycfg.Route) *proxycfg.Config {
	next := *cfg
	next.Version = version
	next.Routes = slices.Insert(slices.Clone(cfg.Routes), i, r)
	return &next
}

func withoutRoute(cfg *proxycfg.Config, version string, i int) *proxycfg.Config {
	next := *cfg
	next.Version = version
	next.Routes = slices.Delete(slices.Clone(cfg.Routes), i, i+1)
	return &next
}

// A route added or deleted is compiled alone, as an edited one is: the
// routes after it are not taken for changed because they moved.
func TestRouteAddDeletePatched(t *testing.T) {
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Close()
	p.serveView(viewOf(0))
	cfg := patchConfig(40)
	mustLoad(t, p, cfg)
	before := p.current.Load()

	added := cfg.Routes[6] // on gw/a
	added.Name, added.Hostnames = "added", []string{"h5.a.example"}
	added.Rules = slices.Clone(added.Rules)
	added.Rules[1].Filters = []proxycfg.Filter{{Type: proxycfg.FilterResponseHeaderModifier, ResponseHeaderModifier: &proxycfg.HeaderModifier{Set: []proxycfg.Header{{Name: "X-Added", Value: "1"}}}}}
	other := added
	other.Name = "other"
	// Each step changes the config the step before gave.
	steps := []struct {
		name   string
		change func(*proxycfg.Config, string) *proxycfg.Config
	}{
		{"added at 3", func(c *proxycfg.Config, v string) *proxycfg.Config { return withRoute(c, v, 3, added) }},
		{"r10 deleted", func(c *proxycfg.Config, v string) *proxycfg.Config { return withoutRoute(c, v, 11) }},
		{"the added one deleted", func(c *proxycfg.Config, v string) *proxycfg.Config { return withoutRoute(c, v, 3) }},
		{"added first", func(c *proxycfg.Config, v string) *proxycfg.Config { return withRoute(c, v, 0, added) }},
		{"another added last", func(c *proxycfg.Config, v string) *proxycfg.Config { return withRoute(c, v, len(c.Routes), other) }},
		{"both deleted, one edited", func(c *proxycfg.Config, v string) *proxycfg.Config {
			c = withoutRoute(withoutRoute(c, v, len(c.Routes)-1), v, 0)
			return edit(c, v, 0, func(r *proxycfg.Route) { r.Hostnames = []string{"h4.a.example"} }) // r0, on gw/a
		}},
		{"added again", func(c *proxycfg.Config, v string) *proxycfg.Config { return withRoute(c, v, 30, added) }},
	}
	served := cfg
	for i, st := range steps {
		served = st.change(served, fmt.Sprint("v", i+1))
		how, err := p.Apply(served)
		if err != nil || how != proxycfg.AppliedRoutes {
			t.Fatalf("%s: Apply: %v, %v; want proxycfg.AppliedRoutes", st.name, how, err)
		}
		checkSameAsWhole(t, p, served)
	}
	if after := p.current.Load(); after.origin[0].vhosts["*.b.example"] != before.origin[0].vhosts["*.b.example"] {
		t.Error("the table of a listener whose routes only moved was built again")
	}
	if got := p.Stats().RoutePatches.Load(); got != int64(len(steps)) {
		t.Errorf("%d patches, want %d", got, len(steps))
	}

	// A deleted route's metrics series go; an added route's come.
	p.mu.Lock()
	_, gone := p.ruleStats[[2]string{"ns/r10", "0"}]
	_, came := p.ruleStats[[2]string{"ns/added", "1"}]
	n := len(p.ruleStats)
	p.mu.Unlock()
	if want := 2 * len(served.Routes); gone || !came || n != want {
		t.Errorf("%d rule series (want %d); the deleted route's present %v, the added one's %v", n, want, gone, came)
	}

	// A route added with a cluster of its own, then deleted with it: the
	// clusters are matched by name too.
	mustLoad(t, p, served)
	withCluster := withRoute(served, "x1", 5, func() proxycfg.Route {
		r := other
		r.Name = "own"
		r.Rules = slices.Clone(r.Rules)
		r.Rules[0].Backends = []proxycfg.BackendRef{{Cluster: "own", Weight: 1}}
		return r
	}())
	withCluster.Clusters = slices.Insert(slices.Clone(served.Clusters), 1, cluster("own", "127.0.0.1:1999"))
	without := withoutRoute(withCluster, "x2", 5)
	without.Clusters = served.Clusters
	for _, c := range []*proxycfg.Config{withCluster, without, withCluster} {
		if how, err := p.Apply(c); err != nil || how != proxycfg.AppliedRoutes {
			t.Fatalf("%s: Apply: %v, %v; want proxycfg.AppliedRoutes", c.Version, how, err)
		}
		checkSameAsWhole(t, p, c)
	}
	if eps := p.slots["own"].state.Load().endpoints(); len(eps) != 1 || eps[0].addr != "127.0.0.1:1999" {
		t.Error("the added cluster has no state")
	}
	// An endpoint change after: the clusters by their IDs, not places.
	moved := *withCluster
	moved.Version = "x3"
	moved.Clusters = slices.Clone(withCluster.Clusters)
	moved.Clusters[1] = cluster("own", "127.0.0.1:1998")
	moved.Clusters[2] = cluster("c1", "127.0.0.1:1997")
	if how, err := p.Apply(&moved); err != nil || how != proxycfg.AppliedClusters {
		t.Fatalf("an endpoint change: %v, %v; want proxycfg.AppliedClusters", how, err)
	}
	for name, addr := range map[string]string{"own": "127.0.0.1:1998", "c1": "127.0.0.1:1997", "c0": "127.0.0.1:1000"} {
		if eps := p.slots[name].state.Load().endpoints(); len(eps) != 1 || eps[0].addr != addr {
			t.Errorf("cluster %s: endpoints %v, want %s", name, eps, addr)
		}
	}
	checkSameAsWhole(t, p, &moved)

	// Not patches: compiled whole.
	for name, c := range map[string]*proxycfg.Config{
		"routes reordered": func() *proxycfg.Config {
			c := withoutRoute(cfg, "w1", 0)
			c.Routes = append(c.Routes, cfg.Routes[0])
			c.Routes[0], c.Routes[1] = c.Routes[1], c.Routes[0]
			return c
		}(),
		"an added route on no listener": withRoute(cfg, "w2", 1, func() proxycfg.Route { r := added; r.Listeners = []string{"gw/none"}; return r }()),
		"two routes of one identity":    withRoute(cfg, "w3", 1, cfg.Routes[5]),
	} {
		mustLoad(t, p, cfg)
		how, err := p.Apply(c)
		if name == "an added route on no listener" {
			if err == nil || !strings.Contains(err.Error(), "gw/none") {
				t.Errorf("%s: %v, want an error naming the listener", name, err)
			}
			continue
		}
		if err != nil || how != proxycfg.AppliedAll {
			t.Errorf("%s: %v, %v; want proxycfg.AppliedAll", name, how, err)
		}
		checkSameAsWhole(t, p, c)
	}
}

// FuzzRoutePatch edits routes and listeners as the fuzzer's bytes say,
// applying each config to one proxy (which patches where it can) and
// checking it serves what a whole compile of that config serves, on
// every view: the origin's, ports 80, 443 and 8080, and sockets of their
// own. Each pair of bytes is an operation and its argument; an operation
// byte whose tens digit is 3 mod 4 (30-39, 70-79, ...) changes listeners,
// any other routes. A trailing odd byte places listeners by port
// (Options.ListenerPorts) instead of by address.
func FuzzRoutePatch(f *testing.F) {
	f.Add([]byte{0, 3, 1, 5, 2, 7, 3, 9, 4, 11})
	f.Add([]byte{5, 0, 5, 1, 0, 0, 1, 1})
	f.Add([]byte{6, 3, 7, 5, 0, 3, 6, 0, 7, 11, 2, 4})
	f.Add([]byte{8, 3, 8, 0, 7, 3, 9, 1, 2, 5, 8, 9})
	// Listeners added, removed, edited, reordered and renamed, routes
	// moved between them, by address and by port.
	f.Add([]byte{30, 2, 33, 3, 34, 1, 32, 17, 31, 0, 0, 4})
	f.Add([]byte{37, 2, 38, 5, 36, 0, 39, 1, 1, 3, 35, 0})
	f.Add([]byte{37, 26, 37, 40, 34, 2, 32, 99, 6, 1, 31, 1, 1})
	f.Add([]byte{30, 60, 30, 130, 38, 3, 33, 2, 36, 1, 32, 200, 7, 2})
	f.Add([]byte{35, 1, 30, 4, 33, 2, 39, 2, 35, 2, 8, 2, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 24 {
			return
		}
		byPort := len(ops)%2 == 1 && ops[len(ops)-1]%2 == 1
		p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ListenerPorts: byPort})
		defer p.Close()
		p.serveView(viewSet{origin: true, ports: map[int]bool{80: true, 443: true, 8080: true}, gateways: true})
		cfg := patchConfig(12)
		mustLoad(t, p, cfg)
		for i := 0; i+1 < len(ops); i += 2 {
			at := int(ops[i+1]) % len(cfg.Routes)
			v := fmt.Sprint("v", i)
			served := cfg
			if ops[i]/10%4 == 3 {
				cfg = changeListeners(t, cfg, v, i, ops[i]%10, ops[i+1], at)
			} else {
				cfg = changeRoutes(cfg, v, i, ops[i]%10, ops[i+1], at)
			}
			if _, err := p.Apply(cfg); err != nil {
				// Refused: as a whole compile refuses it, and nothing
				// changed.
				whole := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ListenerPorts: byPort})
				werr := whole.Load(cfg)
				whole.Close()
				if werr == nil || werr.Error() != err.Error() {
					t.Fatalf("refused with %v; a whole compile says %v", err, werr)
				}
				cfg = served
			}
			checkSameAsWhole(t, p, cfg)
		}
	})
}

// changeRoutes returns cfg with route at (or a route at at) changed as op
// (0-9) says, for FuzzRoutePatch's step i.
func changeRoutes(cfg *proxycfg.Config, v string, i int, op, arg byte, at int) *proxycfg.Config {
	switch op {
	case 8: // a route added with a cluster of its own
		r := cfg.Routes[at]
		r.Name = fmt.Sprint("own-", i)
		r.Rules = slices.Clone(r.Rules)
		r.Rules[1].Backends = []proxycfg.BackendRef{{Cluster: r.Name, Weight: 1}}
		cfg = withRoute(cfg, v, at, r)
		cfg.Clusters = slices.Insert(slices.Clone(cfg.Clusters), int(arg)%len(cfg.Clusters), cluster(r.Name, fmt.Sprintf("127.0.0.1:%d", 2000+i)))
	case 9: // a route deleted with the cluster of its own it has, unless a copy names it
		if len(cfg.Routes) > 1 {
			name := cfg.Routes[at].Name
			cfg = withoutRoute(cfg, v, at)
			named := slices.ContainsFunc(cfg.Routes, func(r proxycfg.Route) bool {
				return slices.ContainsFunc(r.Rules, func(ru proxycfg.Rule) bool {
					return slices.ContainsFunc(ru.Backends, func(b proxycfg.BackendRef) bool { return b.Cluster == name })
				})
			})
			if !named {
				cfg.Clusters = slices.DeleteFunc(slices.Clone(cfg.Clusters), func(c proxycfg.Cluster) bool { return c.Name == name })
			}
		}
	case 6:
		r := cfg.Routes[at]
		r.Name = fmt.Sprint("added-", i)
		l := "a"
		if len(r.Listeners) > 0 {
			l = strings.TrimPrefix(r.Listeners[0], "gw/")
		}
		r.Hostnames = []string{fmt.Sprintf("h%d.%s.example", i%6, l)}
		cfg = withRoute(cfg, v, at, r)
	case 7:
		if len(cfg.Routes) > 1 {
			cfg = withoutRoute(cfg, v, at)
		}
	case 0:
		cfg = edit(cfg, v, at, func(r *proxycfg.Route) {
			r.Rules[0].Matches[0].Path = &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: fmt.Sprint("/p", i%4)}
		})
	case 1:
		cfg = edit(cfg, v, at, func(r *proxycfg.Route) { r.Hostnames = []string{fmt.Sprintf("h%d.a.example", i%6)} })
	case 2:
		cfg = edit(cfg, v, at, func(r *proxycfg.Route) { r.Rules[1].Backends[0].Cluster = fmt.Sprint("c", i%4) })
	case 3:
		cfg = edit(cfg, v, at, func(r *proxycfg.Route) {
			r.Rules[0].Matches = append(r.Rules[0].Matches, proxycfg.Match{Path: &proxycfg.PathMatch{Type: proxycfg.PathExact, Value: "/q"}})
		})
	case 4:
		cfg = edit(cfg, v, at, func(r *proxycfg.Route) { r.Rules[1].FailStatus = 503 })
	case 5:
		cfg = edit(cfg, v, at, func(r *proxycfg.Route) { r.Created = r.Created.Add(-time.Hour) })
	}
	return cfg
}

// changeListeners returns cfg with its listeners, and the routes
// attached to them, changed as op (0-9) says, for FuzzRoutePatch's step
// i: arg picks a listener and its fields, at a route.
func changeListeners(t *testing.T, cfg *proxycfg.Config, v string, i int, op, arg byte, at int) *proxycfg.Config {
	next := *cfg
	next.Version = v
	next.Listeners = slices.Clone(cfg.Listeners)
	n := len(next.Listeners)
	pick := int(arg) % n
	name := next.Listeners[pick].Name
	move := func(ri int, to ...string) {
		next.Routes = slices.Clone(next.Routes)
		next.Routes[ri].Listeners = to
	}
	// detach takes listener ln out of every route's listeners.
	detach := func(ln string) {
		for ri := range next.Routes {
			if slices.Contains(next.Routes[ri].Listeners, ln) {
				move(ri, slices.DeleteFunc(slices.Clone(next.Routes[ri].Listeners), func(s string) bool { return s == ln })...)
			}
		}
	}
	switch op {
	case 0: // a listener added
		next.Listeners = slices.Insert(next.Listeners, int(arg)%(n+1), fuzzListener(t, fmt.Sprint("gw/n", i), arg))
	case 1: // a listener removed, its routes detached from it
		if n > 1 {
			next.Listeners = slices.Delete(next.Listeners, pick, pick+1)
			detach(name)
		}
	case 2: // a listener edited: its hostname, port, protocol, address, TLS or slashes
		next.Listeners[pick] = fuzzListener(t, name, arg*7+byte(i))
	case 3: // a route moved to a listener
		move(at, name)
	case 4: // a route attached to a listener too, or detached from it
		ls := next.Routes[at].Listeners
		if slices.Contains(ls, name) {
			detach(name)
		} else {
			move(at, append(slices.Clone(ls), name)...)
		}
	case 5: // a listener removed, its routes left naming it: refused unless none does
		if n > 1 {
			next.Listeners = slices.Delete(next.Listeners, pick, pick+1)
		}
	case 6: // two listeners swapped
		next.Listeners[pick], next.Listeners[(pick+1)%n] = next.Listeners[(pick+1)%n], next.Listeners[pick]
	case 7: // a listener added with a route moved onto it, under a hostname of it
		l := fuzzListener(t, fmt.Sprint("gw/n", i), arg)
		next.Listeners = append(next.Listeners, l)
		move(at, l.Name)
		next.Routes[at].Hostnames = []string{hostOf(l, i)}
	case 8: // a route moved to a listener and edited
		move(at, name)
		next.Routes[at].Hostnames = []string{hostOf(next.Listeners[pick], i)}
		next.Routes[at].Rules = slices.Clone(next.Routes[at].Rules)
		next.Routes[at].Rules[1].FailStatus = 500 + i
	case 9: // a listener renamed: another identity, its routes moved to it
		next.Listeners[pick].Name = fmt.Sprint("gw/r", i)
		for ri := range next.Routes {
			if ls := next.Routes[ri].Listeners; slices.Contains(ls, name) {
				ls = slices.Clone(ls)
				ls[slices.Index(ls, name)] = next.Listeners[pick].Name
				move(ri, ls...)
			}
		}
	}
	return &next
}

// hostOf is a hostname listener l serves, for step i.
func hostOf(l proxycfg.Listener, i int) string {
	switch {
	case l.Hostname == "":
		return fmt.Sprintf("h%d.d.example", i%6)
	case strings.HasPrefix(l.Hostname, "*."):
		return fmt.Sprintf("h%d.%s", i%6, l.Hostname[2:])
	}
	return l.Hostname
}

// fuzzListener is a listener named name with fields b picks: its
// hostname, port, protocol, address, certificate, client validation and
// encoded slashes. HTTPS listeners are on 443 or 8443, HTTP ones on 80 or
// 8080; an HTTPS one always has a certificate, so it is refused only
// where its socket's listeners disagree.
func fuzzListener(t *testing.T, name string, b byte) proxycfg.Listener {
	hosts := []string{"*.a.example", "*.b.example", "*.c.example", "h1.c.example", "", "h2.a.example"}
	l := proxycfg.Listener{Name: name, Hostname: hosts[b%6], Protocol: proxycfg.ListenerHTTP, Port: []int{80, 8080}[b/6%2]}
	switch b / 12 % 4 {
	case 1:
		l.Address = "127.0.0.1"
	case 2, 3:
		certs := fuzzCerts(t)
		l.Protocol, l.Port = proxycfg.ListenerHTTPS, []int{443, 8443}[b/6%2]
		c := certs[b/12%2]
		l.Certificates = []proxycfg.Certificate{{Cert: c.cert, Key: c.key}}
		if b/48%2 == 1 {
			l.Address = "127.0.0.2"
		}
		if b/12%4 == 3 {
			l.ClientValidation = &proxycfg.ClientValidation{CACertificates: certs[0].cert, AllowInsecureFallback: b/48%2 == 1}
		}
	}
	l.EncodedSlashes = []string{"", proxycfg.SlashesDecode, proxycfg.SlashesKeep}[b/96%3]
	return l
}

type fuzzCert struct{ cert, key string }

var fuzzCertsOnce = sync.OnceValues(func() ([2]fuzzCert, error) {
	var out [2]fuzzCert
	for i, host := range []string{"one.example", "two.example"} {
		cert, key, _, err := generateOriginCert([]string{host}, time.Now())
		if err != nil {
			return out, err
		}
		out[i] = fuzzCert{string(cert), string(key)}
	}
	return out, nil
})

// fuzzCerts are two certificates with their keys, made once.
func fuzzCerts(t *testing.T) [2]fuzzCert {
	certs, err := fuzzCertsOnce()
	if err != nil {
		t.Fatal(err)
	}
	return certs
}

// An HTTPRoute and a GRPCRoute of one namespace and name are two routes
// (a route's identity has its kind): editing, deleting, adding one or
// moving it between listeners leaves the other's rules where they are,
// and what is served is what a whole compile serves.
func TestRoutesOfOneNameAndTwoKindsPatched(t *testing.T) {
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Close()
	p.serveView(viewOf(0))
	cfg := patchConfig(4)
	g := cfg.Routes[0] // ns/r0, on gw/a, host h0.a.example
	g.Kind = proxycfg.KindGRPC
	g.Rules = []proxycfg.Rule{{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/q"}}},
		Backends: []proxycfg.BackendRef{{Cluster: "c3", Weight: 1}}}}
	cfg.Routes = append(cfg.Routes, g)
	mustLoad(t, p, cfg)
	grpc := func(what string) {
		t.Helper()
		tg, ok := pickListener(p.current.Load().origin[0], "h0.a.example").table.Match(&matcher.Request{Host: "h0.a.example", Path: "/q", Method: "GET", Header: http.Header{}})
		if !ok || tg.Rule.Route != "ns/r0" || tg.Rule.Index != 0 || len(tg.Rule.Backends) != 1 || p.current.Load().clusters[tg.Rule.Backends[0].Cluster].name != "c3" {
			t.Fatalf("%s: /q is no longer the GRPCRoute's (ok %v)", what, ok)
		}
	}
	grpc("loaded")
	steps := []struct {
		name   string
		change func(*proxycfg.Config, string) *proxycfg.Config
	}{
		{"the HTTPRoute edited", func(c *proxycfg.Config, v string) *proxycfg.Config {
			return edit(c, v, 0, func(r *proxycfg.Route) { r.Rules[0].Backends[0].Cluster = "c2" })
		}},
		{"the HTTPRoute deleted", func(c *proxycfg.Config, v string) *proxycfg.Config { return withoutRoute(c, v, 0) }},
		{"the HTTPRoute added again", func(c *proxycfg.Config, v string) *proxycfg.Config { return withRoute(c, v, 0, cfg.Routes[0]) }},
		{"the HTTPRoute moved to the other listener", func(c *proxycfg.Config, v string) *proxycfg.Config {
			return edit(c, v, 0, func(r *proxycfg.Route) { r.Listeners, r.Hostnames = []string{"gw/b"}, []string{"h0.b.example"} })
		}},
		{"the HTTPRoute on both listeners", func(c *proxycfg.Config, v string) *proxycfg.Config {
			return edit(c, v, 0, func(r *proxycfg.Route) {
				r.Listeners, r.Hostnames = []string{"gw/b", "gw/a"}, []string{"h0.a.example", "h0.b.example"}
			})
		}},
	}
	served := cfg
	for i, st := range steps {
		served = st.change(served, fmt.Sprint("v", i+1))
		if how, err := p.Apply(served); err != nil || how != proxycfg.AppliedRoutes {
			t.Fatalf("%s: Apply: %v, %v; want AppliedRoutes", st.name, how, err)
		}
		checkSameAsWhole(t, p, served)
		grpc(st.name)
	}
}
