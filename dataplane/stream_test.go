// This file implements the tests of stream routes' checks at compile, and of a patch beside them.

package dataplane

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// A config that breaks a rule of stream routes is refused whole, with an
// error naming the route or listener and the field.
func TestStreamConfigRefused(t *testing.T) {
	base := func() *proxycfg.Config {
		ls := []proxycfg.Listener{
			{Name: "gw/tcp", Protocol: proxycfg.ListenerTCP, Port: 22},
			{Name: "gw/tls", Protocol: proxycfg.ListenerTLS, Port: 443},
			{Name: "gw/http", Protocol: proxycfg.ListenerHTTP, Port: 80},
		}
		tcp := l4Route(proxycfg.KindTCP, "ssh", []string{"gw/tcp"}, toCluster("t"))
		tlsr := l4Route(proxycfg.KindTLS, "pass", []string{"gw/tls"}, toCluster("t"))
		tlsr.Hostnames = []string{"a.example.com"}
		web := route("web", to("h"))
		web.Namespace, web.Listeners = "default", []string{"gw/http"}
		return streamConfig(ls, []proxycfg.Route{tcp, tlsr, web}, tcpCluster("t", "127.0.0.1:1"), cluster("h", "127.0.0.1:2"))
	}
	for _, tc := range []struct {
		name string
		edit func(*proxycfg.Config)
		want string
	}{
		{"two rules", func(c *proxycfg.Config) { c.Routes[0].Rules = append(c.Routes[0].Rules, c.Routes[0].Rules[0]) }, "TCPRoute default/ssh: has 2 rules"},
		{"matches", func(c *proxycfg.Config) { c.Routes[0].Rules[0].Matches = everyPath() }, "TCPRoute default/ssh rules[0]: matches on a stream route"},
		{"filters", func(c *proxycfg.Config) {
			c.Routes[1].Rules[0].Filters = []proxycfg.Filter{{Type: proxycfg.FilterRequestHeaderModifier}}
		}, "TLSRoute default/pass rules[0]: filters"},
		{"access", func(c *proxycfg.Config) { c.Routes[0].Rules[0].Access = &proxycfg.Access{Team: "x"} }, "rules[0]: access on a stream route"},
		{"http cluster", func(c *proxycfg.Config) { c.Routes[0].Rules[0].Backends[0].Cluster = "h" }, `backends[0]: cluster "h" is of protocol "http1"`},
		{"missing cluster", func(c *proxycfg.Config) { c.Routes[0].Rules[0].Backends[0].Cluster = "nope" }, `cluster "nope" is not defined`},
		{"tcp on tls", func(c *proxycfg.Config) { c.Routes[0].Listeners = []string{"gw/tls"} }, `TCPRoute default/ssh: listener "gw/tls" is TLS`},
		{"tls on http", func(c *proxycfg.Config) { c.Routes[1].Listeners = []string{"gw/http"} }, `TLSRoute default/pass: listener "gw/http" is HTTP`},
		{"tcp hostnames", func(c *proxycfg.Config) { c.Routes[0].Hostnames = []string{"a.example.com"} }, "hostnames on a TCPRoute"},
		{"http on tcp", func(c *proxycfg.Config) { c.Routes[2].Listeners = []string{"gw/tcp"} }, `route default/web: listener "gw/tcp" is TCP`},
		{"http to tcp cluster", func(c *proxycfg.Config) { c.Routes[2].Rules[0].Backends[0].Cluster = "t" }, `route default/web rules[0]: cluster "t" is of protocol "tcp"`},
		{"origin port range", func(c *proxycfg.Config) { c.Routes[0].OriginPort = 70000 }, "originPort 70000 out of range"},
		{"origin port twice", func(c *proxycfg.Config) { c.Routes[0].OriginPort, c.Routes[1].OriginPort = 20000, 20000 }, "TLSRoute default/pass: originPort 20000 is TCPRoute default/ssh's too"},
		{"unknown protocol", func(c *proxycfg.Config) { c.Listeners[0].Protocol = "UDP" }, `listener "gw/tcp": protocol "UDP" is not HTTP, HTTPS, TCP or TLS`},
		{"mixed socket", func(c *proxycfg.Config) {
			c.Listeners[0].Address, c.Listeners[2].Address, c.Listeners[2].Port = "127.0.0.1", "127.0.0.1", 22
		}, `listener "gw/http": HTTP on 127.0.0.1:22, where another listener is TCP`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base()
			p := quietProxy()
			if err := p.Load(cfg); err != nil {
				t.Fatalf("the base config: %v", err)
			}
			cfg = base()
			tc.edit(cfg)
			cfg.Version = "bad"
			err := p.Load(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want one saying %q", err, tc.want)
			}
			if p.Version() != "streams" {
				t.Errorf("serving %q; want the last good config", p.Version())
			}
		})
	}
}

// An origin port may not be one of the origin listeners' own.
func TestStreamOriginPortOfOrigin(t *testing.T) {
	p := quietProxy()
	b := serveGateways(t, p, ServeOptions{Origin: "127.0.0.1:0"})
	_, port, _ := net.SplitHostPort(b.Origin)
	r := l4Route(proxycfg.KindTCP, "ssh", nil, toCluster("t"))
	r.OriginPort, _ = strconv.Atoi(port)
	err := p.Load(streamConfig(nil, []proxycfg.Route{r}, tcpCluster("t", "127.0.0.1:1")))
	if err == nil || !strings.Contains(err.Error(), "is an origin listener's own port") {
		t.Fatalf("error %v; want the origin port refused", err)
	}
}

// A config that edits only an HTTP route is patched and keeps the
// stream routes as they are; one that removes a stream route is compiled
// whole, and its connections are closed.
func TestStreamPatch(t *testing.T) {
	port := freePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ls := []proxycfg.Listener{
		{Name: "gw/tcp", Protocol: proxycfg.ListenerTCP, Port: port, Address: "127.0.0.1"},
		{Name: "gw/http", Protocol: proxycfg.ListenerHTTP, Port: 80},
	}
	web := route("web", to("h"))
	web.Namespace, web.Listeners = "default", []string{"gw/http"}
	tcp := l4Route(proxycfg.KindTCP, "ssh", []string{"gw/tcp"}, toCluster("t"))
	cfg := streamConfig(ls, []proxycfg.Route{tcp, web}, tcpCluster("t", namedEcho(t, "t")), cluster("h", "127.0.0.1:2"))
	p := quietProxy()
	if err := p.Load(cfg); err != nil {
		t.Fatal(err)
	}
	serveStreams(t, p)
	held, rd, _ := streamTo(t, addr)

	edited := *cfg
	edited.Version = "edited"
	edited.Routes = []proxycfg.Route{tcp, web}
	edited.Routes[1].Rules = []proxycfg.Rule{to("h")}
	edited.Routes[1].Rules[0].Backends[0].Weight = 2
	if how, err := p.Apply(&edited); err != nil || how != proxycfg.AppliedRoutes {
		t.Fatalf("applied %v, %v; want a patch", how, err)
	}
	pingPong(t, held, rd, "kept")
	if _, _, name := streamTo(t, addr); name != "t" {
		t.Fatalf("after the patch: backend %q", name)
	}

	removed := edited
	removed.Version = "removed"
	removed.Routes = []proxycfg.Route{edited.Routes[1]}
	if how, err := p.Apply(&removed); err != nil || how != proxycfg.AppliedAll {
		t.Fatalf("applied %v, %v; want a whole compile", how, err)
	}
	closedByProxy(t, held, rd)
	c, r, _ := streamTo(t, addr)
	closedByProxy(t, c, r) // its listener is there: no route

	// A stream route added back is compiled whole too.
	if how, err := p.Apply(&edited); err != nil || how != proxycfg.AppliedAll {
		t.Fatalf("applied %v, %v; want a whole compile", how, err)
	}
	if _, _, name := streamTo(t, addr); name != "t" {
		t.Fatalf("the route back: backend %q", name)
	}
}

// A config that changes only a tcp cluster's endpoints is applied as a
// cluster update, and new connections reach the new endpoints; one that
// makes a cluster of protocol tcp an HTTP one is compiled whole, and
// refused while a stream route names it.
func TestStreamClusterUpdate(t *testing.T) {
	port := freePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ls := []proxycfg.Listener{{Name: "gw/tcp", Protocol: proxycfg.ListenerTCP, Port: port, Address: "127.0.0.1"}}
	routes := []proxycfg.Route{l4Route(proxycfg.KindTCP, "ssh", []string{"gw/tcp"}, toCluster("t"))}
	p := quietProxy()
	if err := p.Load(streamConfig(ls, routes, tcpCluster("t", namedEcho(t, "old")))); err != nil {
		t.Fatal(err)
	}
	serveStreams(t, p)
	next := streamConfig(ls, routes, tcpCluster("t", namedEcho(t, "new")))
	next.Version = "endpoints"
	if how, err := p.Apply(next); err != nil || how != proxycfg.AppliedClusters {
		t.Fatalf("applied %v, %v; want a cluster update", how, err)
	}
	if _, _, name := streamTo(t, addr); name != "new" {
		t.Errorf("backend %q; want new", name)
	}
	http1 := streamConfig(ls, routes, cluster("t", "127.0.0.1:1"))
	http1.Version = "http1"
	if _, err := p.Apply(http1); err == nil || !strings.Contains(err.Error(), `cluster "t" is of protocol "http1"`) {
		t.Fatalf("error %v; want the stream route's cluster refused", err)
	}
}
