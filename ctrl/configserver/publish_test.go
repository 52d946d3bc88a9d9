package configserver

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// docBytes is the published document as a proxy receives it.
func docBytes(d *document) []byte { return d.bytes() }

func deepCopy(t *testing.T, cfg *proxycfg.Config) *proxycfg.Config {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out proxycfg.Config
	if err := proxycfg.DecodeConfig(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// The document Publish assembles from cached parts must be exactly what
// json.Marshal makes of a configwatch.Document: a field added to
// proxycfg.Config or Document without newDocument knowing fails here.
func TestDocumentIsWhatJSONMarshalWrites(t *testing.T) {
	withSecret := smallConfig("127.0.0.1:1")
	withSecret.SessionSecret = []byte("a secret <&>")
	withSecret.Routes[0].Name = "r<&>\u2028" // escaped by json.Marshal; must be escaped alike
	empty := &proxycfg.Config{Schema: proxycfg.SchemaVersion}
	for name, cfg := range map[string]*proxycfg.Config{
		"small": smallConfig("127.0.0.1:1"), "secret and escapes": withSecret, "empty": empty, "scale": scaleConfig(20),
	} {
		var c encodeCache
		d, err := c.encode(cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := configwatch.Document{Version: d.version, RoutesHash: d.routesHash, ClustersHash: d.clustersHash, Config: *cfg}
		want.Config.Version = d.version
		wantJSON, err := json.Marshal(&want)
		if err != nil {
			t.Fatal(err)
		}
		if got := docBytes(d); !bytes.Equal(got, wantJSON) {
			t.Errorf("%s: document differs from json.Marshal\n got %s\nwant %s", name, got, wantJSON)
		}
		if d.size != len(wantJSON) {
			t.Errorf("%s: size %d, want %d", name, d.size, len(wantJSON))
		}
		doc, err := configwatch.DecodeDocument(docBytes(d))
		if err != nil {
			t.Fatalf("%s: the proxy cannot decode it: %v", name, err)
		}
		if doc.Version != d.version || doc.Config.Version != d.version {
			t.Errorf("%s: decoded versions %q/%q, want %q", name, doc.Version, doc.Config.Version, d.version)
		}
	}
}

func hashes(t *testing.T, cfg *proxycfg.Config) (version, routes, clusters string) {
	t.Helper()
	var c encodeCache
	d, err := c.encode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d.version, d.routesHash, d.clustersHash
}

// routesHash must change with everything the router compiles and only
// with that; clustersHash with the clusters' definitions.
func TestHashesSeparateRoutesFromClusters(t *testing.T) {
	base := smallConfig("127.0.0.1:1")
	base.Clusters = append(base.Clusters, proxycfg.Cluster{Protocol: proxycfg.ProtoHTTP1, Name: "d", Endpoints: []proxycfg.Endpoint{{Address: "127.0.0.1:2"}}})
	v0, r0, c0 := hashes(t, base)

	edit := func(f func(*proxycfg.Config)) *proxycfg.Config {
		cfg := deepCopy(t, base)
		f(cfg)
		return cfg
	}
	for _, tc := range []struct {
		name                   string
		cfg                    *proxycfg.Config
		routesSame, clusterSam bool
	}{
		{"same content, new slices", deepCopy(t, base), true, true},
		{"cfg.Version is not content", edit(func(c *proxycfg.Config) { c.Version = "anything" }), true, true},
		{"an endpoint", edit(func(c *proxycfg.Config) { c.Clusters[0].Endpoints[0].Address = "127.0.0.1:9" }), true, false},
		{"a cluster's TLS", edit(func(c *proxycfg.Config) { c.Clusters[1].TLS = &proxycfg.TLSSettings{SNI: "x"} }), true, false},
		{"cluster order", edit(func(c *proxycfg.Config) { slices.Reverse(c.Clusters) }), true, false},
		{"a route", edit(func(c *proxycfg.Config) { c.Routes[0].Hostnames = []string{"a.example"} }), false, true},
		{"a listener", edit(func(c *proxycfg.Config) { c.Listeners[0].Port = 8080 }), false, true},
		{"the session secret", edit(func(c *proxycfg.Config) { c.SessionSecret = []byte("k") }), false, true},
		{"the schema", edit(func(c *proxycfg.Config) { c.Schema = "other" }), false, true},
		{"a cluster added", edit(func(c *proxycfg.Config) {
			c.Clusters = append(c.Clusters, proxycfg.Cluster{Protocol: proxycfg.ProtoHTTP1, Name: "e"})
		}), false, false},
		{"a cluster renamed", edit(func(c *proxycfg.Config) { c.Clusters[1].Name = "e" }), false, false},
	} {
		v, r, c := hashes(t, tc.cfg)
		if (r == r0) != tc.routesSame || (c == c0) != tc.clusterSam || (v == v0) != (tc.routesSame && tc.clusterSam) {
			t.Errorf("%s: routes same %v (want %v), clusters same %v (want %v), version same %v",
				tc.name, r == r0, tc.routesSame, c == c0, tc.clusterSam, v == v0)
		}
	}
}

// Publish leaves the config as it found it, reuses the JSON of a slice
// it saw before, and still publishes exactly the config it was given.
func TestPublishReusesSlicesAndNeverMutates(t *testing.T) {
	s := New(Options{Token: testToken, Log: quietLog()})
	cfg := scaleConfig(50)
	cfg.Version = "translate's"
	before := deepCopy(t, cfg)
	v1 := s.Publish(cfg)
	if !reflect.DeepEqual(cfg, before) {
		t.Fatal("Publish modified the config")
	}
	if v1 == "" || s.Version() != v1 {
		t.Fatalf("Publish = %q, Version() = %q", v1, s.Version())
	}
	if again := s.Publish(cfg); again != v1 {
		t.Fatalf("republishing the same config: version %q, want %q", again, v1)
	}
	routeElems := s.cache.routes.elems

	// An endpoint change shares Routes and Listeners: their JSON is the
	// cached one, the clusters' is new, and the document is cfg2's.
	cfg2 := withEndpoint(cfg, 7, "10.9.9.9:80")
	v2 := s.Publish(cfg2)
	if v2 == v1 {
		t.Fatal("an endpoint change kept the version")
	}
	if &s.cache.routes.elems[0] != &routeElems[0] {
		t.Error("the routes were looked at again although the slice is the same")
	}
	doc, err := configwatch.DecodeDocument(docBytes(s.doc))
	if err != nil {
		t.Fatal(err)
	}
	want := deepCopy(t, cfg2)
	want.Version = v2
	if !reflect.DeepEqual(&doc.Config, want) {
		t.Error("the published document is not the config given")
	}
	if _, r1, _ := hashes(t, cfg); doc.RoutesHash != r1 {
		t.Error("an endpoint change changed the routes hash")
	}

	// A route changed as translate's patch changes it: a new Routes
	// slice, the other routes copies sharing their slices. Only the
	// changed one is encoded again.
	cfg3 := *cfg2
	cfg3.Routes = slices.Clone(cfg2.Routes)
	cfg3.Routes[3].Hostnames = []string{"changed.example"}
	v3 := s.Publish(&cfg3)
	for i, e := range s.cache.routes.elems {
		if reused := &e[0] == &routeElems[i][0]; reused != (i != 3) {
			t.Fatalf("route %d: JSON reused %v", i, reused)
		}
	}
	doc3, err := configwatch.DecodeDocument(docBytes(s.doc))
	if err != nil {
		t.Fatal(err)
	}
	want3 := deepCopy(t, &cfg3)
	want3.Version = v3
	if v3 == v2 || !reflect.DeepEqual(&doc3.Config, want3) {
		t.Error("the route change was not published")
	}

	// The same content in all-new slices (a full translation) is the
	// same version.
	if v := s.Publish(deepCopy(t, &cfg3)); v != v3 {
		t.Errorf("a copy of the config has version %s, want %s", v, v3)
	}
}

// Publish reuses an element's JSON when the element is Equal to the one
// at its place last time, whatever memory it is in, and only then.
func TestPublishReusesEqualElements(t *testing.T) {
	var c encodeCache
	cfg := scaleConfig(10)
	if _, err := c.encode(cfg); err != nil {
		t.Fatal(err)
	}
	routes, clusters := c.routes.elems, c.clusters.elems

	// The same content in all-new memory (a full translation): nothing
	// is encoded again, the lists are kept whole.
	if _, err := c.encode(deepCopy(t, cfg)); err != nil {
		t.Fatal(err)
	}
	if &c.routes.elems[0] != &routes[0] || &c.clusters.elems[0] != &clusters[0] {
		t.Error("a copy of the config was encoded again")
	}

	// All-new memory again, one route and one cluster different: those
	// two are encoded, every other element's JSON is reused.
	next := deepCopy(t, cfg)
	next.Routes[3].Rules[1].Backends[0].Weight = 2
	next.Clusters[5].Endpoints[2].Address = "10.9.9.9:80"
	d, err := c.encode(next)
	if err != nil {
		t.Fatal(err)
	}
	for i := range routes {
		if reused := &c.routes.elems[i][0] == &routes[i][0]; reused != (i != 3) {
			t.Errorf("route %d: JSON reused %v", i, reused)
		}
	}
	for i := range clusters {
		if reused := &c.clusters.elems[i][0] == &clusters[i][0]; reused != (i != 5) {
			t.Errorf("cluster %d: JSON reused %v", i, reused)
		}
	}
	if !bytes.Contains(d.bytes(), []byte(`"10.9.9.9:80"`)) || !bytes.Contains(d.bytes(), []byte(`"weight":2`)) {
		t.Error("the changes were not published")
	}
}

// Per-element reuse must keep nil and empty apart, as JSON does.
func TestNilAndEmptyListsStayApart(t *testing.T) {
	var c encodeCache
	cfg := smallConfig("127.0.0.1:1")
	for _, clusters := range [][]proxycfg.Endpoint{nil, {}, nil} {
		next := *cfg
		next.Clusters = slices.Clone(cfg.Clusters)
		next.Clusters[0].Endpoints = clusters
		d, err := c.encode(&next)
		if err != nil {
			t.Fatal(err)
		}
		want := "null"
		if clusters != nil {
			want = "[]"
		}
		if !bytes.Contains(d.bytes(), []byte(`"endpoints":`+want)) {
			t.Errorf("endpoints %#v published as %s", clusters, d.bytes())
		}
	}
}

func TestPublishCountsVersions(t *testing.T) {
	ts := startServer(t, Options{Token: testToken})
	cfg := smallConfig("127.0.0.1:1")
	ts.Publish(cfg)
	ts.Publish(deepCopy(t, cfg)) // same content: no new version
	ts.Publish(smallConfig("127.0.0.1:2"))
	if n := ts.metric(t, "tunnelgate.config_server.published"); n != 2 {
		t.Errorf("published = %d, want 2", n)
	}
}
