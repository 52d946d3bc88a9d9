package dataplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// gatewayConfig is a config with one HTTP Gateway on each of addrs (no
// hostname, port), each routing everything to its own backend.
func gatewayConfig(port int, addrs map[string]string) *proxycfg.Config {
	var ls []proxycfg.Listener
	backends := map[string]string{}
	for addr, backend := range addrs {
		name := "gw-" + addr + "/http"
		ls = append(ls, proxycfg.Listener{Protocol: proxycfg.ListenerHTTP, Name: name, Port: port, Address: addr})
		backends[name] = backend
	}
	return routeEach(ls, backends)
}

// routeEach is a config of listeners ls, each with a route of its own
// sending everything to its backend in backends (by listener name).
func routeEach(ls []proxycfg.Listener, backends map[string]string) *proxycfg.Config {
	cfg := &proxycfg.Config{Schema: proxycfg.SchemaVersion, Version: "route-each", Listeners: ls}
	for _, l := range ls {
		r := route("default/"+l.Name, to(l.Name))
		r.Namespace, r.Listeners, r.Created = "default", []string{l.Name}, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		cfg.Routes = append(cfg.Routes, r)
		cfg.Clusters = append(cfg.Clusters, cluster(l.Name, backends[l.Name]))
	}
	return cfg
}

// serveGateways runs p with l until the test ends, serving its sockets of
// their own: Gateway addresses or, for a proxy made with
// Options.ListenerPorts, listener ports. It returns the bound listeners.
func serveGateways(t *testing.T, p *Proxy, l ServeOptions) Bound {
	t.Helper()
	l.Gateways = !p.opts.ListenerPorts
	l.Admin, l.Grace = "127.0.0.1:0", time.Second
	return serveUntilCleanup(t, p, l)
}

// serveOneRoute serves, on gateway addresses, listeners and one route on
// all of them to backend, until the test ends.
func serveOneRoute(t *testing.T, backend string, listeners ...proxycfg.Listener) (*proxycfg.Config, *Proxy) {
	t.Helper()
	cfg := &proxycfg.Config{Schema: proxycfg.SchemaVersion, Version: "one-route", Listeners: listeners, Clusters: []proxycfg.Cluster{cluster("c", backend)}}
	r := route("default/r", to("c"))
	r.Namespace, r.Created = "default", time.Now()
	for _, l := range listeners {
		r.Listeners = append(r.Listeners, l.Name)
	}
	cfg.Routes = []proxycfg.Route{r}
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := p.Load(cfg); err != nil {
		t.Fatal(err)
	}
	serveGateways(t, p, ServeOptions{})
	return cfg, p
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// dialTo is a DialContext that dials addr whatever host a request names,
// so that it can name hosts no resolver knows.
func dialTo(addr string) func(ctx context.Context, network, _ string) (net.Conn, error) {
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
}

// backendAt asks url with client, for host (the URL's when ""), and says
// which echo backend answered.
func backendAt(client *http.Client, url, host string) (string, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return "", err
	}
	if host != "" {
		req.Host = host
	}
	res, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return echoed(string(body), "backend"), nil
}

// Each Gateway answers on its own address with its own routes, even on the
// same port and with the same (empty) hostname; a Gateway gone from the
// config stops answering, and one added starts, without a restart.
func TestGatewayAddresses(t *testing.T) {
	a, b := startBackend(t, echo("a")), startBackend(t, echo("b"))
	port := freePort(t)
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := p.Load(gatewayConfig(port, map[string]string{"127.0.0.2": a, "127.0.0.3": b})); err != nil {
		t.Fatal(err)
	}
	serveGateways(t, p, ServeOptions{})
	get := func(addr string) (string, error) {
		return backendAt(http.DefaultClient, "http://"+net.JoinHostPort(addr, strconv.Itoa(port))+"/x", "")
	}
	for addr, want := range map[string]string{"127.0.0.2": "a", "127.0.0.3": "b"} {
		if got, err := get(addr); err != nil || got != want {
			t.Errorf("%s: backend %q, %v; want %q", addr, got, err, want)
		}
	}

	if err := p.Load(gatewayConfig(port, map[string]string{"127.0.0.2": a, "127.0.0.4": b})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "127.0.0.3 closed", func() bool { _, err := get("127.0.0.3"); return err != nil })
	if got, err := get("127.0.0.4"); err != nil || got != "b" {
		t.Errorf("the added Gateway: %q, %v", got, err)
	}
	if got, err := get("127.0.0.2"); err != nil || got != "a" {
		t.Errorf("the kept Gateway: %q, %v", got, err)
	}
}

// An HTTPS Gateway address terminates TLS with the certificate of the
// listener the client names in SNI: exact, then wildcard, then the
// listener without hostname; the certificate follows a config change.
func TestGatewayHTTPS(t *testing.T) {
	ca := btlsCA(t, "gateway CA", nil)
	exact := btlsLeafCN(t, ca, "exact", []string{"a.example.com"}, nil, x509.ExtKeyUsageServerAuth)
	wild := btlsLeafCN(t, ca, "wild", []string{"*.example.org"}, nil, x509.ExtKeyUsageServerAuth)
	dflt := btlsLeafCN(t, ca, "default", []string{"other.test"}, nil, x509.ExtKeyUsageServerAuth)
	backend := startBackend(t, echo("tls"))
	port := freePort(t)
	listener := func(name, host string, c *btlsTestCert) proxycfg.Listener {
		return proxycfg.Listener{Name: name, Hostname: host, Port: port, Protocol: proxycfg.ListenerHTTPS, Address: "127.0.0.5",
			Certificates: []proxycfg.Certificate{{Cert: c.certPEM(), Key: c.keyPEM(t)}}}
	}
	cfg, p := serveOneRoute(t, backend,
		listener("gw/exact", "a.example.com", exact), listener("gw/wild", "*.example.org", wild), listener("gw/any", "", dflt))

	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	addr := net.JoinHostPort("127.0.0.5", strconv.Itoa(port))
	served := func(sni string) string {
		// Which certificate is served, not whether it fits the name.
		conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
		if err != nil {
			return "error: " + err.Error()
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	for sni, want := range map[string]string{"a.example.com": "exact", "x.example.org": "wild", "": "default", "b.example.com": "default"} {
		if got := served(sni); got != want {
			t.Errorf("SNI %q: certificate %q, want %q", sni, got, want)
		}
	}
	var h2 http.Protocols
	h2.SetHTTP2(true)
	c := &http.Client{Transport: &http.Transport{Protocols: &h2, TLSClientConfig: &tls.Config{RootCAs: roots}}}
	res, err := c.Get("https://a.example.com:" + strconv.Itoa(port) + "/")
	if err == nil {
		res.Body.Close()
		t.Fatal("a.example.com resolved: this test dials the address itself")
	}
	tr := &http.Transport{Protocols: &h2, TLSClientConfig: &tls.Config{RootCAs: roots}, DialContext: dialTo(addr)}
	res, err = (&http.Client{Transport: tr}).Get("https://x.example.org/p")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.ProtoMajor != 2 || echoed(string(body), "backend") != "tls" || echoed(string(body), "X-Forwarded-Proto") != "https" {
		t.Errorf("HTTPS request: %s %q", res.Proto, body)
	}

	// A request for a host whose listener is not the one the connection
	// was made for (SNI) is misdirected: 421, so the client reconnects.
	// Hosts of the same listener share a connection.
	for _, c := range []struct {
		sni, host string
		want      int
	}{
		{"a.example.com", "a.example.com", 200},
		{"a.example.com", "x.example.org", 421},
		{"x.example.org", "y.example.org", 200},
		{"x.example.org", "a.example.com", 421},
		{"other.test", "elsewhere.test", 200}, // both the listener without hostname
	} {
		tr := &http.Transport{Protocols: &h2, TLSClientConfig: &tls.Config{ServerName: c.sni, InsecureSkipVerify: true}, DialContext: dialTo(addr)}
		req, _ := http.NewRequest("GET", "https://"+c.host+"/", nil)
		res, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatalf("SNI %s, Host %s: %v", c.sni, c.host, err)
		}
		res.Body.Close()
		if res.StatusCode != c.want {
			t.Errorf("SNI %s, Host %s: %d, want %d", c.sni, c.host, res.StatusCode, c.want)
		}
	}

	// A new certificate for the exact host, without reopening the socket.
	again := btlsLeafCN(t, ca, "exact-2", []string{"a.example.com"}, nil, x509.ExtKeyUsageServerAuth)
	cfg.Listeners[0].Certificates = []proxycfg.Certificate{{Cert: again.certPEM(), Key: again.keyPEM(t)}}
	cfg.Version = "https-2"
	if err := p.Load(cfg); err != nil {
		t.Fatal(err)
	}
	if got := served("a.example.com"); got != "exact-2" {
		t.Errorf("after the change: %q", got)
	}
}

// Configs a proxy cannot serve on gateway addresses are refused whole.
func TestGatewayAddressesRefused(t *testing.T) {
	ca := btlsCA(t, "gateway CA", nil)
	leaf := btlsLeafCN(t, ca, "x", []string{"x.test"}, nil, x509.ExtKeyUsageServerAuth)
	cert := []proxycfg.Certificate{{Cert: leaf.certPEM(), Key: leaf.keyPEM(t)}}
	for name, c := range map[string]struct {
		ls   []proxycfg.Listener
		want string
	}{
		"not an IP":           {[]proxycfg.Listener{{Protocol: proxycfg.ListenerHTTP, Name: "l", Port: 80, Address: "gw.example.com"}}, "is not an IP address"},
		"no port":             {[]proxycfg.Listener{{Protocol: proxycfg.ListenerHTTP, Name: "l", Address: "10.0.0.1"}}, "needs a port"},
		"HTTPS without":       {[]proxycfg.Listener{{Name: "l", Port: 443, Protocol: proxycfg.ListenerHTTPS, Address: "10.0.0.1"}}, "needs a certificate"},
		"certificate on HTTP": {[]proxycfg.Listener{{Protocol: proxycfg.ListenerHTTP, Name: "l", Port: 80, Address: "10.0.0.1", Certificates: cert}}, "neither HTTPS nor TLS"},
		"mixed protocols": {[]proxycfg.Listener{{Protocol: proxycfg.ListenerHTTP, Name: "a", Port: 80, Address: "10.0.0.1"}, {Name: "b", Hostname: "x.test", Port: 80, Protocol: proxycfg.ListenerHTTPS, Address: "10.0.0.1", Certificates: cert}},
			"HTTPS on 10.0.0.1:80, where another listener is HTTP"},
		"validation on HTTP": {[]proxycfg.Listener{{Protocol: proxycfg.ListenerHTTP, Name: "l", Port: 80, Address: "10.0.0.1", ClientValidation: &proxycfg.ClientValidation{CACertificates: leaf.certPEM()}}}, "not HTTPS"},
		"junk client CA": {[]proxycfg.Listener{{Name: "l", Port: 443, Protocol: proxycfg.ListenerHTTPS, Address: "10.0.0.1", Certificates: cert, ClientValidation: &proxycfg.ClientValidation{CACertificates: "junk"}}},
			"no usable PEM certificate"},
		"validations differ on a port": {[]proxycfg.Listener{
			{Name: "a", Hostname: "a.test", Port: 443, Protocol: proxycfg.ListenerHTTPS, Address: "10.0.0.1", Certificates: cert, ClientValidation: &proxycfg.ClientValidation{CACertificates: leaf.certPEM()}},
			{Name: "b", Hostname: "b.test", Port: 443, Protocol: proxycfg.ListenerHTTPS, Address: "10.0.0.1", Certificates: cert}},
			"client certificate validation differs"},
		"bad certificate": {[]proxycfg.Listener{{Name: "l", Port: 443, Protocol: proxycfg.ListenerHTTPS, Address: "10.0.0.1", Certificates: []proxycfg.Certificate{{Cert: "junk", Key: "junk"}}}}, "certificates[0]"},
	} {
		p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		err := p.Load(&proxycfg.Config{Schema: proxycfg.SchemaVersion, Version: "bad", Listeners: c.ls})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
}

// Client certificate validation on HTTPS Gateway addresses: required, the
// handshake refuses a missing or foreign certificate; with the insecure
// fallback every client gets through. New CAs apply without reopening the
// socket. Where no handshake with the client happens (the origin listener
// behind the tunnel), a listener that requires a certificate fails closed.
func TestGatewayClientValidation(t *testing.T) {
	serverCA, caA, caB := btlsCA(t, "server CA", nil), btlsCA(t, "client CA A", nil), btlsCA(t, "client CA B", nil)
	srv := btlsLeafCN(t, serverCA, "server", []string{"mtls.test"}, nil, x509.ExtKeyUsageServerAuth)
	fromA := btlsLeafCN(t, caA, "client-a", nil, nil, x509.ExtKeyUsageClientAuth)
	fromB := btlsLeafCN(t, caB, "client-b", nil, nil, x509.ExtKeyUsageClientAuth)
	backend := startBackend(t, echo("mtls"))
	required, fallback := freePort(t), freePort(t)
	listener := func(name string, port int, cv *proxycfg.ClientValidation) proxycfg.Listener {
		return proxycfg.Listener{Name: name, Hostname: "mtls.test", Port: port, Protocol: proxycfg.ListenerHTTPS, Address: "127.0.0.7",
			Certificates: []proxycfg.Certificate{{Cert: srv.certPEM(), Key: srv.keyPEM(t)}}, ClientValidation: cv}
	}
	cfg, p := serveOneRoute(t, backend,
		listener("gw/required", required, &proxycfg.ClientValidation{CACertificates: caA.certPEM()}),
		listener("gw/fallback", fallback, &proxycfg.ClientValidation{CACertificates: caA.certPEM(), AllowInsecureFallback: true}))
	r := cfg.Routes[0]

	roots := x509.NewCertPool()
	roots.AddCert(serverCA.cert)
	get := func(port int, client *btlsTestCert) string {
		tc := &tls.Config{RootCAs: roots, ServerName: "mtls.test"}
		if client != nil {
			tc.Certificates = []tls.Certificate{client.tlsCert()}
		}
		addr := net.JoinHostPort("127.0.0.7", strconv.Itoa(port))
		tr := &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true, DialContext: dialTo(addr)}
		res, err := (&http.Client{Transport: tr}).Get("https://mtls.test/")
		if err != nil {
			return "refused"
		}
		res.Body.Close()
		return strconv.Itoa(res.StatusCode)
	}
	check := func(when string, port int, want map[*btlsTestCert]string) {
		t.Helper()
		for client, w := range want {
			name := "no certificate"
			if client != nil {
				name = client.cert.Subject.CommonName
			}
			if got := get(port, client); got != w {
				t.Errorf("%s, %s: %s, want %s", when, name, got, w)
			}
		}
	}
	check("required", required, map[*btlsTestCert]string{fromA: "200", fromB: "refused", nil: "refused"})
	check("fallback", fallback, map[*btlsTestCert]string{fromA: "200", fromB: "200", nil: "200"})

	// Behind the tunnel no client certificate was checked here.
	for _, c := range []struct {
		listener string
		want     int
	}{{"gw/required", 403}, {"gw/fallback", 200}} {
		one := *cfg
		one.Version = "origin-" + c.listener
		one.Listeners = nil
		for _, l := range cfg.Listeners {
			if l.Name == c.listener {
				one.Listeners = append(one.Listeners, l)
			}
		}
		one.Routes = []proxycfg.Route{r}
		one.Routes[0].Listeners = []string{c.listener}
		if err := p.Load(&one); err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		p.Handler(0, true).ServeHTTP(rec, httptest.NewRequest("GET", "https://mtls.test/", nil))
		if rec.Code != c.want {
			t.Errorf("origin listener, %s: %d, want %d", c.listener, rec.Code, c.want)
		}
	}

	// Another CA, on the open socket.
	cfg.Listeners[0].ClientValidation = &proxycfg.ClientValidation{CACertificates: caB.certPEM()}
	cfg.Version = "mtls-2"
	if err := p.Load(cfg); err != nil {
		t.Fatal(err)
	}
	check("after the change", required, map[*btlsTestCert]string{fromA: "refused", fromB: "200"})
}

// ownSockets are the addresses of the sockets of their own p serves.
func ownSockets(p *Proxy) []string {
	g := p.gateways.Load()
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for e := range g.servers {
		out = append(out, e.String())
	}
	slices.Sort(out)
	return out
}

// A proxy made with Options.ListenerPorts (a Gateway's own data plane)
// serves each listener port on every local address, whether its
// listeners have an address or not: HTTP on one port, HTTPS with the
// certificate SNI names on another, beside the origin listener, which
// serves every listener by Host, those without a port too. A listener
// moved to another port is served there, its old socket closed; a config
// mixing protocols on one port is refused, the previous one kept.
func TestListenerPorts(t *testing.T) {
	backends := map[string]string{
		"gw/http": startBackend(t, echo("plain")), "gw/https": startBackend(t, echo("tls")), "gw/tunnel": startBackend(t, echo("tunnel")),
	}
	ca := btlsCA(t, "plane CA", nil)
	leaf := btlsLeafCN(t, ca, "app", []string{"app.test"}, nil, x509.ExtKeyUsageServerAuth)
	httpPort, httpsPort, moved := freePort(t), freePort(t), freePort(t)
	config := func(version string, httpAt int) *proxycfg.Config {
		cfg := routeEach([]proxycfg.Listener{
			{Name: "gw/http", Protocol: proxycfg.ListenerHTTP, Port: httpAt},
			// An address, not this machine's, changes nothing here.
			{Name: "gw/https", Hostname: "app.test", Protocol: proxycfg.ListenerHTTPS, Port: httpsPort, Address: "192.0.2.1",
				Certificates: []proxycfg.Certificate{{Cert: leaf.certPEM(), Key: leaf.keyPEM(t)}}},
			{Name: "gw/tunnel", Hostname: "tunnel.test", Protocol: proxycfg.ListenerHTTP},
		}, backends)
		cfg.Version = version
		return cfg
	}
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ListenerPorts: true})
	if err := p.Load(config("ports-1", httpPort)); err != nil {
		t.Fatal(err)
	}
	b := serveGateways(t, p, ServeOptions{Origin: "127.0.0.1:0"})

	plain := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(addr, host string) (string, error) { return backendAt(plain, "http://"+addr+"/x", host) }
	at := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	var h2 http.Protocols
	h2.SetHTTP2(true)
	secure := &http.Client{Transport: &http.Transport{Protocols: &h2, TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true,
		DialContext: dialTo(at(httpsPort))}}
	checkHTTPS := func(when string) {
		t.Helper()
		res, err := secure.Get("https://app.test/p")
		if err != nil {
			t.Fatalf("%s: HTTPS: %v", when, err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.ProtoMajor != 2 || echoed(string(body), "backend") != "tls" || echoed(string(body), "X-Forwarded-Proto") != "https" {
			t.Errorf("%s: HTTPS request: %s %q", when, res.Proto, body)
		}
	}
	want := func(when string, ports ...int) {
		t.Helper()
		var addrs []string
		for _, port := range ports {
			addrs = append(addrs, ":"+strconv.Itoa(port))
		}
		slices.Sort(addrs)
		if got := ownSockets(p); !slices.Equal(got, addrs) {
			t.Errorf("%s: sockets %q, want %q", when, got, addrs)
		}
	}

	want("at start", httpPort, httpsPort)
	if got, err := get(at(httpPort), "any.test"); err != nil || got != "plain" {
		t.Errorf("HTTP port: backend %q, %v", got, err)
	}
	if ln, err := net.Listen("tcp", "[::1]:0"); err == nil {
		ln.Close()
		if got, err := get(net.JoinHostPort("::1", strconv.Itoa(httpPort)), "any.test"); err != nil || got != "plain" {
			t.Errorf("HTTP port on ::1: backend %q, %v", got, err)
		}
	}
	checkHTTPS("at start")
	if got, err := get(b.Origin, "tunnel.test"); err != nil || got != "tunnel" {
		t.Errorf("origin listener, the listener without port: backend %q, %v", got, err)
	}

	if err := p.Load(config("ports-2", moved)); err != nil {
		t.Fatal(err)
	}
	want("moved", moved, httpsPort)
	waitFor(t, "the old port closed", func() bool { _, err := get(at(httpPort), "any.test"); return err != nil })
	if got, err := get(at(moved), "any.test"); err != nil || got != "plain" {
		t.Errorf("the new port: backend %q, %v", got, err)
	}
	checkHTTPS("moved")

	err := p.Load(config("ports-3", httpsPort))
	if want := fmt.Sprintf(`listener "gw/https": HTTPS on :%d, where another listener is HTTP`, httpsPort); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("HTTP and HTTPS on one port: %v, want an error saying %q", err, want)
	}
	want("refused", moved, httpsPort)
	if got, err := get(at(moved), "any.test"); err != nil || got != "plain" {
		t.Errorf("after the refusal: backend %q, %v", got, err)
	}
	checkHTTPS("after the refusal")
}

// Placed by port, listeners share a socket across addresses, and those
// without an address are checked as those with one: configs a proxy
// serving Gateway addresses takes, a proxy serving listener ports
// refuses. A listener without port is no problem for it.
func TestListenerPortsRefused(t *testing.T) {
	ca := btlsCA(t, "plane CA", nil)
	leaf := btlsLeafCN(t, ca, "x", []string{"x.test"}, nil, x509.ExtKeyUsageServerAuth)
	cert := []proxycfg.Certificate{{Cert: leaf.certPEM(), Key: leaf.keyPEM(t)}}
	cv := func(ca string) *proxycfg.ClientValidation { return &proxycfg.ClientValidation{CACertificates: ca} }
	for name, c := range map[string]struct {
		ls   []proxycfg.Listener
		want string // "": both take it
	}{
		"mixed protocols across addresses": {[]proxycfg.Listener{
			{Name: "a", Protocol: proxycfg.ListenerHTTP, Port: 80, Address: "10.0.0.1"},
			{Name: "b", Hostname: "x.test", Protocol: proxycfg.ListenerHTTPS, Port: 80, Address: "10.0.0.2", Certificates: cert}},
			`listener "b": HTTPS on :80, where another listener is HTTP`},
		"mixed protocols without addresses": {[]proxycfg.Listener{
			{Name: "a", Protocol: proxycfg.ListenerHTTP, Port: 80},
			{Name: "b", Hostname: "x.test", Protocol: proxycfg.ListenerHTTPS, Port: 80, Certificates: cert}},
			`listener "b": HTTPS on :80, where another listener is HTTP`},
		"HTTPS without certificate or address": {[]proxycfg.Listener{{Name: "l", Protocol: proxycfg.ListenerHTTPS, Port: 443}},
			`listener "l": HTTPS on :443 needs a certificate`},
		"validation on HTTP without address": {[]proxycfg.Listener{{Name: "l", Protocol: proxycfg.ListenerHTTP, Port: 80, ClientValidation: cv(leaf.certPEM())}},
			"not HTTPS"},
		"validations differ on a port across addresses": {[]proxycfg.Listener{
			{Name: "a", Hostname: "a.test", Protocol: proxycfg.ListenerHTTPS, Port: 443, Address: "10.0.0.1", Certificates: cert, ClientValidation: cv(leaf.certPEM())},
			{Name: "b", Hostname: "b.test", Protocol: proxycfg.ListenerHTTPS, Port: 443, Address: "10.0.0.2", Certificates: cert}},
			"client certificate validation differs"},
		"HTTPS without port": {[]proxycfg.Listener{{Name: "l", Protocol: proxycfg.ListenerHTTPS}}, ""},
	} {
		for _, ports := range []bool{false, true} {
			p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ListenerPorts: ports})
			err := p.Load(&proxycfg.Config{Schema: proxycfg.SchemaVersion, Version: "bad", Listeners: c.ls})
			switch {
			case (!ports || c.want == "") && err != nil:
				t.Errorf("%s, listener ports %v: %v", name, ports, err)
			case ports && c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("%s, listener ports: %v, want an error saying %q", name, err, c.want)
			}
		}
	}

	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ListenerPorts: true})
	err := p.Serve(context.Background(), ServeOptions{Gateways: true, Admin: "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "exclude each other") {
		t.Errorf("Serve with Gateways: %v", err)
	}
}
