package configwatch

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// benchDocument is a document of routes routes over listeners wildcard
// listeners, one three-endpoint cluster each (the shape of
// ctrl/configserver's benchmark, with 50 listeners), whose cluster 0 has
// endpoint port.
func benchDocument(routes, listeners, port int) *Document {
	cfg := proxycfg.Config{Schema: proxycfg.SchemaVersion, Version: fmt.Sprint("v", port)}
	for g := range listeners {
		cfg.Listeners = append(cfg.Listeners, proxycfg.Listener{Protocol: proxycfg.ListenerHTTP, Name: fmt.Sprintf("gw-%d", g), Hostname: fmt.Sprintf("*.g%d.example.com", g)})
	}
	for r := range routes {
		name := fmt.Sprintf("team-%d/app-%d:80", r%100, r)
		cfg.Routes = append(cfg.Routes, proxycfg.Route{
			Kind:      proxycfg.KindHTTP,
			Namespace: fmt.Sprintf("team-%d", r%100), Name: fmt.Sprintf("app-%d", r), Created: time.Unix(int64(r), 0),
			Listeners: []string{fmt.Sprintf("gw-%d", r%listeners)}, Hostnames: []string{fmt.Sprintf("app-%d.g%d.example.com", r, r%listeners)},
			Rules: []proxycfg.Rule{
				{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/api"},
					Headers: []proxycfg.ValueMatch{{Type: proxycfg.MatchExact, Name: "x-canary", Value: "1"}}}},
					Backends: []proxycfg.BackendRef{{Cluster: name, Weight: 1}}},
				{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}, Backends: []proxycfg.BackendRef{{Cluster: name, Weight: 1}}},
			},
		})
		c := proxycfg.Cluster{Protocol: proxycfg.ProtoHTTP1, Name: name}
		for e := range 3 {
			c.Endpoints = append(c.Endpoints, proxycfg.Endpoint{Address: fmt.Sprintf("10.%d.%d.%d:8080", 1+r/65000, (r/250)%256, 1+e+(r%250))})
		}
		cfg.Clusters = append(cfg.Clusters, c)
	}
	cfg.Clusters[0].Endpoints = slices.Clone(cfg.Clusters[0].Endpoints)
	cfg.Clusters[0].Endpoints[0].Address = fmt.Sprintf("10.255.0.1:%d", port)
	return &Document{Version: cfg.Version, RoutesHash: "routes", ClustersHash: cfg.Version, Config: cfg}
}

// BenchmarkApply is the proxy's side of a change at 5,000 routes over 50
// listeners, each op going back and forth between two documents: an
// endpoint changed, which the proxy applies by replacing the changed
// cluster (clusters); a route edited in place, which it compiles alone,
// updating its listener's table (route); the same with every route on
// one listener, whose table holds all 5,000 (route/listeners=1); a route
// added to an existing cluster and deleted again, which it compiles alone
// (add); the same with a cluster of its own (add/cluster); a listener
// added with one route moved onto it, which it compiles alone too,
// building the new listener's table and updating the old one's
// (listener); the session keys rotated with an endpoint changed, for
// which it compiles the whole config (full).
func BenchmarkApply(b *testing.B) {
	for _, mode := range []string{"clusters", "route", "route/listeners=1", "add", "add/cluster", "listener", "full"} {
		listeners := 50
		if mode == "route/listeners=1" {
			listeners = 1
		}
		docs := [2]*Document{benchDocument(5000, listeners, 1), benchDocument(5000, listeners, 2)}
		switch mode {
		case "route", "route/listeners=1":
			docs[1] = withEditedRoute(docs[0])
		case "add":
			docs[1] = withAddedRoute(docs[0], false)
		case "add/cluster":
			docs[1] = withAddedRoute(docs[0], true)
		case "listener":
			docs[1] = withAddedListener(docs[0], 2500)
		case "full":
			docs[0], docs[1] = withSessionKeys(docs[0], "old"), withSessionKeys(docs[1], "new", "old")
		}
		b.Run("routes=5000/"+mode, func(b *testing.B) {
			p := dataplane.New(dataplane.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			defer p.Close()
			// The proxy serves the origin listener, as behind cloudflared: a
			// proxy that serves no socket files its routes into no view.
			p.Handler(0, true)
			c := &Client{p: p, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if _, err := c.apply(docs[1]); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				kind, err := c.apply(docs[i&1])
				if err != nil || kind != map[string]LoadKind{"clusters": LoadClusters, "route": LoadRoutes, "route/listeners=1": LoadRoutes, "add": LoadRoutes, "add/cluster": LoadRoutes, "listener": LoadRoutes, "full": LoadFull}[mode] {
					b.Fatalf("apply: %v, %v", kind, err)
				}
				i++
			}
		})
	}
}

// withEditedRoute is doc with its first route's first rule setting a
// response header.
func withEditedRoute(doc *Document) *Document {
	next := *doc
	next.Config.Routes = slices.Clone(doc.Config.Routes)
	r := &next.Config.Routes[0]
	r.Rules = slices.Clone(r.Rules)
	r.Rules[0].Filters = []proxycfg.Filter{{Type: proxycfg.FilterResponseHeaderModifier,
		ResponseHeaderModifier: &proxycfg.HeaderModifier{Set: []proxycfg.Header{{Name: "X-Op", Value: "1"}}}}}
	next.Version += "-edited"
	next.Config.Version = next.Version
	return &next
}

// withAddedRoute is doc with a route more, a copy of its 2,500th under
// another name, inserted before it; with a cluster of its own, inserted
// likewise, when ownCluster.
func withAddedRoute(doc *Document, ownCluster bool) *Document {
	next := *doc
	const at = 2500
	r := doc.Config.Routes[at]
	r.Name += "-copy"
	if ownCluster {
		c := doc.Config.Clusters[at]
		c.Name += "-copy"
		r.Rules = slices.Clone(r.Rules)
		for i := range r.Rules {
			r.Rules[i].Backends = []proxycfg.BackendRef{{Cluster: c.Name, Weight: 1}}
		}
		next.Config.Clusters = slices.Insert(slices.Clone(doc.Config.Clusters), at, c)
	}
	next.Config.Routes = slices.Insert(slices.Clone(doc.Config.Routes), at, r)
	next.Version += "-added"
	next.Config.Version = next.Version
	return &next
}

// withAddedListener is doc with a listener more, and its route at moved
// attached to that listener alone, under a hostname of it.
func withAddedListener(doc *Document, moved int) *Document {
	next := *doc
	next.Config.Listeners = append(slices.Clone(doc.Config.Listeners), proxycfg.Listener{Protocol: proxycfg.ListenerHTTP, Name: "added", Hostname: "*.added.example.com"})
	next.Config.Routes = slices.Clone(doc.Config.Routes)
	r := &next.Config.Routes[moved]
	r.Listeners, r.Hostnames = []string{"added"}, []string{fmt.Sprintf("app-%d.added.example.com", moved)}
	next.Version += "-listener"
	next.Config.Version = next.Version
	return &next
}

// withSessionKeys is doc with the session keys named, each a 32-byte key
// made of its name.
func withSessionKeys(doc *Document, names ...string) *Document {
	next := *doc
	next.Config.SessionKeys = nil
	for _, n := range names {
		next.Config.SessionKeys = append(next.Config.SessionKeys, []byte(fmt.Sprintf("%-32s", n)))
	}
	next.Version += "-keys"
	next.Config.Version = next.Version
	return &next
}
