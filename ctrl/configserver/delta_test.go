package configserver

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/url"
	"slices"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// decodedConfig is the config a proxy serving base makes of an answer:
// the whole config, or a delta applied to base.
func decodedConfig(t *testing.T, body []byte, base *proxycfg.Config) (*proxycfg.Config, bool) {
	t.Helper()
	doc, err := configwatch.DecodeDocument(body)
	if err != nil {
		t.Fatalf("%v\n%.300s", err, body)
	}
	if doc.Delta == nil {
		return &doc.Config, false
	}
	cfg, err := doc.Delta.Apply(base)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, true
}

// A proxy that names the version it serves among the last ones published
// gets the new one as a delta, which makes the new config from its own;
// one whose version is unknown, or too old, gets the whole config.
func TestDeltaToAProxy(t *testing.T) {
	ts := startServer(t, Options{Token: testToken})
	first := scaleConfig(300)
	v1 := ts.Publish(first)
	base := *first
	base.Version = v1
	next := *first
	next.Routes = slices.Clone(first.Routes)
	next.Routes[150].Hostnames = []string{"edited.example.com"}
	v2 := ts.Publish(&next)
	want := next
	want.Version = v2

	ask := func(baseVersion string) (*proxycfg.Config, []byte, bool) {
		res, body := ts.get(t, "?"+url.Values{configwatch.ParamVersion: {v1}, configwatch.ParamBase: {baseVersion}}.Encode())
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d", baseVersion, res.StatusCode)
		}
		cfg, delta := decodedConfig(t, body, &base)
		return cfg, body, delta
	}
	cfg, body, delta := ask(v1)
	if !delta || !cfg.Equal(&want) || cfg.Version != v2 {
		t.Fatalf("from the version served: delta %v, equal %v", delta, cfg.Equal(&want))
	}
	if len(body) > 4096 {
		t.Errorf("a delta of one route is %d bytes", len(body))
	}
	if n := ts.metric(t, "tunnelgate.config_server.deltas"); n != 1 {
		t.Errorf("deltas counted %d, want 1", n)
	}
	if cfg, _, delta := ask("an-unknown-version"); delta || !cfg.Equal(&want) {
		t.Errorf("from an unknown version: delta %v, equal %v", delta, cfg.Equal(&want))
	}

	// After historyLen more versions, v1 is too old to be a base.
	for i := range historyLen {
		c := next
		c.Routes = slices.Clone(next.Routes)
		c.Routes[0].Name = "renamed-" + string(rune('a'+i))
		ts.Publish(&c)
	}
	if _, _, delta := ask(v1); delta {
		t.Error("a delta from a version older than the history")
	}
}

// A large delta is compressed for a proxy that takes gzip.
func TestDeltaGzipped(t *testing.T) {
	ts := startServer(t, Options{Token: testToken})
	first := scaleConfig(400)
	v1 := ts.Publish(first)
	next := *first
	next.Routes = slices.Clone(first.Routes)
	for i := range next.Routes {
		next.Routes[i].Hostnames = []string{"moved-" + next.Routes[i].Name + ".example.com"}
	}
	ts.Publish(&next)
	res, body := ts.get(t, "?"+url.Values{configwatch.ParamVersion: {v1}, configwatch.ParamBase: {v1}}.Encode(), "Accept-Encoding", "gzip")
	if res.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q for a delta of %d routes", res.Header.Get("Content-Encoding"), len(next.Routes))
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	base := *first
	base.Version = v1
	if cfg, delta := decodedConfig(t, plain, &base); !delta || !cfg.EqualRouting(&next) {
		t.Errorf("delta %v, routes equal %v", delta, cfg.EqualRouting(&next))
	}
}

// A health check set on a listener reaches a proxy in the delta from the
// config it serves: the listener's content changed, and so the version.
func TestDeltaCarriesAHealthCheck(t *testing.T) {
	ts := startServer(t, Options{Token: testToken})
	first := scaleConfig(50)
	v1 := ts.Publish(first)
	base := *first
	base.Version = v1
	next := *first
	next.Listeners = slices.Clone(first.Listeners)
	next.Listeners[0].HealthCheck = &proxycfg.HealthCheck{Path: "/.tunnelgate/health", Header: "X-Monitor-Token", Token: "0123456789abcdef-secret"}
	v2 := ts.Publish(&next)
	if v2 == v1 {
		t.Fatal("a health check set does not change the version")
	}
	res, body := ts.get(t, "?"+url.Values{configwatch.ParamVersion: {v1}, configwatch.ParamBase: {v1}}.Encode())
	if res.StatusCode != 200 {
		t.Fatalf("%d", res.StatusCode)
	}
	cfg, delta := decodedConfig(t, body, &base)
	want := next
	want.Version = v2
	if !delta || !cfg.Equal(&want) || !cfg.Listeners[0].HealthCheck.Equal(next.Listeners[0].HealthCheck) {
		t.Errorf("delta %v, equal %v, health check %+v", delta, cfg.Equal(&want), cfg.Listeners[0].HealthCheck)
	}
}
