package configwatch_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// After its first config, a proxy is sent each next one as a delta from
// the one it serves, serves what the delta makes, and writes that whole
// to its cache file.
func TestFollowsByDeltas(t *testing.T) {
	a, b := backend(t, "a"), backend(t, "b")
	cache := filepath.Join(t.TempDir(), "config.json")
	ctl := startController(t, "", configserver.Options{})
	ctl.Publish(config("", a))
	px := startProxy(t, ctl.url, configwatch.Options{CacheFile: cache})
	px.waitServes("app.example", "a")
	ws := px.w.Stats()
	if ws.Deltas.Load() != 0 {
		t.Fatalf("the first config came as a delta (%d)", ws.Deltas.Load())
	}

	next := config("tagged", b) // routes and clusters changed
	v := ctl.Publish(next)
	px.waitServes("tagged.example", "b")
	if ws.Deltas.Load() != 1 || px.p.Version() != v {
		t.Fatalf("deltas %d, version %q (want 1, %q)", ws.Deltas.Load(), px.p.Version(), v)
	}
	want := *next
	want.Version = v
	if got := px.p.Config(); !got.Equal(&want) {
		t.Errorf("the proxy serves another config than the one published")
	}

	// The cache holds the whole config, once written.
	waitFor(t, "the cache written", func() bool {
		raw, err := os.ReadFile(cache)
		if err != nil {
			return false
		}
		doc, err := configwatch.DecodeDocument(raw)
		return err == nil && doc.Delta == nil && doc.Version == v && doc.Config.Equal(&want)
	})
}

// A delta that does not apply to the config the proxy serves is a bad
// answer: the proxy keeps serving, and asks for the next config whole.
func TestBadDeltaAsksWhole(t *testing.T) {
	a, b := backend(t, "a"), backend(t, "b")
	var e proxycfg.Encoder
	first := config("", a)
	v1, _ := e.Encode(first)
	first.Version = v1.Version
	second := config("", b)
	v2, _ := e.Encode(second)
	second.Version = v2.Version

	var mu sync.Mutex
	var bases []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		bases = append(bases, q.Get(configwatch.ParamBase))
		n := len(bases)
		mu.Unlock()
		var doc configwatch.Document
		switch {
		case n == 1: // the first config, whole
			doc = configwatch.Document{Version: v1.Version, RoutesHash: v1.RoutesHash, ClustersHash: v1.ClustersHash, Config: *first}
		case q.Get(configwatch.ParamBase) != "": // a delta from a base the proxy does not serve
			doc = configwatch.Document{Version: v2.Version, RoutesHash: v2.RoutesHash, ClustersHash: v2.ClustersHash,
				Delta: &proxycfg.Delta{Base: "another", Version: v2.Version, Schema: proxycfg.SchemaVersion}}
		default:
			doc = configwatch.Document{Version: v2.Version, RoutesHash: v2.RoutesHash, ClustersHash: v2.ClustersHash, Config: *second}
		}
		if q.Get(configwatch.ParamVersion) == doc.Version {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		json.NewEncoder(w).Encode(&doc)
	}))
	t.Cleanup(srv.Close)
	px := startProxy(t, srv.URL, configwatch.Options{})
	px.waitServes("app.example", "b")
	ws := px.w.Stats()
	if ws.Failures[configwatch.FailBadAnswer].Load() == 0 {
		t.Error("the delta that did not apply was not counted")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bases) < 3 || bases[0] != "" || bases[1] != v1.Version || bases[2] != "" {
		t.Errorf("bases asked with: %q; want none, %q, then none", bases, v1.Version)
	}
}
