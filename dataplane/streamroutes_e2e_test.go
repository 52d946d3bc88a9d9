// This file implements the tests of stream routes through real sockets: TCP and TLS listeners, origin ports, backends, limits and drain.

package dataplane

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/realbackend"
	"github.com/tunnelgate/tunnelgate/test/testnet"
	"github.com/tunnelgate/tunnelgate/test/testpki"
)

// namedEcho is a TCP backend that writes its name and a newline, then
// echoes what it reads until the client half-closes, and closes.
func namedEcho(t *testing.T, name string) string {
	t.Helper()
	return testnet.RawServer(t, func(c net.Conn) {
		io.WriteString(c, name+"\n")
		io.Copy(c, c)
	})
}

// tcpCluster is a cluster of protocol tcp of addrs.
func tcpCluster(name string, addrs ...string) proxycfg.Cluster {
	c := proxycfg.Cluster{Name: name, Protocol: proxycfg.ProtoTCP, Endpoints: []proxycfg.Endpoint{}}
	for _, a := range addrs {
		c.Endpoints = append(c.Endpoints, proxycfg.Endpoint{Address: a})
	}
	return c
}

// l4Route is a stream route of kind on listeners, to backends.
func l4Route(kind proxycfg.RouteKind, name string, listeners []string, backends ...proxycfg.BackendRef) proxycfg.Route {
	return proxycfg.Route{
		Kind: kind, Namespace: "default", Name: name, Listeners: listeners,
		Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Rules:   []proxycfg.Rule{{Backends: backends}},
	}
}

// toCluster is a backend of weight 1 on cluster.
func toCluster(cluster string) proxycfg.BackendRef {
	return proxycfg.BackendRef{Cluster: cluster, Weight: 1}
}

// streamConfig is a config of listeners, routes and clusters.
func streamConfig(ls []proxycfg.Listener, routes []proxycfg.Route, clusters ...proxycfg.Cluster) *proxycfg.Config {
	return &proxycfg.Config{Schema: proxycfg.SchemaVersion, Version: "streams", Listeners: ls, Routes: routes, Clusters: clusters}
}

// quietProxy is a proxy that logs nothing, with opts changed by each of
// with.
func quietProxy(with ...func(*Options)) *Proxy {
	o := Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, f := range with {
		f(&o)
	}
	return New(o)
}

// serveStreams serves p on Gateway addresses and an origin listener
// until the test ends.
func serveStreams(t *testing.T, p *Proxy) Bound {
	t.Helper()
	return serveGateways(t, p, ServeOptions{Origin: "127.0.0.1:0"})
}

// streamTo dials addr and reads the backend's name; "" when the
// connection was closed before a name came.
func streamTo(t *testing.T, addr string) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	name, _ := r.ReadString('\n')
	return c, r, strings.TrimSuffix(name, "\n")
}

// pingPong writes a line on c and checks it comes back.
func pingPong(t *testing.T, c net.Conn, r *bufio.Reader, line string) {
	t.Helper()
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		t.Fatalf("writing: %v", err)
	}
	got, err := r.ReadString('\n')
	if err != nil || got != line+"\n" {
		t.Fatalf("echo: %q, %v; want %q", got, err, line)
	}
}

// closedByProxy checks that the proxy closes c without sending a byte.
func closedByProxy(t *testing.T, c net.Conn, r *bufio.Reader) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, err := r.ReadByte(); err == nil {
		t.Fatalf("read %q; want the connection closed", b)
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the connection is still open")
	}
}

// A TCP listener on a Gateway address and a route's origin port both
// relay bytes both ways, half-close included.
func TestStreamTCPRelay(t *testing.T) {
	backend := namedEcho(t, "a")
	port, originPort := freePort(t), freePort(t)
	r := l4Route(proxycfg.KindTCP, "ssh", []string{"gw/tcp"}, toCluster("a"))
	r.OriginPort = originPort
	cfg := streamConfig([]proxycfg.Listener{{Name: "gw/tcp", Protocol: proxycfg.ListenerTCP, Port: port, Address: "127.0.0.1"}},
		[]proxycfg.Route{r}, tcpCluster("a", backend))
	p := quietProxy()
	if err := p.Load(cfg); err != nil {
		t.Fatal(err)
	}
	serveStreams(t, p)
	for _, addr := range []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), net.JoinHostPort("127.0.0.1", strconv.Itoa(originPort))} {
		c, rd, name := streamTo(t, addr)
		if name != "a" {
			t.Fatalf("%s: backend %q; want a", addr, name)
		}
		pingPong(t, c, rd, "ping")
		c.(*net.TCPConn).CloseWrite()
		if rest, err := io.ReadAll(rd); err != nil || len(rest) != 0 {
			t.Fatalf("%s: after half-close read %q, %v; want EOF", addr, rest, err)
		}
	}
	if n := p.stats.Streams[observe.StreamRelayed].Load(); n != 2 {
		t.Errorf("relayed %d; want 2", n)
	}
}

// helloFor is the ClientHello a crypto/tls client sends for serverName.
func helloFor(t *testing.T, serverName string) []byte {
	t.Helper()
	client, server := net.Pipe()
	go tls.Client(client, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}).Handshake()
	defer client.Close()
	defer server.Close()
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(server, hdr); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	if _, err := io.ReadFull(server, body); err != nil {
		t.Fatal(err)
	}
	return append(hdr, body...)
}

// helloTo sends the hello for serverName to addr and returns the name of
// the backend that got it; "" when the proxy closed the connection.
func helloTo(t *testing.T, addr, serverName string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(helloFor(t, serverName)); err != nil {
		t.Fatal(err)
	}
	name, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(name, "\n")
}

// On a TLS socket the server name chooses the route: the exact
// hostname, then the longest wildcard, then a route without hostnames
// (its listener's hostname bounds it); the older route wins a tie; a
// name no route takes, or none, is closed.
func TestStreamTLSServerNames(t *testing.T) {
	port := freePort(t)
	ls := []proxycfg.Listener{{Name: "gw/tls", Protocol: proxycfg.ListenerTLS, Port: port, Address: "127.0.0.1"}}
	route := func(name string, hosts ...string) proxycfg.Route {
		r := l4Route(proxycfg.KindTLS, name, []string{"gw/tls"}, toCluster(name))
		r.Hostnames = hosts
		return r
	}
	routes := []proxycfg.Route{
		route("wild", "*.example.com"),
		route("deeper", "*.b.example.com"),
		route("exact", "a.example.com"),
		route("again", "a.example.com"),
	}
	p, clusters := serveNamedEchoes(t, ls, routes)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for sni, want := range map[string]string{
		"a.example.com":   "exact",
		"A.Example.COM.":  "exact",
		"c.example.com":   "wild",
		"x.b.example.com": "deeper",
		"y.x.example.com": "wild",
		"b.example.com":   "wild",
		"example.com":     "",
		"other.test":      "",
		"":                "",
	} {
		if got := helloTo(t, addr, sni); got != want {
			t.Errorf("server name %q: backend %q; want %q", sni, got, want)
		}
	}
	if n := p.stats.Streams[observe.StreamNoRoute].Load(); n != 3 {
		t.Errorf("no_route %d; want 3", n)
	}

	// A route without hostnames takes every name its listener takes.
	every := route("every")
	if err := p.Load(streamConfig(ls, append(routes, every), append(clusters, tcpCluster("every", namedEcho(t, "every")))...)); err != nil {
		t.Fatal(err)
	}
	if got := helloTo(t, addr, "other.test"); got != "every" {
		t.Errorf("other.test: backend %q; want every", got)
	}
}

// On a TLS socket of several listeners the server name chooses the
// listener first, the one whose hostname takes it most closely, and only
// that listener's routes may take it: a route is served for the
// intersection of its hostnames with its listener's (a route "*.com" on
// a listener "*.example.com" never takes other.com), its own hostnames
// rank it there (an older "*.com" loses a.example.com to "*.example.com"),
// and a name its listener takes but none of its routes does is closed,
// not handed to a less specific listener's route.
func TestStreamTLSListenerHostnames(t *testing.T) {
	port := freePort(t)
	ls := []proxycfg.Listener{
		{Name: "gw/wild", Protocol: proxycfg.ListenerTLS, Port: port, Address: "127.0.0.1", Hostname: "*.example.com"},
		{Name: "gw/exact", Protocol: proxycfg.ListenerTLS, Port: port, Address: "127.0.0.1", Hostname: "b.example.com"},
		{Name: "gw/any", Protocol: proxycfg.ListenerTLS, Port: port, Address: "127.0.0.1"},
	}
	route := func(name, listener string, hosts ...string) proxycfg.Route {
		r := l4Route(proxycfg.KindTLS, name, []string{listener}, toCluster(name))
		r.Hostnames = hosts
		return r
	}
	routes := []proxycfg.Route{
		route("broad", "gw/wild", "*.com"),
		route("narrow", "gw/wild", "*.example.com", "c.example.com"),
		route("org", "gw/any", "*.org"),
		route("exact", "gw/exact", "other.test"), // the listener takes none of its names
	}
	p, clusters := serveNamedEchoes(t, ls, routes)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for sni, want := range map[string]string{
		"a.example.com": "narrow",
		"c.example.com": "narrow",
		"other.com":     "", // "*.com" only within *.example.com
		"b.example.com": "", // listener gw/exact, whose route takes other names
		"x.org":         "org",
		"other.test":    "", // gw/any's route takes *.org only
	} {
		if got := helloTo(t, addr, sni); got != want {
			t.Errorf("server name %q: backend %q; want %q", sni, got, want)
		}
	}

	// Without the more specific route, the broad one takes the listener's
	// names, and still nothing outside them.
	if err := p.Load(streamConfig(ls, []proxycfg.Route{routes[0]}, clusters[0])); err != nil {
		t.Fatal(err)
	}
	for sni, want := range map[string]string{"a.example.com": "broad", "other.com": ""} {
		if got := helloTo(t, addr, sni); got != want {
			t.Errorf("after the edit, server name %q: backend %q; want %q", sni, got, want)
		}
	}
}

// serveNamedEchoes serves listeners and routes, each route's one backend
// a namedEcho of its own name (a cluster of that name), until the test
// ends; it returns the proxy and the clusters.
func serveNamedEchoes(t *testing.T, ls []proxycfg.Listener, routes []proxycfg.Route) (*Proxy, []proxycfg.Cluster) {
	t.Helper()
	var clusters []proxycfg.Cluster
	for _, r := range routes {
		clusters = append(clusters, tcpCluster(r.Name, namedEcho(t, r.Name)))
	}
	p := quietProxy()
	if err := p.Load(streamConfig(ls, routes, clusters...)); err != nil {
		t.Fatal(err)
	}
	serveStreams(t, p)
	return p, clusters
}

// tlsServer is OpenSSL's s_server with a certificate for host from ca.
func tlsServer(t *testing.T, ca *testpki.CA, host string) string {
	cert, key := ca.IssueServer(t, host)
	return realbackend.StartTLSServer(t, cert, key)
}

// TLS passthrough to real TLS servers: each TLSRoute's backend
// (openssl s_server) completes the handshake with the client itself,
// with its own certificate, through one socket of the proxy.
func TestStreamTLSPassthrough(t *testing.T) {
	ca := testpki.NewCA(t, "passthrough CA")
	port := freePort(t)
	ls := []proxycfg.Listener{{Name: "gw/tls", Protocol: proxycfg.ListenerTLS, Port: port, Address: "127.0.0.1"}}
	a, b := l4Route(proxycfg.KindTLS, "a", []string{"gw/tls"}, toCluster("a")), l4Route(proxycfg.KindTLS, "b", []string{"gw/tls"}, toCluster("b"))
	a.Hostnames, b.Hostnames = []string{"a.example.com"}, []string{"b.example.com"}
	cfg := streamConfig(ls, []proxycfg.Route{a, b},
		tcpCluster("a", tlsServer(t, ca, "a.example.com")), tcpCluster("b", tlsServer(t, ca, "b.example.com")))
	p := quietProxy()
	if err := p.Load(cfg); err != nil {
		t.Fatal(err)
	}
	serveStreams(t, p)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, host := range []string{"a.example.com", "b.example.com"} {
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{ServerName: host, RootCAs: roots}}
		c, err := d.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("%s: %v", host, err) // the other backend's certificate would not verify
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET / HTTP/1.0\r\n\r\n")
		body, _ := io.ReadAll(c)
		c.Close()
		if !strings.Contains(string(body), "200 ok") {
			t.Errorf("%s: answer %.200q", host, body)
		}
	}
}

// A backend with a Status refuses its share of connections; the other
// share is relayed.
func TestStreamWeights(t *testing.T) {
	port := freePort(t)
	r := l4Route(proxycfg.KindTCP, "half", []string{"gw/tcp"}, toCluster("a"), proxycfg.BackendRef{Weight: 1, Status: 500})
	p := quietProxy()
	if err := p.Load(streamConfig([]proxycfg.Listener{{Name: "gw/tcp", Protocol: proxycfg.ListenerTCP, Port: port, Address: "127.0.0.1"}},
		[]proxycfg.Route{r}, tcpCluster("a", namedEcho(t, "a")))); err != nil {
		t.Fatal(err)
	}
	serveStreams(t, p)
	got := map[string]int{}
	for range 40 {
		c, _, name := streamTo(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		c.Close()
		got[name]++
	}
	if got["a"] == 0 || got[""] == 0 || got["a"]+got[""] != 40 {
		t.Errorf("backends %v; want both shares", got)
	}
	if n := p.stats.Streams[observe.StreamRefused].Load(); n != int64(got[""]) {
		t.Errorf("refused %d; want %d", n, got[""])
	}
}

// An endpoint that refuses the connection gives way to the next.
func TestStreamDialFallsOver(t *testing.T) {
	port := freePort(t)
	r := l4Route(proxycfg.KindTCP, "r", []string{"gw/tcp"}, toCluster("a"))
	p := quietProxy()
	if err := p.Load(streamConfig([]proxycfg.Listener{{Name: "gw/tcp", Protocol: proxycfg.ListenerTCP, Port: port, Address: "127.0.0.1"}},
		[]proxycfg.Route{r}, tcpCluster("a", closedAddr(t), namedEcho(t, "live")))); err != nil {
		t.Fatal(err)
	}
	serveStreams(t, p)
	for range 4 {
		if _, _, name := streamTo(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); name != "live" {
			t.Fatalf("backend %q; want live", name)
		}
	}
	// A cluster of dead endpoints only: dial_failed.
	if err := p.Load(streamConfig([]proxycfg.Listener{{Name: "gw/tcp", Protocol: proxycfg.ListenerTCP, Port: port, Address: "127.0.0.1"}},
		[]proxycfg.Route{r}, tcpCluster("a", closedAddr(t)))); err != nil {
		t.Fatal(err)
	}
	c, rd, _ := streamTo(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	closedByProxy(t, c, rd)
	if n := p.stats.Streams[observe.StreamDialFailed].Load(); n != 1 {
		t.Errorf("dial_failed %d; want 1", n)
	}
}

// A config without a route closes the route's live connections; a
// config that edits it keeps them, and endpoint changes reach new
// connections.
func TestStreamRouteGoneOrEdited(t *testing.T) {
	port, other := freePort(t), freePort(t)
	ls := []proxycfg.Listener{
		{Name: "gw/tcp", Protocol: proxycfg.ListenerTCP, Port: port, Address: "127.0.0.1"},
		{Name: "gw/other", Protocol: proxycfg.ListenerTCP, Port: other, Address: "127.0.0.1"},
	}
	a, b := namedEcho(t, "a"), namedEcho(t, "b")
	kept := l4Route(proxycfg.KindTCP, "kept", []string{"gw/tcp"}, toCluster("a"))
	gone := l4Route(proxycfg.KindTCP, "gone", []string{"gw/other"}, toCluster("a"))
	p := quietProxy()
	if err := p.Load(streamConfig(ls, []proxycfg.Route{kept, gone}, tcpCluster("a", a))); err != nil {
		t.Fatal(err)
	}
	serveStreams(t, p)
	ck, rk, _ := streamTo(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	cg, rg, _ := streamTo(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(other)))

	edited := kept
	edited.Rules = []proxycfg.Rule{{Backends: []proxycfg.BackendRef{{Cluster: "a", Weight: 2}}}}
	next := streamConfig(ls, []proxycfg.Route{edited}, tcpCluster("a", b))
	next.Version = "next"
	if err := p.Load(next); err != nil {
		t.Fatal(err)
	}
	pingPong(t, ck, rk, "still")
	closedByProxy(t, cg, rg)
	if _, _, name := streamTo(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); name != "b" {
		t.Errorf("a new connection reached %q; want b, the cluster's new endpoint", name)
	}
}

// At shutdown the sockets close at once, and live streams run on
// within the grace period; past it they are cut.
func TestStreamDrain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace time.Duration
		cut   bool
	}{{"within grace", time.Minute, false}, {"past grace", 50 * time.Millisecond, true}} {
		t.Run(tc.name, func(t *testing.T) {
			port := freePort(t)
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			p := quietProxy()
			if err := p.Load(streamConfig([]proxycfg.Listener{{Name: "gw/tcp", Protocol: proxycfg.ListenerTCP, Port: port, Address: "127.0.0.1"}},
				[]proxycfg.Route{l4Route(proxycfg.KindTCP, "r", []string{"gw/tcp"}, toCluster("a"))}, tcpCluster("a", namedEcho(t, "a")))); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ready, done := make(chan Bound, 1), make(chan error, 1)
			go func() {
				done <- p.Serve(ctx, ServeOptions{Gateways: true, Admin: "127.0.0.1:0", Grace: tc.grace, Ready: func(b Bound) { ready <- b }})
			}()
			<-ready
			c, r, _ := streamTo(t, addr)
			cancel()
			if tc.cut {
				closedByProxy(t, c, r)
			} else {
				for range 100 { // bounded: the socket closes as shutdown starts
					if d, err := net.Dial("tcp", addr); err != nil {
						break
					} else {
						d.Close()
					}
					time.Sleep(10 * time.Millisecond)
				}
				pingPong(t, c, r, "draining")
				c.Close()
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Over the cap of streams a connection is closed at once, and counted.
func TestStreamOverLimit(t *testing.T) {
	port := freePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	p := quietProxy(func(o *Options) { o.Streams.MaxStreams = 1 })
	if err := p.Load(streamConfig([]proxycfg.Listener{{Name: "gw/tcp", Protocol: proxycfg.ListenerTCP, Port: port, Address: "127.0.0.1"}},
		[]proxycfg.Route{l4Route(proxycfg.KindTCP, "r", []string{"gw/tcp"}, toCluster("a"))}, tcpCluster("a", namedEcho(t, "a")))); err != nil {
		t.Fatal(err)
	}
	serveStreams(t, p)
	held, _, name := streamTo(t, addr)
	if name != "a" {
		t.Fatalf("first connection: backend %q", name)
	}
	c, r, _ := streamTo(t, addr)
	closedByProxy(t, c, r)
	if n := p.stats.Streams[observe.StreamOverLimit].Load(); n != 1 {
		t.Errorf("over_limit %d; want 1", n)
	}
	held.Close()
}

// Hostile clients of a TLS socket: one that sends no hello is closed
// after the handshake timeout; plain HTTP, and an oversized hello, are
// closed at once. None reaches a backend.
func TestStreamTLSHostile(t *testing.T) {
	port := freePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	r := l4Route(proxycfg.KindTLS, "r", []string{"gw/tls"}, toCluster("a"))
	p := quietProxy(func(o *Options) { o.Streams.HandshakeTimeout = 100 * time.Millisecond })
	if err := p.Load(streamConfig([]proxycfg.Listener{{Name: "gw/tls", Protocol: proxycfg.ListenerTLS, Port: port, Address: "127.0.0.1"}},
		[]proxycfg.Route{r}, tcpCluster("a", namedEcho(t, "a")))); err != nil {
		t.Fatal(err)
	}
	serveStreams(t, p)
	huge := []byte{22, 3, 1, 0x40, 0, 1, 0xff, 0xff, 0xff} // a record of 16 KiB holding a 16 MiB hello
	for name, send := range map[string][]byte{
		"silent":    nil,
		"plain":     []byte("GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
		"oversized": append(huge, make([]byte, 1000)...),
	} {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.Write(send)
			closedByProxy(t, c, bufio.NewReader(c))
		})
	}
	if n := p.stats.Streams[observe.StreamHandshakeFailed].Load(); n != 3 {
		t.Errorf("handshake_failed %d; want 3", n)
	}
	if n := p.stats.Streams[observe.StreamRelayed].Load(); n != 0 {
		t.Errorf("relayed %d; want 0", n)
	}
}

// Each relayed stream leaves an access log line with its route, cluster,
// endpoint, server name, bytes and end.
func TestStreamAccessLog(t *testing.T) {
	port := freePort(t)
	backend := namedEcho(t, "a")
	var out strings.Builder
	al := observe.NewAccessLog(&out, observe.AccessLogOptions{})
	p := quietProxy(func(o *Options) { o.AccessLog = al })
	r := l4Route(proxycfg.KindTLS, "pass", []string{"gw/tls"}, toCluster("a"))
	if err := p.Load(streamConfig([]proxycfg.Listener{{Name: "gw/tls", Protocol: proxycfg.ListenerTLS, Port: port, Address: "127.0.0.1"}},
		[]proxycfg.Route{r}, tcpCluster("a", backend))); err != nil {
		t.Fatal(err)
	}
	serveStreams(t, p)
	if got := helloTo(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), "x.example.com"); got != "a" {
		t.Fatalf("backend %q", got)
	}
	for range 500 { // bounded: the line is written when the pipe ends
		if p.stats.Streams[observe.StreamRelayed].Load() == 1 && heldStreams(p) == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	al.Close()
	line := out.String()
	for _, want := range []string{`"kind":"TLSRoute"`, `"route":"default/pass"`, `"sni":"x.example.com"`, `"backend":"a"`, `"endpoint":"` + backend + `"`, `"bytes_up":`, `"bytes_down":`, `"end":"client_closed"`, `"client_ip":"127.0.0.1"`} {
		if !strings.Contains(line, want) {
			t.Errorf("access log %q lacks %s", line, want)
		}
	}
}

// heldStreams is the connections the proxy's stream sockets hold.
func heldStreams(p *Proxy) int {
	if s := p.streams.Load(); s != nil {
		return s.live.count()
	}
	return 0
}

// A real sshd behind a TCP listener and behind an origin port: the
// OpenSSH client logs in through the proxy and runs a command.
func TestStreamSSH(t *testing.T) {
	sshd := realbackend.StartSSHD(t)
	port, originPort := freePort(t), freePort(t)
	r := l4Route(proxycfg.KindTCP, "ssh", []string{"gw/ssh"}, toCluster("sshd"))
	r.OriginPort = originPort
	p := quietProxy()
	if err := p.Load(streamConfig([]proxycfg.Listener{{Name: "gw/ssh", Protocol: proxycfg.ListenerTCP, Port: port, Address: "127.0.0.1"}},
		[]proxycfg.Route{r}, tcpCluster("sshd", sshd.Addr))); err != nil {
		t.Fatal(err)
	}
	serveStreams(t, p)
	for _, at := range []int{port, originPort} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := sshd.Command(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(at)), "echo", "hello").CombinedOutput()
		cancel()
		if err != nil || string(out) != "hello\n" {
			t.Fatalf("ssh through port %d: %q, %v", at, out, err)
		}
	}
	if n := p.stats.Streams[observe.StreamRelayed].Load(); n != 2 {
		t.Errorf("relayed %d; want 2", n)
	}
}

// A proxy with a stream host (standalone mode) serves a TCP listener
// without an address at its port on that host, and gives an HTTP
// listener no socket of its own: HTTP is served by hostname on the
// plain listener.
func TestStreamHost(t *testing.T) {
	port, httpPort := freePort(t), freePort(t)
	web := route("web", to("h"))
	web.Namespace, web.Listeners = "default", []string{"gw/http"}
	p := quietProxy(func(o *Options) { o.StreamHost = netip.MustParseAddr("127.0.0.1") })
	if err := p.Load(streamConfig([]proxycfg.Listener{
		{Name: "gw/tcp", Protocol: proxycfg.ListenerTCP, Port: port},
		{Name: "gw/http", Protocol: proxycfg.ListenerHTTP, Port: httpPort},
	}, []proxycfg.Route{l4Route(proxycfg.KindTCP, "r", []string{"gw/tcp"}, toCluster("a")), web},
		tcpCluster("a", namedEcho(t, "a")), cluster("h", startBackend(t, echo("h"))))); err != nil {
		t.Fatal(err)
	}
	b := serveUntilCleanup(t, p, ServeOptions{Plain: "127.0.0.1:0", Admin: "127.0.0.1:0", Grace: time.Second})
	if _, _, name := streamTo(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); name != "a" {
		t.Errorf("the TCP listener's port: backend %q", name)
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort)), time.Second); err == nil {
		c.Close()
		t.Errorf("the HTTP listener's port %d is open; want HTTP on the plain listener alone", httpPort)
	}
	if got, err := backendAt(&http.Client{Timeout: 10 * time.Second}, "http://"+b.Plain+"/", ""); err != nil || got != "h" {
		t.Errorf("the plain listener: %q, %v", got, err)
	}
}

// A proxy serving listener ports (a Gateway's own data plane) opens a TCP
// listener's port on every local address, beside an HTTP listener's.
func TestStreamListenerPorts(t *testing.T) {
	port, httpPort := freePort(t), freePort(t)
	web := route("web", to("h"))
	web.Namespace, web.Listeners = "default", []string{"gw/http"}
	p := quietProxy(func(o *Options) { o.ListenerPorts = true })
	if err := p.Load(streamConfig([]proxycfg.Listener{
		{Name: "gw/tcp", Protocol: proxycfg.ListenerTCP, Port: port},
		{Name: "gw/http", Protocol: proxycfg.ListenerHTTP, Port: httpPort},
	}, []proxycfg.Route{l4Route(proxycfg.KindTCP, "r", []string{"gw/tcp"}, toCluster("a")), web},
		tcpCluster("a", namedEcho(t, "a")), cluster("h", startBackend(t, echo("h"))))); err != nil {
		t.Fatal(err)
	}
	serveGateways(t, p, ServeOptions{})
	if _, _, name := streamTo(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); name != "a" {
		t.Errorf("the TCP listener's port: backend %q", name)
	}
	if got, err := backendAt(&http.Client{Timeout: 10 * time.Second}, "http://127.0.0.1:"+strconv.Itoa(httpPort)+"/", ""); err != nil || got != "h" {
		t.Errorf("the HTTP listener's port: %q, %v", got, err)
	}
}
