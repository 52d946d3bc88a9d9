// This file implements the tests of TLS listeners that terminate (TLSRoute mode Terminate) through real sockets: the certificate by SNI, the handshake deadline, origin ports, and re-encryption to a TLS backend.

package dataplane

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/realbackend"
	"github.com/tunnelgate/tunnelgate/test/testpki"
)

// terminatingListener is a TLS listener on 127.0.0.1:port for hostname
// that terminates with a certificate for it, issued by ca.
func terminatingListener(t *testing.T, ca *testpki.CA, name, hostname string, port int) proxycfg.Listener {
	t.Helper()
	crt, key := ca.IssueServer(t, hostname)
	return proxycfg.Listener{Name: name, Protocol: proxycfg.ListenerTLS, Hostname: hostname, Port: port, Address: "127.0.0.1",
		Certificates: []proxycfg.Certificate{{Cert: string(crt), Key: string(key)}}}
}

// tlsTo opens a TLS connection to addr with server name sni, trusting ca
// only, and reads the backend's first line; it fails the test when the
// handshake fails.
func tlsTo(t *testing.T, addr, sni string, ca *testpki.CA) (*tls.Conn, *bufio.Reader, string) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{ServerName: sni, RootCAs: roots})
	if err != nil {
		t.Fatalf("TLS to %s as %q: %v", addr, sni, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	line, _ := r.ReadString('\n')
	return c, r, strings.TrimSuffix(line, "\n")
}

// A TLS socket whose listeners carry certificates terminates: each
// client gets the certificate of the listener its server name chooses
// (verified against the CA by the client), the route that name chooses,
// and its plaintext relayed to a cleartext echo both ways; the origin
// port of a route on such a listener terminates too.
func TestStreamTLSTerminate(t *testing.T) {
	ca := testpki.NewCA(t, "listener CA")
	port, originPort := freePort(t), freePort(t)
	ls := []proxycfg.Listener{
		terminatingListener(t, ca, "gw/a", "a.example.com", port),
		terminatingListener(t, ca, "gw/b", "b.example.com", port),
	}
	ra := l4Route(proxycfg.KindTLS, "a", []string{"gw/a"}, toCluster("a"))
	ra.OriginPort = originPort
	rb := l4Route(proxycfg.KindTLS, "b", []string{"gw/b"}, toCluster("b"))
	p := quietProxy()
	if err := p.Load(streamConfig(ls, []proxycfg.Route{ra, rb}, tcpCluster("a", namedEcho(t, "a")), tcpCluster("b", namedEcho(t, "b")))); err != nil {
		t.Fatal(err)
	}
	serveStreams(t, p)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for _, sni := range []string{"a.example.com", "b.example.com"} {
		c, r, name := tlsTo(t, addr, sni, ca)
		if want := sni[:1]; name != want {
			t.Fatalf("%s: backend %q; want %q", sni, name, want)
		}
		if got := c.ConnectionState().PeerCertificates[0].DNSNames; len(got) != 1 || got[0] != sni {
			t.Errorf("%s: served the certificate for %v", sni, got)
		}
		pingPong(t, c, r, "plaintext "+sni)
	}
	c, r, name := tlsTo(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(originPort)), "a.example.com", ca)
	if name != "a" {
		t.Fatalf("origin port: backend %q; want a", name)
	}
	pingPong(t, c, r, "through the tunnel")

	// A name no listener has a certificate for fails the handshake.
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "c.example.com", RootCAs: roots}); err == nil {
		c.Close()
		t.Fatal("c.example.com: handshake succeeded; want it refused (no certificate)")
	}
	if n := p.stats.Streams[observe.StreamRelayed].Load(); n != 3 {
		t.Errorf("relayed %d; want 3", n)
	}
}

// A client that starts a handshake and never completes it is cut at the
// handshake timeout, and counted.
func TestStreamTLSTerminateHandshakeTimeout(t *testing.T) {
	ca := testpki.NewCA(t, "listener CA")
	port := freePort(t)
	ls := []proxycfg.Listener{terminatingListener(t, ca, "gw/a", "a.example.com", port)}
	p := quietProxy(func(o *Options) { o.Streams.HandshakeTimeout = 300 * time.Millisecond })
	if err := p.Load(streamConfig(ls, []proxycfg.Route{l4Route(proxycfg.KindTLS, "a", []string{"gw/a"}, toCluster("a"))}, tcpCluster("a", namedEcho(t, "a")))); err != nil {
		t.Fatal(err)
	}
	serveStreams(t, p)
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hello := helloFor(t, "a.example.com")
	if _, err := c.Write(hello); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	io.Copy(io.Discard, c) // the server's flight, then the end
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the connection lasted %s; want it cut at the 300ms handshake timeout", d)
	}
	// Counted as the handshake gives up, which closes the connection
	// first.
	for deadline := time.Now().Add(5 * time.Second); p.stats.Streams[observe.StreamHandshakeFailed].Load() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("handshake_failed %d; want 1 (%v)", p.stats.Streams[observe.StreamHandshakeFailed].Load(), &p.stats.Streams)
		}
	}
}

// A stream cluster with TLS settings re-encrypts what the proxy
// terminated: to OpenSSL's s_server, verified against the CA the
// settings name, and refused with another CA; the same cluster behind a
// passthrough listener gets the client's bytes as they come.
func TestStreamTLSReencrypt(t *testing.T) {
	listenerCA, backendCA, otherCA := testpki.NewCA(t, "listener CA"), testpki.NewCA(t, "backend CA"), testpki.NewCA(t, "other CA")
	crt, key := backendCA.IssueServer(t, "backend.internal")
	backend := realbackend.StartTLSServer(t, crt, key)
	port, passPort := freePort(t), freePort(t)
	ls := []proxycfg.Listener{terminatingListener(t, listenerCA, "gw/tls", "app.example.com", port),
		{Name: "gw/pass", Protocol: proxycfg.ListenerTLS, Port: passPort, Address: "127.0.0.1"}}
	cluster := func(ca *testpki.CA) proxycfg.Cluster {
		c := tcpCluster("backend", backend)
		c.TLS = &proxycfg.TLSSettings{SNI: "backend.internal", CAPEM: string(ca.PEM)}
		return c
	}
	routes := []proxycfg.Route{l4Route(proxycfg.KindTLS, "app", []string{"gw/tls"}, toCluster("backend")),
		l4Route(proxycfg.KindTLS, "pass", []string{"gw/pass"}, toCluster("backend"))}
	p := quietProxy()
	if err := p.Load(streamConfig(ls, routes, cluster(backendCA))); err != nil {
		t.Fatal(err)
	}
	serveStreams(t, p)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	get := func() string {
		roots := x509.NewCertPool()
		roots.AddCert(listenerCA.Cert)
		c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "app.example.com", RootCAs: roots})
		if err != nil {
			t.Fatalf("TLS to the listener: %v", err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET / HTTP/1.0\r\n\r\n")
		b, _ := io.ReadAll(c)
		return string(b)
	}
	if got := get(); !strings.HasPrefix(got, "HTTP/1.0 200") {
		t.Fatalf("through the re-encrypting cluster: %q; want s_server's 200", got)
	}
	if n := p.stats.Streams[observe.StreamRelayed].Load(); n != 1 {
		t.Fatalf("relayed %d; want 1", n)
	}
	// Passed through: the client's own handshake reaches the backend.
	backendRoots := x509.NewCertPool()
	backendRoots.AddCert(backendCA.Cert)
	pc, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(passPort)), &tls.Config{ServerName: "backend.internal", RootCAs: backendRoots})
	if err != nil {
		t.Fatalf("passthrough to the backend's own certificate: %v", err)
	}
	pc.Close()

	if err := p.Load(streamConfig(ls, routes, cluster(otherCA))); err != nil {
		t.Fatal(err)
	}
	if got := get(); got != "" {
		t.Fatalf("with a CA that did not issue the backend's certificate: %q; want the connection closed", got)
	}
	if n := p.stats.Streams[observe.StreamDialFailed].Load(); n != 1 {
		t.Errorf("dial_failed %d; want 1 (the backend's certificate refused)", n)
	}
}

// A config whose socket mixes terminating and passthrough TLS listeners,
// or whose route's origin port would serve both, is refused whole.
func TestStreamTLSTerminateRefused(t *testing.T) {
	ca := testpki.NewCA(t, "listener CA")
	port := freePort(t)
	term := terminatingListener(t, ca, "gw/term", "a.example.com", port)
	pass := proxycfg.Listener{Name: "gw/pass", Protocol: proxycfg.ListenerTLS, Hostname: "b.example.com", Port: port, Address: "127.0.0.1"}
	p := quietProxy()
	err := p.Load(streamConfig([]proxycfg.Listener{term, pass}, nil))
	if err == nil || !strings.Contains(err.Error(), `listener "gw/pass": TLS (passthrough) on 127.0.0.1:`+strconv.Itoa(port)+", where another listener is TLS (terminating)") {
		t.Errorf("mixed socket: %v; want it refused", err)
	}

	pass.Port = freePort(t)
	r := l4Route(proxycfg.KindTLS, "both", []string{"gw/term", "gw/pass"}, toCluster("a"))
	r.OriginPort = freePort(t)
	err = p.Load(streamConfig([]proxycfg.Listener{term, pass}, []proxycfg.Route{r}, tcpCluster("a", "127.0.0.1:1")))
	if err == nil || !strings.Contains(err.Error(), `serves listener "gw/term", which terminates TLS, and listener "gw/pass", which passes it through`) {
		t.Errorf("origin port of both modes: %v; want it refused", err)
	}

	bad := term
	bad.Certificates = []proxycfg.Certificate{{Cert: "not a certificate", Key: "nor a key"}}
	if err := p.Load(streamConfig([]proxycfg.Listener{bad}, nil)); err == nil || !strings.Contains(err.Error(), `listener "gw/term": certificates[0]`) {
		t.Errorf("bad certificate: %v; want it refused naming the listener", err)
	}
}
