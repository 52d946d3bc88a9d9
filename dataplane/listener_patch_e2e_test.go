// This file tests, through the proxy's sockets, listener changes applied as patches.

package dataplane

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// listenerRoute is a route named name on listeners ls, sending every
// path under prefix to cluster name.
func listenerRoute(name, prefix string, ls ...string) proxycfg.Route {
	r := route(name, proxycfg.Rule{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: prefix}}},
		Backends: []proxycfg.BackendRef{{Cluster: name, Weight: 1}}})
	r.Namespace, r.Listeners, r.Created = "default", ls, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return r
}

// A listener added with a route on it is served once the patch is
// applied, one whose hostname is edited takes its traffic to the new
// hostname, one removed is served no more, and a route moved between
// listeners follows; the vhosts of the listeners left alone are kept,
// table and all, and nothing is compiled whole.
func TestListenerChangesPatched(t *testing.T) {
	backends := map[string]string{}
	var clusters []proxycfg.Cluster
	for _, name := range []string{"a", "b", "c", "moved"} {
		backends[name] = startBackend(t, echo(name))
		clusters = append(clusters, cluster(name, backends[name]))
	}
	base := &proxycfg.Config{Schema: proxycfg.SchemaVersion, Version: "v1",
		Listeners: []proxycfg.Listener{
			{Name: "gw/a", Hostname: "*.a.example", Port: 80, Protocol: proxycfg.ListenerHTTP},
			{Name: "gw/b", Hostname: "*.b.example", Port: 80, Protocol: proxycfg.ListenerHTTP},
		},
		Routes:   []proxycfg.Route{listenerRoute("a", "/", "gw/a"), listenerRoute("b", "/", "gw/b"), listenerRoute("moved", "/m", "gw/b")},
		Clusters: clusters,
	}
	e := newTestEnv(t, base)
	// want is the backend (or status) of each "host/path".
	backendOf := func(hostPath string) string {
		t.Helper()
		host, path, _ := strings.Cut(hostPath, "/")
		res, body := e.get(host, "/"+path)
		if res.StatusCode != http.StatusOK {
			return strconv.Itoa(res.StatusCode)
		}
		return echoed(body, "backend")
	}
	expect := func(when string, want map[string]string) {
		t.Helper()
		for hostPath, backend := range want {
			if got := backendOf(hostPath); got != backend {
				t.Errorf("%s: %s went to %q, want %q", when, hostPath, got, backend)
			}
		}
	}
	expect("loaded", map[string]string{"x.a.example/m": "a", "x.b.example/x": "b", "x.b.example/m": "moved", "x.c.example/m": "404"})

	vhostOf := func(host string) *vhost { return e.p.current.Load().origin[0].vhosts[host] }
	apply := func(cfg *proxycfg.Config, kept ...string) {
		t.Helper()
		before := map[string]*vhost{}
		for _, h := range kept {
			before[h] = vhostOf(h)
		}
		patches := e.p.Stats().RoutePatches.Load()
		how, err := e.p.Apply(cfg)
		if err != nil || how != proxycfg.AppliedRoutes || e.p.Stats().RoutePatches.Load() != patches+1 {
			t.Fatalf("%s: Apply: %v, %v; want proxycfg.AppliedRoutes", cfg.Version, how, err)
		}
		for _, h := range kept {
			if vhostOf(h) == nil || vhostOf(h) != before[h] {
				t.Errorf("%s: the vhost of %s, whose listener did not change, was built again", cfg.Version, h)
			}
		}
		checkSameAsWhole(t, e.p, cfg)
	}
	change := func(from *proxycfg.Config, version string, edit func(c *proxycfg.Config)) *proxycfg.Config {
		next := *from
		next.Version = version
		next.Listeners, next.Routes = slices.Clone(from.Listeners), slices.Clone(from.Routes)
		edit(&next)
		return &next
	}

	// A listener added, a route added on it and another moved onto it.
	added := change(base, "v2", func(c *proxycfg.Config) {
		c.Listeners = append(c.Listeners, proxycfg.Listener{Name: "gw/c", Hostname: "*.c.example", Port: 80, Protocol: proxycfg.ListenerHTTP})
		c.Routes = append(c.Routes, listenerRoute("c", "/", "gw/c"))
		c.Routes[2].Listeners = []string{"gw/c"}
	})
	apply(added, "*.a.example")
	expect("a listener added", map[string]string{"x.a.example/m": "a", "x.b.example/m": "b", "x.c.example/m": "moved", "x.c.example/x": "c"})

	// Its hostname edited: its traffic moves, the others' stays.
	edited := change(added, "v3", func(c *proxycfg.Config) { c.Listeners[2].Hostname = "*.d.example" })
	apply(edited, "*.a.example", "*.b.example")
	expect("a listener's hostname edited", map[string]string{"x.a.example/m": "a", "x.b.example/m": "b", "x.c.example/m": "404", "x.d.example/m": "moved", "x.d.example/x": "c"})

	// Removed with its own route, the route moved onto it moved back.
	removed := change(edited, "v4", func(c *proxycfg.Config) {
		c.Listeners = c.Listeners[:2]
		c.Routes = c.Routes[:3]
		c.Routes[2].Listeners = []string{"gw/b"}
	})
	apply(removed, "*.a.example")
	expect("a listener removed", map[string]string{"x.a.example/m": "a", "x.b.example/x": "b", "x.b.example/m": "moved", "x.d.example/m": "404", "x.d.example/x": "404"})
	if vhostOf("*.d.example") != nil {
		t.Error("the removed listener's vhost is still served")
	}
	if got := e.p.Stats().ConfigLoaded.Load(); got != 1 {
		t.Errorf("%d whole loads, want 1 (the first)", got)
	}
}

// A listener added on a Gateway address of its own opens that socket
// when the patch is applied, and its removal closes it, while the other
// Gateway's socket keeps serving.
func TestGatewayListenerPatched(t *testing.T) {
	a, b := startBackend(t, echo("a")), startBackend(t, echo("b"))
	port := freePort(t)
	listener := func(addr string) proxycfg.Listener {
		return proxycfg.Listener{Protocol: proxycfg.ListenerHTTP, Name: "gw-" + addr + "/http", Port: port, Address: addr}
	}
	one := routeEach([]proxycfg.Listener{listener("127.0.0.2")}, map[string]string{"gw-127.0.0.2/http": a})
	two := routeEach([]proxycfg.Listener{listener("127.0.0.2"), listener("127.0.0.3")}, map[string]string{"gw-127.0.0.2/http": a, "gw-127.0.0.3/http": b})
	two.Version = "two"
	// Routes and clusters of the kept Gateway, so that the route and
	// cluster deleted with a listener are less than a quarter of the rules
	// and clusters (past that, a whole compile numbers them afresh).
	for i := range 4 {
		r := listenerRoute(fmt.Sprint("filler-", i), "/filler", "gw-127.0.0.2/http")
		one.Routes, two.Routes = append(one.Routes, r), append(two.Routes, r)
		c := cluster(r.Name, a)
		one.Clusters, two.Clusters = append(one.Clusters, c), append(two.Clusters, c)
	}
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	mustLoad(t, p, one)
	serveGateways(t, p, ServeOptions{})
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(addr string) (string, error) {
		return backendAt(client, "http://"+net.JoinHostPort(addr, strconv.Itoa(port))+"/x", "")
	}
	for _, step := range []struct {
		cfg  *proxycfg.Config
		want map[string]string // backend by address; "" for a socket closed
	}{
		{two, map[string]string{"127.0.0.2": "a", "127.0.0.3": "b"}},
		{one, map[string]string{"127.0.0.2": "a", "127.0.0.3": ""}},
	} {
		if how, err := p.Apply(step.cfg); err != nil || how != proxycfg.AppliedRoutes {
			t.Fatalf("%s: Apply: %v, %v; want proxycfg.AppliedRoutes", step.cfg.Version, how, err)
		}
		for addr, want := range step.want {
			if want == "" {
				waitFor(t, addr+" closed", func() bool { _, err := get(addr); return err != nil })
				continue
			}
			if got, err := get(addr); err != nil || got != want {
				t.Errorf("%s: %s: backend %q, %v; want %q", step.cfg.Version, addr, got, err, want)
			}
		}
	}
}
