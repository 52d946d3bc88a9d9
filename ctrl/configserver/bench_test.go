package configserver

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// BenchmarkPublish is the controller's cost of publishing a translation
// at 5,000 routes (the shape of ctrl/translate's benchmark):
//
//   - endpoints: the common change, one cluster's endpoints, with the
//     Listeners and Routes slices shared with the last translation as
//     translate's patch shares them; only the clusters are encoded.
//   - route: one route's rule changed, as translate's patch leaves it: a
//     new Routes slice whose other routes share their slices with the
//     last; that route is encoded, and the clusters as for endpoints.
//   - add: a route and its cluster added in the middle of the lists
//     (and removed, alternately), the rest shared: a one-route add or
//     delete, which shifts every element after it.
//   - rebuilt: every slice and element new (a full translation) with
//     one endpoint changed: what is encoded again depends on how Publish
//     tells an element is unchanged.
//   - everything: every slice and element new and every element
//     different: the whole config is encoded and hashed.
//   - unchanged: the same config again (a resync): nothing is encoded.
//
// Each iteration alternates between two configs, so every one publishes
// a new version except in "unchanged".
func BenchmarkPublish(b *testing.B) {
	const routes = 5000
	base := scaleConfig(routes)
	b.Run(fmt.Sprintf("routes=%d/endpoints", routes), func(b *testing.B) {
		cfgs := [2]*proxycfg.Config{withEndpoint(base, 100, "10.200.0.1:8080"), withEndpoint(base, 100, "10.200.0.2:8080")}
		benchPublish(b, cfgs)
	})
	b.Run(fmt.Sprintf("routes=%d/route", routes), func(b *testing.B) {
		var cfgs [2]*proxycfg.Config
		for i, v := range []string{"/v1", "/v2"} {
			c := *base
			c.Routes = slices.Clone(base.Routes)
			c.Routes[100].Rules = slices.Clone(c.Routes[100].Rules)
			c.Routes[100].Rules[0].Matches = []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: v}}}
			c.Clusters = slices.Clone(base.Clusters)
			cfgs[i] = &c
		}
		benchPublish(b, cfgs)
	})
	b.Run(fmt.Sprintf("routes=%d/add", routes), func(b *testing.B) {
		benchPublish(b, [2]*proxycfg.Config{base, withAddedRoute(base, routes/2)})
	})
	b.Run(fmt.Sprintf("routes=%d/rebuilt", routes), func(b *testing.B) {
		x, y := scaleConfig(routes), scaleConfig(routes)
		y.Clusters[100].Endpoints[0].Address = "10.200.0.2:8080"
		benchPublish(b, [2]*proxycfg.Config{x, y})
	})
	b.Run(fmt.Sprintf("routes=%d/everything", routes), func(b *testing.B) {
		benchPublish(b, [2]*proxycfg.Config{scaleConfig(routes), allChanged(scaleConfig(routes))})
	})
	b.Run(fmt.Sprintf("routes=%d/unchanged", routes), func(b *testing.B) {
		benchPublish(b, [2]*proxycfg.Config{base, base})
	})
}

// withAddedRoute is cfg with a copy of its route i, under another name
// and with a cluster of its own, inserted before route i, and that
// cluster before cluster i: the other elements are shared.
func withAddedRoute(cfg *proxycfg.Config, i int) *proxycfg.Config {
	next := *cfg
	r := cfg.Routes[i]
	r.Name += "-added"
	cl := cfg.Clusters[i]
	cl.Name += "-added"
	r.Rules = slices.Clone(r.Rules)
	for j := range r.Rules {
		r.Rules[j].Backends = []proxycfg.BackendRef{{Cluster: cl.Name, Weight: 1}}
	}
	next.Routes = slices.Insert(slices.Clone(cfg.Routes), i, r)
	next.Clusters = slices.Insert(slices.Clone(cfg.Clusters), i, cl)
	return &next
}

// allChanged changes every listener, route and cluster of cfg.
func allChanged(cfg *proxycfg.Config) *proxycfg.Config {
	for i := range cfg.Listeners {
		cfg.Listeners[i].Port++
	}
	for i := range cfg.Routes {
		cfg.Routes[i].Created = cfg.Routes[i].Created.Add(time.Hour)
	}
	for i := range cfg.Clusters {
		cfg.Clusters[i].Endpoints[0].Address += "0"
	}
	return cfg
}

func benchPublish(b *testing.B, cfgs [2]*proxycfg.Config) {
	s := New(Options{Token: testToken, Log: quietLog()})
	s.Publish(cfgs[1])
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.Publish(cfgs[i&1])
		i++
	}
	b.ReportMetric(float64(s.shared.current().size), "doc-bytes")
}

// BenchmarkFirstRequest is what the first proxy to ask for a version at
// 5,000 routes waits for, once per version: the document assembled from
// its pieces (identity), and that compressed (gzip).
func BenchmarkFirstRequest(b *testing.B) {
	var e proxycfg.Encoder
	d, err := encodeDocument(&e, scaleConfig(5000))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("identity", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fresh := &document{head: d.head, listeners: d.listeners, routes: d.routes, clusters: d.clusters, tail: d.tail, size: d.size}
			fresh.bytes()
		}
		b.ReportMetric(float64(d.size), "doc-bytes")
	})
	b.Run("gzip", func(b *testing.B) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			fresh := &document{head: d.head, listeners: d.listeners, routes: d.routes, clusters: d.clusters, tail: d.tail, size: d.size}
			n = len(fresh.gzipped())
		}
		b.ReportMetric(float64(d.size), "doc-bytes")
		b.ReportMetric(float64(n), "gzip-bytes")
	})
}
