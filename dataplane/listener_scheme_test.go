package dataplane

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Where every port is served at once, the client's scheme picks between
// HTTP and HTTPS listeners of one hostname: the usual "HTTP redirects to
// HTTPS, HTTPS serves the app" pair must not loop or shadow each other.
func TestOriginPicksListenerByScheme(t *testing.T) {
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Close()
	cfg := &proxycfg.Config{
		Schema: proxycfg.SchemaVersion,
		Listeners: []proxycfg.Listener{
			{Name: "gw/http", Hostname: "app.example.com", Port: 80, Protocol: proxycfg.ListenerHTTP},
			{Name: "gw/https", Hostname: "app.example.com", Port: 443, Protocol: proxycfg.ListenerHTTPS},
			{Name: "gw/https-only", Hostname: "secure.example.com", Port: 443, Protocol: proxycfg.ListenerHTTPS},
			{Protocol: proxycfg.ListenerHTTP, Name: "gw/plain", Hostname: "plain.example.com", Port: 8080},
		},
		Routes: []proxycfg.Route{
			{Kind: proxycfg.KindHTTP, Namespace: "ns", Name: "redirect", Listeners: []string{"gw/http"}, Rules: []proxycfg.Rule{{
				Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}},
				Filters: []proxycfg.Filter{{Type: proxycfg.FilterRequestRedirect, RequestRedirect: &proxycfg.Redirect{Scheme: "https", StatusCode: 301}}},
			}}},
			{Kind: proxycfg.KindHTTP, Namespace: "ns", Name: "app", Listeners: []string{"gw/https", "gw/https-only", "gw/plain"}, Rules: []proxycfg.Rule{{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}, FailStatus: 418}}},
		},
	}
	if err := p.Load(cfg); err != nil {
		t.Fatal(err)
	}
	origin := p.Handler(0, true)
	for _, c := range []struct {
		host, proto string
		want        int
	}{
		{"app.example.com", "http", 301},    // the HTTP listener's redirect
		{"app.example.com", "https", 418},   // the HTTPS listener's app
		{"secure.example.com", "http", 418}, // no HTTP listener for the host: the HTTPS one
		{"plain.example.com", "https", 418}, // no HTTPS listener for the host: the HTTP one
		{"other.example.com", "https", 404},
	} {
		req := httptest.NewRequest("GET", "/x", nil)
		req.Host = c.host
		req.Header.Set("X-Forwarded-Proto", c.proto)
		rec := httptest.NewRecorder()
		origin.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s://%s: %d, want %d", c.proto, c.host, rec.Code, c.want)
		}
		if c.want == 301 {
			if loc := rec.Header().Get("Location"); loc != "https://app.example.com/x" {
				t.Errorf("redirect to %q", loc)
			}
		}
	}
	// A direct listener serves its own port only, whatever the scheme.
	req := httptest.NewRequest("GET", "/x", nil)
	req.Host = "app.example.com"
	rec := httptest.NewRecorder()
	p.Handler(80, false).ServeHTTP(rec, req)
	if rec.Code != http.StatusMovedPermanently {
		t.Errorf("port 80 direct: %d, want 301", rec.Code)
	}
}

func TestListenerProtocolChecked(t *testing.T) {
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Close()
	err := p.Load(&proxycfg.Config{Schema: proxycfg.SchemaVersion, Listeners: []proxycfg.Listener{{Name: "l", Protocol: "UDP"}}})
	if err == nil {
		t.Fatal("a UDP listener was accepted")
	}
}
