package proxycfg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"
)

// smallConfig is a config with one route to one cluster at addr.
func smallConfig(addr string) *Config {
	return &Config{
		Schema:    SchemaVersion,
		Listeners: []Listener{{Protocol: ListenerHTTP, Name: "l"}},
		Routes: []Route{{Kind: KindHTTP, Namespace: "n", Name: "r", Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			Listeners: []string{"l"}, Rules: []Rule{{Matches: []Match{{Path: &PathMatch{Type: PathPrefix, Value: "/"}}}, Backends: []BackendRef{{Cluster: "c", Weight: 1}}}}}},
		Clusters: []Cluster{{Protocol: ProtoHTTP1, Name: "c", Endpoints: []Endpoint{{Address: addr}}}},
	}
}

// scaleConfig is a config of the shape translate produces for the
// benchmark cluster in ctrl/translate/bench_test.go (and the one
// ctrl/configserver's tests build): routes HTTPRoutes over 50 wildcard
// listeners, two rules each, one three-endpoint cluster per route.
func scaleConfig(routes int) *Config {
	cfg := &Config{Schema: SchemaVersion, SessionKeys: [][]byte{[]byte("0123456789abcdef0123456789abcdef")}}
	const gateways = 50
	for g := range gateways {
		cfg.Listeners = append(cfg.Listeners, Listener{
			Name: fmt.Sprintf("infra/gw-%d/http", g), Hostname: fmt.Sprintf("*.g%d.example.com", g), Port: 80, Protocol: ListenerHTTP,
		})
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for r := range routes {
		ns, name := fmt.Sprintf("team-%d", r%100), fmt.Sprintf("app-%d", r)
		cl := fmt.Sprintf("%s/%s:80", ns, name)
		backends := []BackendRef{{Cluster: cl, Weight: 1}}
		cfg.Routes = append(cfg.Routes, Route{
			Kind: KindHTTP, Namespace: ns, Name: name, Created: base.Add(time.Duration(r) * time.Second),
			Listeners: []string{cfg.Listeners[r%gateways].Name},
			Hostnames: []string{fmt.Sprintf("app-%d.g%d.example.com", r, r%gateways)},
			Rules: []Rule{
				{Matches: []Match{{Path: &PathMatch{Type: PathPrefix, Value: "/api"},
					Headers: []ValueMatch{{Type: MatchExact, Name: "x-canary", Value: "1"}}}}, Backends: backends},
				{Matches: []Match{{Path: &PathMatch{Type: PathPrefix, Value: "/"}}}, Backends: backends},
			},
		})
		c := Cluster{Name: cl, Protocol: ProtoHTTP1}
		for e := range 3 {
			c.Endpoints = append(c.Endpoints, Endpoint{Address: fmt.Sprintf("10.%d.%d.%d:8080", 1+r/65000, (r/250)%256, 1+e+(r%250))})
		}
		cfg.Clusters = append(cfg.Clusters, c)
	}
	return cfg
}

// jsonCopy is cfg in all-new memory, through JSON.
func jsonCopy(t *testing.T, cfg *Config) *Config {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out Config
	if err := DecodeConfig(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func encode(t *testing.T, e *Encoder, cfg *Config) Encoded {
	t.Helper()
	enc, err := e.Encode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

// The versions and hashes of these configs are the ones the config
// server has published since versions were content hashes: proxies keep
// them in their caches and compare them with what a controller sends, so
// a change here (of the scheme, a label, hashLen, how JSON is written)
// makes every proxy load its config again. Change them only on purpose,
// with the label.
func TestVersionsAreStable(t *testing.T) {
	secret := smallConfig("127.0.0.1:1")
	secret.SessionKeys = [][]byte{[]byte("a secret <&>"), []byte("an older one")}
	secret.Routes[0].Name = "r<&>\u2028"
	for _, tc := range []struct {
		name                              string
		cfg                               *Config
		version, routesHash, clustersHash string
	}{
		{"small", smallConfig("127.0.0.1:1"),
			"3a4fc5f142f15c41fa5d4f6442158248", "c50e645df91d236bcd42a44fe8353327", "c9c26efd78c55d8108e9d81fa838ae52"},
		{"secret and escapes", secret,
			"2de1d1dcc7c2b866956b5b0ab45cfca4", "e218a7aaf677b4e6d3bd0be9d4e9a992", "c9c26efd78c55d8108e9d81fa838ae52"},
		{"nil lists", &Config{Schema: SchemaVersion},
			"1d3b3128582d2adb34e31d625d45f7ab", "ef982272b2d12461a93043ef862a7c37", "dbb14d94dadd8737fea483eba8b17533"},
		{"empty lists", &Config{Schema: SchemaVersion, Listeners: []Listener{}, Routes: []Route{}, Clusters: []Cluster{}},
			"f21e2b5a5883c1149311a1f1489e3d8b", "04d0a68c8bc55b956d4806241e9fb959", "89d96f3ae70ebffccbc9d9c481ba19ad"},
		{"20 routes", scaleConfig(20),
			"88a87f39be9b7fc4159ccf94a1fa375a", "0e34b72609b8c0a895555dc4333a4df6", "aa0aec2a4f28d8d3e1feb857e35240bc"},
	} {
		var e Encoder
		enc := encode(t, &e, tc.cfg)
		if enc.Version != tc.version || enc.RoutesHash != tc.routesHash || enc.ClustersHash != tc.clustersHash {
			t.Errorf("%s: version, routes and clusters hashes\n got %s %s %s\nwant %s %s %s", tc.name,
				enc.Version, enc.RoutesHash, enc.ClustersHash, tc.version, tc.routesHash, tc.clustersHash)
		}
		if v, err := ContentVersion(tc.cfg); err != nil || v != tc.version {
			t.Errorf("%s: ContentVersion = %q, %v; want %q", tc.name, v, err, tc.version)
		}
	}
}

// The lists' JSON is what json.Marshal writes for the config's fields.
func TestEncodedListsAreWhatJSONMarshalWrites(t *testing.T) {
	secret := smallConfig("127.0.0.1:1")
	secret.Routes[0].Name = "r<&>\u2028" // escaped by json.Marshal; must be escaped alike
	for name, cfg := range map[string]*Config{
		"small": smallConfig("127.0.0.1:1"), "escapes": secret, "nil lists": {Schema: SchemaVersion},
		"empty lists": {Listeners: []Listener{}, Routes: []Route{}, Clusters: []Cluster{}}, "scale": scaleConfig(20),
	} {
		var e Encoder
		enc := encode(t, &e, cfg)
		for _, l := range []struct {
			field string
			list  JSONList
			value any
		}{
			{"listeners", enc.Listeners, cfg.Listeners},
			{"routes", enc.Routes, cfg.Routes},
			{"clusters", enc.Clusters, cfg.Clusters},
		} {
			want, err := json.Marshal(l.value)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.list.AppendTo([]byte("x")); !bytes.Equal(got[1:], want) || got[0] != 'x' {
				t.Errorf("%s %s: AppendTo wrote %s, want %s", name, l.field, got[1:], want)
			}
			if l.list.Len() != len(want) {
				t.Errorf("%s %s: Len %d, want %d", name, l.field, l.list.Len(), len(want))
			}
		}
	}
}

// The version must change with everything the proxy serves and only
// with that; the routes hash with everything the router compiles and
// only with that; the clusters hash with the clusters' definitions.
func TestHashesSeparateRoutesFromClusters(t *testing.T) {
	base := smallConfig("127.0.0.1:1")
	base.Clusters = append(base.Clusters, Cluster{Protocol: ProtoHTTP1, Name: "d", Endpoints: []Endpoint{{Address: "127.0.0.1:2"}}})
	var e0 Encoder
	want := encode(t, &e0, base)

	edit := func(f func(*Config)) *Config {
		cfg := jsonCopy(t, base)
		f(cfg)
		return cfg
	}
	for _, tc := range []struct {
		name                   string
		cfg                    *Config
		routesSame, clusterSam bool
	}{
		{"same content, new slices", jsonCopy(t, base), true, true},
		{"cfg.Version is not content", edit(func(c *Config) { c.Version = "anything" }), true, true},
		{"an endpoint", edit(func(c *Config) { c.Clusters[0].Endpoints[0].Address = "127.0.0.1:9" }), true, false},
		{"a cluster's TLS", edit(func(c *Config) { c.Clusters[1].TLS = &TLSSettings{SNI: "x"} }), true, false},
		{"cluster order", edit(func(c *Config) { slices.Reverse(c.Clusters) }), true, false},
		{"a route", edit(func(c *Config) { c.Routes[0].Hostnames = []string{"a.example"} }), false, true},
		{"a listener", edit(func(c *Config) { c.Listeners[0].Port = 8080 }), false, true},
		{"the session keys", edit(func(c *Config) { c.SessionKeys = [][]byte{[]byte("k")} }), false, true},
		{"an older session key", edit(func(c *Config) { c.SessionKeys = append(c.SessionKeys, []byte("old")) }), false, true},
		{"an Access team", edit(func(c *Config) { c.AccessTeams = []AccessTeam{{Domain: "t.example", Keys: `{"keys":[]}`}} }), false, true},
		{"an Access team's keys", edit(func(c *Config) {
			c.AccessTeams = []AccessTeam{{Domain: "t.example", Keys: `{"keys":[1]}`}}
		}), false, true},
		{"the schema", edit(func(c *Config) { c.Schema = "other" }), false, true},
		{"the routes gone", edit(func(c *Config) { c.Routes = nil }), false, true},
		{"a cluster added", edit(func(c *Config) {
			c.Clusters = append(c.Clusters, Cluster{Protocol: ProtoHTTP1, Name: "e"})
		}), false, false},
		{"a cluster renamed", edit(func(c *Config) { c.Clusters[1].Name = "e" }), false, false},
	} {
		// Each both from a fresh Encoder and from one that encoded base
		// last: what it reuses must not show.
		var fresh, after Encoder
		encode(t, &after, base)
		for _, got := range []Encoded{encode(t, &fresh, tc.cfg), encode(t, &after, tc.cfg)} {
			r, c, v := got.RoutesHash == want.RoutesHash, got.ClustersHash == want.ClustersHash, got.Version == want.Version
			if r != tc.routesSame || c != tc.clusterSam || v != (tc.routesSame && tc.clusterSam) {
				t.Errorf("%s: routes same %v (want %v), clusters same %v (want %v), version same %v",
					tc.name, r, tc.routesSame, c, tc.clusterSam, v)
			}
		}
	}
}

// An Encoder that encoded other configs before gives a config the
// version and JSON a fresh one gives it, whatever it reused.
func TestEncodeIsIncrementalNotDifferent(t *testing.T) {
	base := scaleConfig(30)
	steps := []func(*Config){
		func(c *Config) {},
		func(c *Config) { c.Clusters[3].Endpoints = c.Clusters[3].Endpoints[:1] },
		func(c *Config) { c.Routes[7].Rules = c.Routes[7].Rules[1:] },
		func(c *Config) { c.Clusters = c.Clusters[:20] },
		func(c *Config) { c.Routes, c.Clusters = nil, nil },
		func(c *Config) { c.Listeners = append(c.Listeners, Listener{Protocol: ListenerHTTP, Name: "new"}) },
		func(c *Config) { c.Routes = append(c.Routes[:2], c.Routes[3:]...) },
		func(c *Config) { slices.Reverse(c.Clusters) },
		func(c *Config) { // a route and cluster added at the front
			r, cl := c.Routes[4], c.Clusters[4]
			r.Name, cl.Name = "added", "added"
			c.Routes, c.Clusters = slices.Insert(c.Routes, 0, r), slices.Insert(c.Clusters, 0, cl)
		},
		func(c *Config) { // the same identity twice, the second edited
			r := c.Routes[9]
			r.Hostnames = []string{"other.example.com"}
			c.Routes = slices.Insert(c.Routes, 5, r)
		},
		func(c *Config) { // moved and edited at once
			c.Routes = slices.Delete(c.Routes, 2, 3)
			c.Routes[10].Hostnames = []string{"edited.example.com"}
		},
	}
	var e Encoder
	for i, step := range steps {
		cfg := jsonCopy(t, base)
		step(cfg)
		got := encode(t, &e, cfg)
		var fresh Encoder
		want := encode(t, &fresh, cfg)
		if got.Version != want.Version || got.RoutesHash != want.RoutesHash || got.ClustersHash != want.ClustersHash {
			t.Errorf("step %d: hashes differ from a fresh Encoder's", i)
		}
		for _, l := range [][2]JSONList{{got.Listeners, want.Listeners}, {got.Routes, want.Routes}, {got.Clusters, want.Clusters}} {
			if !bytes.Equal(l[0].AppendTo(nil), l[1].AppendTo(nil)) {
				t.Errorf("step %d: JSON differs from a fresh Encoder's", i)
			}
		}
	}
}

// Encode reuses an element's JSON when the element is Equal to the one
// at its place last time, whatever memory it is in, and only then.
func TestEncodeReusesEqualElements(t *testing.T) {
	var e Encoder
	cfg := scaleConfig(10)
	first := encode(t, &e, cfg)
	routes, clusters := first.Routes.Elems, first.Clusters.Elems

	// The same content in all-new memory (a full translation): nothing
	// is encoded again, the lists are kept whole.
	again := encode(t, &e, jsonCopy(t, cfg))
	if &again.Routes.Elems[0] != &routes[0] || &again.Clusters.Elems[0] != &clusters[0] {
		t.Error("a copy of the config was encoded again")
	}

	// All-new memory again, one route and one cluster different: those
	// two are encoded, every other element's JSON is reused.
	next := jsonCopy(t, cfg)
	next.Routes[3].Rules[1].Backends[0].Weight = 2
	next.Clusters[5].Endpoints[2].Address = "10.9.9.9:80"
	enc := encode(t, &e, next)
	for i := range routes {
		if reused := &enc.Routes.Elems[i][0] == &routes[i][0]; reused != (i != 3) {
			t.Errorf("route %d: JSON reused %v", i, reused)
		}
	}
	for i := range clusters {
		if reused := &enc.Clusters.Elems[i][0] == &clusters[i][0]; reused != (i != 5) {
			t.Errorf("cluster %d: JSON reused %v", i, reused)
		}
	}
	if !bytes.Contains(enc.Clusters.AppendTo(nil), []byte(`"10.9.9.9:80"`)) || !bytes.Contains(enc.Routes.AppendTo(nil), []byte(`"weight":2`)) {
		t.Error("the changes were not encoded")
	}
}

// An element moved by an add or a delete before it keeps its JSON: Encode
// finds it by identity (the package doc's contract), not by position.
func TestEncodeReusesMovedElements(t *testing.T) {
	var e Encoder
	cfg := scaleConfig(10)
	first := encode(t, &e, cfg)
	routes, clusters := first.Routes.Elems, first.Clusters.Elems

	// A route and its cluster added at index 3, in all-new memory: only
	// they are encoded.
	next := jsonCopy(t, cfg)
	r, cl := next.Routes[3], next.Clusters[3]
	r.Name, cl.Name = "added", "added"
	next.Routes, next.Clusters = slices.Insert(next.Routes, 3, r), slices.Insert(next.Clusters, 3, cl)
	enc := encode(t, &e, next)
	for i := range enc.Routes.Elems {
		was := i - min(i/4, 1) // the element's index in the first config
		if reused := i != 3 && &enc.Routes.Elems[i][0] == &routes[was][0]; reused != (i != 3) {
			t.Errorf("after an add, route %d: JSON reused %v", i, reused)
		}
		if reused := i != 3 && &enc.Clusters.Elems[i][0] == &clusters[was][0]; reused != (i != 3) {
			t.Errorf("after an add, cluster %d: JSON reused %v", i, reused)
		}
	}

	// Both deleted again, and route 0 with them: nothing is encoded.
	back := jsonCopy(t, cfg)
	back.Routes, back.Clusters = back.Routes[1:], back.Clusters[1:]
	enc = encode(t, &e, back)
	for i := range enc.Routes.Elems {
		if &enc.Routes.Elems[i][0] != &routes[i+1][0] || &enc.Clusters.Elems[i][0] != &clusters[i+1][0] {
			t.Errorf("after a delete, element %d was encoded again", i)
		}
	}
}

// Per-element reuse must keep nil and empty apart, as JSON does.
func TestNilAndEmptyListsStayApart(t *testing.T) {
	var e Encoder
	cfg := smallConfig("127.0.0.1:1")
	var versions []string
	for _, endpoints := range [][]Endpoint{nil, {}, nil} {
		next := *cfg
		next.Clusters = slices.Clone(cfg.Clusters)
		next.Clusters[0].Endpoints = endpoints
		enc := encode(t, &e, &next)
		want := "null"
		if endpoints != nil {
			want = "[]"
		}
		if got := enc.Clusters.AppendTo(nil); !bytes.Contains(got, []byte(`"endpoints":`+want)) {
			t.Errorf("endpoints %#v encoded as %s", endpoints, got)
		}
		versions = append(versions, enc.Version)
	}
	if versions[0] == versions[1] || versions[0] != versions[2] {
		t.Errorf("versions of nil, empty and nil endpoints: %q", versions)
	}
}

// json.Marshal refuses a time it cannot write in RFC 3339; so does
// Encode, and the Encoder still works afterwards.
func TestEncodeFailsWhereJSONDoes(t *testing.T) {
	var e Encoder
	good := smallConfig("127.0.0.1:1")
	want := encode(t, &e, good)
	bad := jsonCopy(t, good)
	bad.Routes[0].Created = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := e.Encode(bad); err == nil {
		t.Fatal("a route created in the year 10000 encoded")
	}
	if _, err := ContentVersion(bad); err == nil {
		t.Error("ContentVersion of a route created in the year 10000 succeeded")
	}
	if got := encode(t, &e, good); got.Version != want.Version {
		t.Errorf("after a failure: version %s, want %s", got.Version, want.Version)
	}
}
