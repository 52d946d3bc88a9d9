package hostile

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testpki"
)

// TestMain lets the tests that wait out the proxy's deadlines run their
// subtests side by side: they wait on timers, not on the CPU, so the
// default parallelism (GOMAXPROCS, 2 here) would only make them slow. An
// explicit -parallel is kept.
func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		flag.Set("test.parallel", "16")
	}
	os.Exit(m.Run())
}

// path is one way into the proxy: a listener and the protocol a client
// speaks on it.
type path struct {
	// name is "listener/protocol", e.g. "gateway-tls/h2"; tests use it as
	// the subtest name.
	name string
	// listener is origin, origin-nethttp, origin-tls, plain, gateway,
	// gateway-tls, ports or ports-tls (a proxy serving listener ports, as
	// a Gateway's own plane does).
	listener string
	// proto is h1, h2 (over TLS) or h2c.
	proto string
	addr  string // host:port
	// tls is the client's TLS configuration (root CA, server name, ALPN
	// for proto), nil for cleartext.
	tls *tls.Config
	// trusted says whether the listener trusts forwarding headers from its
	// peer (the origin listeners, where the peer is cloudflared).
	trusted bool
	// client speaks proto to addr, follows no redirect and never
	// decompresses.
	client *http.Client
}

// url is an absolute URL for target (path and query) on p.
func (p path) url(target string) string {
	scheme := "http"
	if p.tls != nil {
		scheme = "https"
	}
	return scheme + "://" + p.addr + target
}

// dial opens a raw connection to p: for TLS paths the handshake is done
// and ALPN chose p.proto's protocol. Callers speak HTTP/1.1 bytes on an h1
// path, and send the HTTP/2 preface themselves on h2 and h2c paths.
func (p path) dial(t testing.TB) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.addr, 5*time.Second)
	if err != nil {
		t.Fatalf("%s: dial: %v", p.name, err)
	}
	if p.tls == nil {
		return c
	}
	tc := tls.Client(c, p.tls)
	tc.SetDeadline(time.Now().Add(5 * time.Second))
	if err := tc.Handshake(); err != nil {
		c.Close()
		t.Fatalf("%s: TLS handshake: %v", p.name, err)
	}
	tc.SetDeadline(time.Time{})
	return tc
}

// env is a proxy under test: every listener open, one route on every
// listener sending everything to the test's backend.
type env struct {
	t *testing.T
	// p serves the origin (own server), TLS origin, plain and Gateway
	// listeners; pNet serves an origin listener with net/http's server;
	// pPorts serves listener ports on every address
	// (Options.ListenerPorts), the config's route on listeners of its own.
	p, pNet, pPorts *dataplane.Proxy
	paths           []path
	// cfg is the config p and pNet loaded.
	cfg *proxycfg.Config
	// admin, adminNet and adminPorts are the admin listeners of p, pNet
	// and pPorts (/metrics).
	admin, adminNet, adminPorts string
}

// setup tunes an env before it starts.
type setup struct {
	rule      func(*proxycfg.Rule)
	rules     []proxycfg.Rule
	cluster   func(*proxycfg.Cluster)
	options   func(*dataplane.Options)
	listeners func(*dataplane.ServeOptions)
	teams     []proxycfg.AccessTeam
}

// option is one change to the default setup.
type option func(*setup)

// withRule changes the route's only rule (retries, timeouts, filters).
func withRule(f func(*proxycfg.Rule)) option { return func(s *setup) { s.rule = f } }

// withRules gives the route these rules instead of its one, each sending
// to the backend unless it names backends of its own.
func withRules(rules ...proxycfg.Rule) option { return func(s *setup) { s.rules = rules } }

// withCluster changes the backend cluster (protocol, pool settings are
// proxy options).
func withCluster(f func(*proxycfg.Cluster)) option { return func(s *setup) { s.cluster = f } }

// withOptions changes the proxies' options (pool settings, access log).
func withOptions(f func(*dataplane.Options)) option { return func(s *setup) { s.options = f } }

// withAccessTeams gives the config Cloudflare Access teams, for a rule
// withRule protects.
func withAccessTeams(teams ...proxycfg.AccessTeam) option { return func(s *setup) { s.teams = teams } }

// withServeOptions changes what both proxies' Serve is given, after the
// harness filled it.
func withServeOptions(f func(*dataplane.ServeOptions)) option {
	return func(s *setup) { s.listeners = f }
}

// quiet is a logger for the proxies; set HOSTILE_LOG=1 to see their logs.
func quiet() *slog.Logger {
	if os.Getenv("HOSTILE_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newEnv starts three proxies with one route to backend (host:port of an
// HTTP/1.1 server, or of whatever protocol withCluster sets) and returns
// the ways in. Both stop when the test ends.
func newEnv(t *testing.T, backend string, opts ...option) *env {
	t.Helper()
	var s setup
	for _, o := range opts {
		o(&s)
	}
	ca := testpki.NewCA(t, "hostile test CA")
	gwIP := freeLoopbackIP(t)
	// Four ports free on every local address at once: the listener-ports
	// proxy binds its two on every address, so no port may be another's.
	// Envs made in parallel choose and bind theirs one after the other.
	portsMu.Lock()
	portsChosen := sync.OnceFunc(portsMu.Unlock)
	defer portsChosen()
	ports := freePorts(t, 4)
	gwHTTP, gwHTTPS := ports[0], ports[1]
	certPEM, keyPEM := ca.IssueServer(t, "localhost", gwIP)

	rule := proxycfg.Rule{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}, Backends: []proxycfg.BackendRef{{Cluster: "backend", Weight: 1}}}
	if s.rule != nil {
		s.rule(&rule)
	}
	rules := []proxycfg.Rule{rule}
	if s.rules != nil {
		rules = slices.Clone(s.rules)
		for i := range rules {
			if len(rules[i].Backends) == 0 {
				rules[i].Backends = rule.Backends
			}
		}
	}
	cl := proxycfg.Cluster{Name: "backend", Protocol: proxycfg.ProtoHTTP1, Endpoints: []proxycfg.Endpoint{{Address: backend}}}
	if s.cluster != nil {
		s.cluster(&cl)
	}
	cfg := &proxycfg.Config{
		Schema:  proxycfg.SchemaVersion,
		Version: "hostile",
		Listeners: []proxycfg.Listener{
			{Protocol: proxycfg.ListenerHTTP, Name: "default/gw/http", Port: 80},
			{Protocol: proxycfg.ListenerHTTP, Name: "default/gw/addr-http", Port: gwHTTP, Address: gwIP},
			{Name: "default/gw/addr-https", Port: gwHTTPS, Address: gwIP, Protocol: proxycfg.ListenerHTTPS,
				Certificates: []proxycfg.Certificate{{Cert: string(certPEM), Key: string(keyPEM)}}},
		},
		Routes: []proxycfg.Route{{
			Kind:      proxycfg.KindHTTP,
			Namespace: "default", Name: "r", Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			Listeners: []string{"default/gw/http", "default/gw/addr-http", "default/gw/addr-https"},
			Rules:     rules,
		}},
		Clusters:    []proxycfg.Cluster{cl},
		AccessTeams: s.teams,
	}
	e := &env{t: t, cfg: cfg}

	start := func(l dataplane.ServeOptions, cfg *proxycfg.Config, listenerPorts bool) (*dataplane.Proxy, dataplane.Bound) {
		o := dataplane.Options{Log: quiet()}
		if s.options != nil {
			s.options(&o)
		}
		o.ListenerPorts = listenerPorts
		p := dataplane.New(o)
		if err := p.Load(cfg); err != nil {
			t.Fatalf("Load: %v", err)
		}
		l.Grace, l.Admin = 2*time.Second, "127.0.0.1:0"
		if s.listeners != nil {
			s.listeners(&l)
		}
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan dataplane.Bound, 1)
		l.Ready = func(b dataplane.Bound) { ready <- b }
		done := make(chan error, 1)
		go func() { done <- p.Serve(ctx, l) }()
		var b dataplane.Bound
		select {
		case b = <-ready:
		case err := <-done:
			t.Fatalf("Serve: %v", err)
		}
		t.Cleanup(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Serve: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("Serve did not return within 10 s of shutdown")
			}
		})
		return p, b
	}
	var b dataplane.Bound
	e.p, b = start(dataplane.ServeOptions{
		Origin: "127.0.0.1:0", OriginTLS: "127.0.0.1:0", CertDir: t.TempDir(),
		Plain: "127.0.0.1:0", Gateways: true,
	}, cfg, false)
	var bNet, bPorts dataplane.Bound
	e.pNet, bNet = start(dataplane.ServeOptions{Origin: "127.0.0.1:0", OriginNetHTTP: true}, cfg, false)
	portHTTP, portHTTPS := ports[2], ports[3]
	e.pPorts, bPorts = start(dataplane.ServeOptions{}, portsConfig(cfg, portHTTP, portHTTPS), true)
	e.admin, e.adminNet, e.adminPorts = b.Admin, bNet.Admin, bPorts.Admin
	waitListening(t, net.JoinHostPort(gwIP, strconv.Itoa(gwHTTP)))
	waitListening(t, net.JoinHostPort(gwIP, strconv.Itoa(gwHTTPS)))
	waitListening(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(portHTTP)))
	waitListening(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(portHTTPS)))
	portsChosen()

	originCA, err := os.ReadFile(b.OriginCA)
	if err != nil {
		t.Fatal(err)
	}
	originRoots, gwRoots := x509.NewCertPool(), x509.NewCertPool()
	originRoots.AppendCertsFromPEM(originCA)
	gwRoots.AppendCertsFromPEM(ca.PEM)
	gwAddr := func(port int) string { return net.JoinHostPort(gwIP, strconv.Itoa(port)) }

	add := func(listener, proto, addr string, roots *x509.CertPool, trusted bool) {
		p := path{name: listener + "/" + proto, listener: listener, proto: proto, addr: addr, trusted: trusted}
		if roots != nil {
			p.tls = &tls.Config{RootCAs: roots, ServerName: "localhost", NextProtos: []string{"http/1.1"}}
			if proto == "h2" {
				p.tls.NextProtos = []string{"h2"}
			}
		}
		p.client = newClient(p)
		t.Cleanup(p.client.CloseIdleConnections)
		e.paths = append(e.paths, p)
	}
	add("origin", "h1", b.Origin, nil, true)
	add("origin-nethttp", "h1", bNet.Origin, nil, true)
	add("origin-tls", "h1", b.OriginTLS, originRoots, true)
	add("origin-tls", "h2", b.OriginTLS, originRoots, true)
	add("plain", "h1", b.Plain, nil, false)
	add("plain", "h2c", b.Plain, nil, false)
	add("gateway", "h1", gwAddr(gwHTTP), nil, false)
	add("gateway", "h2c", gwAddr(gwHTTP), nil, false)
	add("gateway-tls", "h1", gwAddr(gwHTTPS), gwRoots, false)
	add("gateway-tls", "h2", gwAddr(gwHTTPS), gwRoots, false)
	portAddr := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	add("ports", "h1", portAddr(portHTTP), nil, false)
	add("ports", "h2c", portAddr(portHTTP), nil, false)
	add("ports-tls", "h1", portAddr(portHTTPS), gwRoots, false)
	add("ports-tls", "h2", portAddr(portHTTPS), gwRoots, false)
	return e
}

// portsConfig is cfg for the listener-ports proxy: its route on an HTTP
// and an HTTPS listener of their own ports, with the Gateway address's
// certificate, and no address.
func portsConfig(cfg *proxycfg.Config, httpPort, httpsPort int) *proxycfg.Config {
	c := *cfg
	var https proxycfg.Listener
	for _, l := range cfg.Listeners {
		if l.Protocol == proxycfg.ListenerHTTPS {
			https = l
		}
	}
	c.Listeners = []proxycfg.Listener{
		{Protocol: proxycfg.ListenerHTTP, Name: "default/gw/ports-http", Port: httpPort},
		{Protocol: proxycfg.ListenerHTTPS, Name: "default/gw/ports-https", Port: httpsPort, Certificates: https.Certificates},
	}
	c.Routes = slices.Clone(cfg.Routes)
	for i := range c.Routes {
		c.Routes[i].Listeners = []string{"default/gw/ports-http", "default/gw/ports-https"}
	}
	return &c
}

// newClient is an http.Client that speaks p.proto to p.addr.
func newClient(p path) *http.Client {
	var ps http.Protocols
	switch p.proto {
	case "h1":
		ps.SetHTTP1(true)
	case "h2":
		ps.SetHTTP2(true)
	case "h2c":
		ps.SetUnencryptedHTTP2(true)
	}
	tr := &http.Transport{
		Protocols:           &ps,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 64,
		ForceAttemptHTTP2:   p.proto == "h2",
	}
	if p.tls != nil {
		tr.TLSClientConfig = p.tls.Clone()
		tr.TLSClientConfig.NextProtos = nil // the transport sets ALPN from Protocols
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// each runs f as a subtest for every path of e (or only those keep
// accepts, when given).
func (e *env) each(f func(t *testing.T, p path), keep ...func(path) bool) {
	e.t.Helper()
	for _, p := range e.paths {
		if len(keep) > 0 && !keep[0](p) {
			continue
		}
		e.t.Run(p.name, func(t *testing.T) { f(t, p) })
	}
}

// onH1 and onH2 select the paths that speak HTTP/1.1, or HTTP/2 (h2 or
// h2c), for each.
func onH1(p path) bool { return p.proto == "h1" }
func onH2(p path) bool { return p.proto != "h1" }

// freeLoopbackIP picks a 127.0.0.0/8 address other than 127.0.0.1, so a
// Gateway address of the test never collides with another listener.
func freeLoopbackIP(t testing.TB) string {
	t.Helper()
	for range 20 {
		ip := fmt.Sprintf("127.0.%d.%d", mrand.IntN(250)+1, mrand.IntN(250)+2)
		ln, err := net.Listen("tcp", ip+":0")
		if err == nil {
			ln.Close()
			return ip
		}
	}
	t.Fatal("no free loopback address")
	return ""
}

// portsMu is held by an env from choosing its ports until its proxies
// listen on them.
var portsMu sync.Mutex

// freePorts are n distinct TCP ports nothing listens on, on any local
// address: all are held open together while they are chosen. They come
// from below the kernel's ephemeral range, which it hands out for every
// ":0" listener (a test backend's, say): one of those could otherwise
// take a port between its choice here and the proxy's bind.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	low := ephemeralLow(t)
	var out []int
	for tries := 0; len(out) < n; tries++ {
		if tries > 1000 {
			t.Fatalf("no free port below %d", low)
		}
		port := low - 1 - mrand.IntN(low/2)
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			continue // taken
		}
		defer ln.Close()
		out = append(out, port)
	}
	return out
}

// ephemeralLow is the lowest port of the kernel's ephemeral range.
func ephemeralLow(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768 // Linux's default
	}
	f := strings.Fields(string(b))
	low, err := strconv.Atoi(f[0])
	if err != nil || low < 4096 {
		t.Fatalf("ip_local_port_range %q: want a range starting at 4096 or above", b)
	}
	return low
}

// freePort is a TCP port nothing listens on at ip.
func freePort(t testing.TB, ip string) int {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitListening waits for a Gateway address, which the proxy opens after
// Ready, to accept connections.
func waitListening(t testing.TB, addr string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway address %s never opened: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
