package dataplane

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
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

// decisions describes what cc decides for a set of requests: the rule
// that takes each (route, index, ID, backends, what it answers), or none.
func decisions(cc *compiledConfig) []string {
	var out []string
	for _, l := range []string{"a", "b", "c"} {
		for h := range 6 {
			for _, path := range []string{"/", "/p0", "/p1/x", "/p2", "/q"} {
				for _, canary := range []string{"", "1"} {
					host := fmt.Sprintf("h%d.%s.example", h, l)
					hdr := http.Header{}
					if canary != "" {
						hdr.Set("X-Canary", canary)
					}
					d := host + path + "?" + canary + " → "
					vh := pickListener(cc.origin[0], host)
					var t *matcher.Table[*compiled.Target]
					if vh != nil {
						t = vh.table
					}
					if t == nil {
						out = append(out, d+"no table")
						continue
					}
					tg, ok := t.Match(&matcher.Request{Host: host, Path: path, Method: "GET", Header: hdr})
					if !ok {
						out = append(out, d+"none")
						continue
					}
					ru := tg.Rule
					d += fmt.Sprintf("%s[%d] id %d fail %d redirect %v plan %v:", ru.Route, ru.Index, ru.ID, ru.FailStatus, tg.Redirect != nil, ru.RespPlan != nil)
					for _, b := range ru.Backends {
						d += fmt.Sprintf(" cluster %d weight %d status %d plans %v %v", b.Cluster, b.CumWeight, b.Status, b.ReqPlan != nil, b.RespPlan != nil)
					}
					out = append(out, d)
				}
			}
		}
	}
	return out
}

// checkSameAsWhole holds what p serves to what a proxy given cfg whole
// serves.
func checkSameAsWhole(t *testing.T, p *Proxy, cfg *proxycfg.Config) {
	t.Helper()
	whole := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer whole.Close()
	whole.serveView(viewOf(0))
	mustLoad(t, whole, cfg)
	got, want := decisions(p.current.Load()), decisions(whole.current.Load())
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
	if err != nil || how != AppliedRoutes {
		t.Fatalf("Apply: %v, %v; want AppliedRoutes", how, err)
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

	// Not edits in place: compiled whole.
	for name, c := range map[string]*proxycfg.Config{
		"a route renamed":   edit(next, "w1", 3, func(r *proxycfg.Route) { r.Name = "renamed" }),
		"a rule added":      edit(next, "w2", 3, func(r *proxycfg.Route) { r.Rules = append(r.Rules, to("c0")) }),
		"a rule renamed":    edit(next, "w3", 3, func(r *proxycfg.Route) { r.Rules[0].Name = "named" }),
		"listeners changed": edit(next, "w4", 3, func(r *proxycfg.Route) { r.Listeners = []string{"gw/a", "gw/b"} }),
		"a cluster added": func() *proxycfg.Config {
			c := edit(next, "w5", 3, func(r *proxycfg.Route) { r.Rules[0].Backends[0].Cluster = "c4" })
			c.Clusters = append(slices.Clone(c.Clusters), cluster("c4", "127.0.0.1:1004"))
			return c
		}(),
	} {
		how, err := p.Apply(c)
		if err != nil || how != AppliedAll {
			t.Errorf("%s: %v, %v; want AppliedAll", name, how, err)
		}
		checkSameAsWhole(t, p, c)
	}
}

// FuzzRoutePatch edits routes as the fuzzer's bytes say, applying each
// config to one proxy (which patches where it can) and checking it serves
// what a whole compile of that config serves.
func FuzzRoutePatch(f *testing.F) {
	f.Add([]byte{0, 3, 1, 5, 2, 7, 3, 9, 4, 11})
	f.Add([]byte{5, 0, 5, 1, 0, 0, 1, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 24 {
			return
		}
		p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		defer p.Close()
		p.serveView(viewOf(0))
		cfg := patchConfig(12)
		mustLoad(t, p, cfg)
		for i := 0; i+1 < len(ops); i += 2 {
			at := int(ops[i+1]) % len(cfg.Routes)
			v := fmt.Sprint("v", i)
			switch ops[i] % 6 {
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
			if _, err := p.Apply(cfg); err != nil {
				t.Fatal(err)
			}
			checkSameAsWhole(t, p, cfg)
		}
	})
}
