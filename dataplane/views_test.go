package dataplane

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// A config is filed only into the views of the handlers the proxy made:
// none before the first, and a view added later is built for the config
// being served and for every config after it.
func TestViewsFollowHandlers(t *testing.T) {
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Close()
	cfg := func(status int) *proxycfg.Config {
		c := config([]proxycfg.Route{route("r", proxycfg.Rule{Matches: everyPath(), FailStatus: status})})
		c.Listeners = append(c.Listeners, proxycfg.Listener{Name: "gw/alt", Port: 8080, Protocol: proxycfg.ListenerHTTP})
		c.Routes[0].Listeners = []string{"gw/http", "gw/alt"}
		return c
	}
	if err := p.Load(cfg(418)); err != nil {
		t.Fatal(err)
	}
	built := func() (origin bool, ports []int, gateways bool) {
		s := p.current.Load()
		for port := range s.ports {
			ports = append(ports, port)
		}
		return s.origin[0] != nil, ports, s.gateways != nil
	}
	if o, ports, g := built(); o || len(ports) > 0 || g {
		t.Fatalf("before any handler: origin %v, ports %v, gateways %v; want none", o, ports, g)
	}

	get := func(h http.Handler) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "http://x.test/", nil))
		return rec.Code
	}
	alt := p.Handler(8080, false)
	if o, ports, _ := built(); o || len(ports) != 1 || ports[0] != 8080 {
		t.Fatalf("after a handler for port 8080: origin %v, ports %v; want port 8080 only", o, ports)
	}
	if got := get(alt); got != 418 {
		t.Errorf("port 8080: %d, want 418", got)
	}
	if err := p.Load(cfg(419)); err != nil {
		t.Fatal(err)
	}
	if o, ports, _ := built(); o || len(ports) != 1 {
		t.Fatalf("the next config: origin %v, ports %v; want port 8080 only", o, ports)
	}
	origin := p.Handler(0, true)
	if got := get(origin); got != 419 {
		t.Errorf("origin, added after the config: %d, want 419", got)
	}
	if got := get(alt); got != 419 {
		t.Errorf("port 8080: %d, want 419", got)
	}
}

// The wire config is in normal form (proxycfg's package doc): what it
// leaves out is refused, naming the field, not defaulted.
func TestLoadRefusesDefaultsLeftOut(t *testing.T) {
	for name, c := range map[string]struct {
		edit func(*proxycfg.Config)
		want string
	}{
		"listener protocol": {func(c *proxycfg.Config) { c.Listeners[0].Protocol = "" }, `listener "gw/http": protocol "" is not HTTP, HTTPS, TCP or TLS`},
		"route kind":        {func(c *proxycfg.Config) { c.Routes[0].Kind = "" }, `route default/r: kind "" is not HTTPRoute, GRPCRoute, TCPRoute or TLSRoute`},
		"cluster protocol":  {func(c *proxycfg.Config) { c.Clusters[0].Protocol = "" }, `cluster "c": unknown protocol ""`},
		"rule matches":      {func(c *proxycfg.Config) { c.Routes[0].Rules[0].Matches = nil }, "route default/r rules[0]: matches: none"},
	} {
		t.Run(name, func(t *testing.T) {
			p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			defer p.Close()
			cfg := config([]proxycfg.Route{route("r", to("c"))}, cluster("c", "127.0.0.1:1"))
			if err := p.Load(cfg); err != nil {
				t.Fatalf("the complete config is refused: %v", err)
			}
			cfg = config([]proxycfg.Route{route("r", to("c"))}, cluster("c", "127.0.0.1:1"))
			c.edit(cfg)
			err := p.Load(cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
}
