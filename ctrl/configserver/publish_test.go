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
	withSecret.SessionKeys = [][]byte{[]byte("a secret <&>"), []byte("an older key")}
	withSecret.Routes[0].Name = "r<&>\u2028" // escaped by json.Marshal; must be escaped alike
	withSecret.AccessTeams = []proxycfg.AccessTeam{{Domain: "team.cloudflareaccess.com", Keys: `{"keys":[{"kid":"<&>"}]}`}}
	empty := &proxycfg.Config{Schema: proxycfg.SchemaVersion}
	for name, cfg := range map[string]*proxycfg.Config{
		"small": smallConfig("127.0.0.1:1"), "secret and escapes": withSecret, "empty": empty, "scale": scaleConfig(20),
	} {
		var e proxycfg.Encoder
		d, err := encodeDocument(&e, cfg)
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
	if v, err := proxycfg.ContentVersion(cfg); err != nil || v1 != v {
		t.Fatalf("Publish = %q, proxycfg.ContentVersion = %q, %v", v1, v, err)
	}
	if again := s.Publish(cfg); again != v1 {
		t.Fatalf("republishing the same config: version %q, want %q", again, v1)
	}
	routeElems := s.shared.current().routes.Elems

	// An endpoint change shares Routes and Listeners: their JSON is the
	// cached one, the clusters' is new, and the document is cfg2's.
	cfg2 := withEndpoint(cfg, 7, "10.9.9.9:80")
	v2 := s.Publish(cfg2)
	if v2 == v1 {
		t.Fatal("an endpoint change kept the version")
	}
	if &s.shared.current().routes.Elems[0] != &routeElems[0] {
		t.Error("the routes were looked at again although the slice is the same")
	}
	doc, err := configwatch.DecodeDocument(docBytes(s.shared.current()))
	if err != nil {
		t.Fatal(err)
	}
	want := deepCopy(t, cfg2)
	want.Version = v2
	if !reflect.DeepEqual(&doc.Config, want) {
		t.Error("the published document is not the config given")
	}
	var fresh proxycfg.Encoder
	if enc, err := fresh.Encode(cfg); err != nil || doc.RoutesHash != enc.RoutesHash {
		t.Error("an endpoint change changed the routes hash")
	}

	// A route changed as translate's patch changes it: a new Routes
	// slice, the other routes copies sharing their slices. Only the
	// changed one is encoded again.
	cfg3 := *cfg2
	cfg3.Routes = slices.Clone(cfg2.Routes)
	cfg3.Routes[3].Hostnames = []string{"changed.example"}
	v3 := s.Publish(&cfg3)
	for i, e := range s.shared.current().routes.Elems {
		if reused := &e[0] == &routeElems[i][0]; reused != (i != 3) {
			t.Fatalf("route %d: JSON reused %v", i, reused)
		}
	}
	doc3, err := configwatch.DecodeDocument(docBytes(s.shared.current()))
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
