package fuzz

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// FuzzConfigDocument feeds bytes to the proxy's config watch client as
// the controller's answer (or its cache file): DecodeDocument, then
// Load, must never panic; a decoded document always names its version in
// the config; and a document whose config the proxy accepts survives a
// JSON round trip and is served under its version.
//
// Seeds: a document as ctrl/configserver serves it, hand-made broken
// envelopes, and every valid config of FuzzConfigDecodeCompile's corpus
// wrapped in an envelope.
func FuzzConfigDocument(f *testing.F) {
	f.Add(servedDocument(f))
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
		if doc.Version == "" || doc.RoutesHash == "" || doc.ClustersHash == "" || doc.Config.Version != doc.Version {
			t.Fatalf("decoded a document without its names: %+v", doc)
		}
		p := quietProxy()
		defer p.Close()
		if p.Load(&doc.Config) != nil {
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
