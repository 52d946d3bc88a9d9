package fuzz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// FuzzConfigDocument feeds bytes to the proxy's config watch client as
// the controller's answer (or its cache file): DecodeDocument, then what
// the client does with the document, must never panic. A decoded
// document always names its version and hashes, and then is one of two
// kinds:
//
//   - whole: its config carries the document's version;
//   - a delta (proxycfg.Delta, the answer to a request with
//     configwatch.ParamBase): it names its base and the document's
//     version, and carries no config. As the client does, it is applied
//     to the config the proxy serves (the example config under the
//     version servedDelta published it as); a delta naming another base
//     must be refused there, and is then applied to that config under
//     the version it names. Applying fails with an error or makes a
//     config of the document's version.
//
// A config the proxy then accepts (whole, or made of a delta, the proxy
// serving the base) is served under the document's version, and the
// whole document survives a JSON round trip (for a delta, the one the
// client writes to its cache file).
//
// Seeds: a document as ctrl/configserver serves it, a delta as it serves
// one to a proxy serving the example config, that delta naming another
// base and cut short, hand-made broken envelopes and deltas, and every
// valid config of FuzzConfigDecodeCompile's corpus wrapped in an
// envelope.
func FuzzConfigDocument(f *testing.F) {
	f.Add(servedDocument(f))
	baseVersion, baseJSON, delta := servedDelta(f)
	f.Add(delta)
	f.Add(bytes.Replace(delta, []byte(`"base":"`+baseVersion+`"`), []byte(`"base":"not-the-base"`), 1))
	f.Add(delta[:len(delta)/2])
	f.Add(delta[:len(delta)-1])
	for _, s := range []string{
		`{"version":"v2","routesHash":"r","clustersHash":"c","delta":{"base":"%[1]s","version":"v2","schema":"tunnelgate.dev/dataplane/v1","listeners":{"ops":[{"keep":[0,1]}]},"routes":{"ops":[{"keep":[0,1]},{"keep":[0,1]}]},"clusters":{"ops":[{"keep":[1,1]}]}}}`,
		`{"version":"v2","routesHash":"r","clustersHash":"c","delta":{"base":"%[1]s","version":"v2","schema":"tunnelgate.dev/dataplane/v1","listeners":{},"routes":{"null":true},"clusters":{"null":true}}}`,
		`{"version":"v2","routesHash":"r","clustersHash":"c","delta":{"base":"%[1]s","version":"v2","listeners":{"ops":[{"keep":[0,2]}]},"routes":{"null":true,"ops":[{"keep":[0,1]}]},"clusters":{"ops":[{"keep":[0,1],"add":[]},{}]}}}`,
		`{"version":"v2","routesHash":"r","clustersHash":"c","delta":{"base":"%[1]s","version":"v2","listeners":{"ops":[{"keep":[-1,1]},{"keep":[0,0]},{"keep":[9223372036854775807,9223372036854775807]}]}}}`,
		`{"version":"v2","routesHash":"r","clustersHash":"c","delta":{"base":"%[1]s","version":"v3"}}`,
		`{"version":"v2","routesHash":"r","clustersHash":"c","delta":{"base":"","version":"v2"}}`,
		`{"version":"v2","routesHash":"r","clustersHash":"c","config":{"version":"v2"},"delta":{"base":"%[1]s","version":"v2"}}`,
		`{"version":"v2","routesHash":"r","clustersHash":"c","delta":null}`,
	} {
		f.Add([]byte(fmt.Sprintf(s, baseVersion)))
	}
	for _, s := range []string{
		`{"version":"v1","routesHash":"r","clustersHash":"c","config":{"schema":"tunnelgate.dev/dataplane/v1","version":"v1","listeners":[],"routes":[],"clusters":[]}}`,
		`{"version":"v1","routesHash":"r","clustersHash":"c","config":{"schema":"tunnelgate.dev/dataplane/v1","version":"v2"}}`,
		`{"version":"","routesHash":"","clustersHash":"","config":{}}`,
		`{"version":"v1","routesHash":"r","clustersHash":"c","config":{"schema":"tunnelgate.dev/dataplane/v1","version":"v1"},"more":1}`,
		`{"version":"v1","routesHash":"r","clustersHash":"c","config":null}`,
		`{"version":"v1"}{"version":"v2"}`,
		`[]`,
		``,
	} {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob("testdata/fuzz/FuzzConfigDecodeCompile/valid-*")
	for _, path := range files {
		var cfg proxycfg.Config
		if data, ok := corpusValue(path); !ok || proxycfg.DecodeConfig(data, &cfg) != nil {
			continue
		}
		cfg.Version = "v"
		b, err := json.Marshal(&configwatch.Document{Version: "v", RoutesHash: "r", ClustersHash: "c", Config: cfg})
		if err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := configwatch.DecodeDocument(data)
		if err != nil {
			return
		}
		if doc.Version == "" || doc.RoutesHash == "" || doc.ClustersHash == "" {
			t.Fatalf("decoded a document without its names: %+v", doc)
		}
		p := quietProxy()
		defer p.Close()
		if doc.Delta == nil {
			if doc.Config.Version != doc.Version {
				t.Fatalf("decoded a whole document whose config is another version: %+v", doc)
			}
		} else {
			cfg, ok := applyDelta(t, p, baseJSON, doc)
			if !ok {
				return
			}
			// What the client keeps, serves and caches.
			doc = &configwatch.Document{Version: doc.Version, RoutesHash: doc.RoutesHash, ClustersHash: doc.ClustersHash, Config: *cfg}
		}
		if _, err := p.Apply(&doc.Config); err != nil {
			return
		}
		if p.Version() != doc.Version {
			t.Fatalf("serving %q, want the document's %q", p.Version(), doc.Version)
		}
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("an accepted document does not marshal: %v", err)
		}
		again, err := configwatch.DecodeDocument(b)
		if err != nil {
			t.Fatalf("an accepted document does not decode after a round trip: %v\n%s", err, b)
		}
		b2, err := json.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, b2) {
			t.Fatalf("the round trip is not a fixed point:\n%s\n%s", b, b2)
		}
	})
}

// applyDelta does with a delta document what the client does on a proxy
// serving base (a config as its JSON): it makes the next config from the
// one served, or fails. A delta naming another base must fail there; it
// is then applied to base under the version it names, so that deltas the
// fuzzer makes from another base string still reach Apply's runs. ok is
// false when applying fails; p serves base either way.
func applyDelta(t *testing.T, p *dataplane.Proxy, base []byte, doc *configwatch.Document) (*proxycfg.Config, bool) {
	t.Helper()
	d := doc.Delta
	if d.Base == "" || d.Version != doc.Version || !doc.Config.Equal(&proxycfg.Config{}) {
		t.Fatalf("decoded a delta document without its base and version, or with a config: %+v %+v", doc, d)
	}
	var served proxycfg.Config
	if err := proxycfg.DecodeConfig(base, &served); err != nil {
		t.Fatal(err)
	}
	if err := p.Load(&served); err != nil {
		t.Fatalf("the base does not load: %v", err)
	}
	cfg, err := d.Apply(p.Config())
	if d.Base != served.Version {
		if err == nil {
			t.Fatalf("a delta from %q applied to version %q", d.Base, served.Version)
		}
		var named proxycfg.Config
		if err := proxycfg.DecodeConfig(base, &named); err != nil {
			t.Fatal(err)
		}
		named.Version = d.Base
		cfg, err = d.Apply(&named)
	}
	if err != nil {
		if cfg != nil {
			t.Fatalf("a delta made a config and an error: %v", err)
		}
		return nil, false
	}
	if cfg == nil {
		t.Fatal("a delta made neither a config nor an error")
	}
	if cfg.Version != doc.Version {
		t.Fatalf("a delta to %q made a config of version %q", doc.Version, cfg.Version)
	}
	return cfg, true
}

// servedDocument is the body a configserver answers with for the
// example config.
func servedDocument(f *testing.F) []byte {
	b, err := os.ReadFile("../examples/proxy/config.json")
	if err != nil {
		f.Fatal(err)
	}
	var cfg proxycfg.Config
	if err := proxycfg.DecodeConfig(b, &cfg); err != nil {
		f.Fatal(err)
	}
	s := configserver.New(configserver.Options{Token: "t", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	s.Publish(&cfg)
	req := httptest.NewRequest("GET", configwatch.Path, nil)
	req.Header.Set("Authorization", "Bearer t")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		f.Fatalf("the config server answered %d", rec.Code)
	}
	return rec.Body.Bytes()
}

// servedDelta is the version and JSON of the base a proxy serves (the
// example config, published), and the body a configserver answers that
// proxy with, once the config is edited: a delta from the base, made by
// the server's writer (proxycfg.AppendDelta). The edit adds a route and
// changes a cluster's endpoints, so the delta both keeps runs of the
// base's lists and adds elements.
func servedDelta(f *testing.F) (baseVersion string, baseJSON, delta []byte) {
	b, err := os.ReadFile("../examples/proxy/config.json")
	if err != nil {
		f.Fatal(err)
	}
	var first, next proxycfg.Config
	if err := proxycfg.DecodeConfig(b, &first); err != nil {
		f.Fatal(err)
	}
	if err := proxycfg.DecodeConfig(b, &next); err != nil {
		f.Fatal(err)
	}
	if len(next.Routes) == 0 || len(next.Clusters) < 2 {
		f.Fatal("the example config has no route or fewer than two clusters to edit")
	}
	added := next.Routes[0]
	added.Name += "-copy"
	added.Hostnames = []string{"copy.localhost"}
	next.Routes = append(next.Routes, added)
	next.Clusters[1].Endpoints = []proxycfg.Endpoint{{Address: "127.0.0.1:9082"}}

	s := configserver.New(configserver.Options{Token: "t", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	v1 := s.Publish(&first)
	v2 := s.Publish(&next)
	req := httptest.NewRequest("GET", configwatch.Path+"?"+url.Values{configwatch.ParamVersion: {v1}, configwatch.ParamBase: {v1}}.Encode(), nil)
	req.Header.Set("Authorization", "Bearer t")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		f.Fatalf("the config server answered %d", rec.Code)
	}
	doc, err := configwatch.DecodeDocument(rec.Body.Bytes())
	if err != nil || doc.Delta == nil || doc.Delta.Base != v1 || doc.Version != v2 {
		f.Fatalf("the config server's answer to a proxy serving %s is not a delta to %s: %v\n%s", v1, v2, err, rec.Body.Bytes())
	}
	first.Version = v1
	if baseJSON, err = json.Marshal(&first); err != nil {
		f.Fatal(err)
	}
	return v1, baseJSON, rec.Body.Bytes()
}

// corpusValue reads a "go test fuzz v1" file holding one []byte value,
// as readCorpusBytes does for tests.
func corpusValue(path string) ([]byte, bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	header, body, _ := strings.Cut(string(raw), "\n")
	lit, ok := strings.CutPrefix(strings.TrimSpace(body), "[]byte(")
	if header != "go test fuzz v1" || !ok || !strings.HasSuffix(lit, ")") {
		return nil, false
	}
	s, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
	return []byte(s), err == nil
}
