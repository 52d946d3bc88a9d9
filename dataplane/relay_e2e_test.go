package dataplane

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// A plane the shared proxies relay to (GatewayConfig classTunnel) serves
// a TLS origin listener that admits only clients with a certificate of
// its relay CA, and trusts their forwarding headers. These tests chain
// two proxies as the controller configures them: the shared one with a
// relay route and cluster, the plane's with the Gateway's route.

const relaySNI = "relay.tunnelgate.internal"

// relayCerts are a plane's relay CA, server and client certificates.
type relayCerts struct {
	ca, server, client *ptCert
}

func newRelayCerts(t *testing.T) relayCerts {
	ca := ptCA(t, "relay CA")
	return relayCerts{ca: ca,
		server: ptLeaf(t, ca, "relay", []string{relaySNI}, nil, x509.ExtKeyUsageServerAuth),
		client: ptLeaf(t, ca, "shared proxies", nil, nil, x509.ExtKeyUsageClientAuth)}
}

// servePlane runs a plane's proxy with cfg, its relay listener on
// loopback with certs, and returns the listener's address.
func servePlane(t *testing.T, cfg *proxycfg.Config, certs relayCerts) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := p.Load(cfg); err != nil {
		t.Fatal(err)
	}
	return serveUntilCleanup(t, p, ServeOptions{
		OriginTLS:      "127.0.0.1:0",
		OriginCert:     write("relay.crt", certs.server.certPEM()),
		OriginKey:      write("relay.key", certs.server.keyPEM(t)),
		OriginClientCA: write("relay-ca.crt", certs.ca.certPEM()),
		Grace:          time.Second,
	}).OriginTLS
}

// relayPair is a shared proxy relaying web.example (HTTP/1.1) and
// grpc.example (HTTP/2) to a plane, which routes both to echo.
func relayPair(t *testing.T) (*testEnv, string, relayCerts) {
	return relayPairTo(t, echo("app"))
}

// relayPairTo is relayPair with the plane's backend serving h.
func relayPairTo(t *testing.T, h http.HandlerFunc) (*testEnv, string, relayCerts) {
	t.Helper()
	certs := newRelayCerts(t)
	backend := startBackend(t, h)
	plane := config([]proxycfg.Route{route("app", to("default/app:80"))}, cluster("default/app:80", backend))
	addr := servePlane(t, plane, certs)
	settings := proxycfg.TLSSettings{SNI: relaySNI, CAPEM: certs.ca.certPEM(),
		ClientCertPEM: certs.client.certPEM(), ClientKeyPEM: certs.client.keyPEM(t)}
	h2 := settings
	h2.H2 = true
	web, grpc := route("relay:web", to("default/relay:web")), route("relay:web", to("default/relay:web/h2"))
	web.Hostnames, grpc.Hostnames = []string{"web.example"}, []string{"grpc.example"}
	shared := config([]proxycfg.Route{web, grpc},
		ptTLSCluster("default/relay:web", addr, settings), ptTLSCluster("default/relay:web/h2", addr, h2))
	return ptEnv(t, shared), addr, certs
}

// A request relayed reaches the plane's backend as it would from
// cloudflared to the plane directly: the same target (one proxy
// normalises it, and the other's normalising changes nothing more) and
// Host; and the plane trusts the client address the shared proxy's
// trusted listener passed on. One that came to the shared proxy's
// untrusted listener carries no forged one.
func TestRelayE2EForwardsAsItCame(t *testing.T) {
	e, addr, certs := relayPair(t)
	direct := &http.Client{Timeout: ptClientTimeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: certs.ca.pool(), ServerName: relaySNI, Certificates: []tls.Certificate{certs.client.tlsCert()}}}}
	defer direct.CloseIdleConnections()
	for _, target := range []string{"/a%2Fb/../c?x=1&y", "/%7Euser/a;b?q=%20&q=%2B", "//double//slash", "/caf%C3%A9"} {
		res, body := e.get("web.example", target, "Cf-Connecting-Ip", "203.0.113.7", "X-Forwarded-For", "203.0.113.7")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("relayed %s: %d %s", target, res.StatusCode, body)
		}
		req, _ := http.NewRequest("GET", "https://"+addr+target, nil)
		req.Host = "web.example"
		_, want := e.do(direct, req)
		if got, want := echoed(body, "target"), echoed(want, "target"); got != want || got == "" {
			t.Errorf("target %s: relayed %q, directly %q", target, got, want)
		}
		if got := echoed(body, "host"); got != "web.example" {
			t.Errorf("Host %q, want web.example", got)
		}
		if got := echoed(body, "Cf-Connecting-Ip"); got != "203.0.113.7" {
			t.Errorf("Cf-Connecting-Ip %q, want the client's, passed on by both proxies", got)
		}
		if got := echoed(body, "X-Forwarded-For"); !strings.HasPrefix(got, "203.0.113.7") {
			t.Errorf("X-Forwarded-For %q, want the client's first", got)
		}
	}

	req, _ := http.NewRequest("GET", "http://"+e.bound.Plain+"/", nil)
	req.Host = "web.example"
	req.Header.Set("Cf-Connecting-Ip", "198.51.100.66")
	res, body := e.do(e.client, req)
	if res.StatusCode != http.StatusOK || echoed(body, "Cf-Connecting-Ip") != "" {
		t.Errorf("from the untrusted listener: %d, Cf-Connecting-Ip %q; want 200 and none", res.StatusCode, echoed(body, "Cf-Connecting-Ip"))
	}
	if res, _ := e.get("other.example", "/"); res.StatusCode != http.StatusNotFound {
		t.Errorf("a host no relay serves: %d, want 404", res.StatusCode)
	}
}

// A hostname a GRPCRoute serves is relayed over HTTP/2, as cloudflared
// sends it to the shared proxy's TLS origin listener.
func TestRelayE2EHTTP2(t *testing.T) {
	e, _, _ := relayPair(t)
	req, _ := http.NewRequest("POST", "https://"+e.bound.OriginTLS+"/pkg.Svc/Call", strings.NewReader("msg"))
	req.Host = "grpc.example"
	res, body := e.do(e.h2, req)
	if res.StatusCode != http.StatusOK || res.ProtoMajor != 2 || echoed(body, "body") != "msg" {
		t.Fatalf("relayed over HTTP/2: %d %s, body %q", res.StatusCode, res.Proto, echoed(body, "body"))
	}
}

// The relay listener admits only clients with a certificate of the
// plane's relay CA: none, or one of another CA, fails the handshake.
func TestRelayE2ERequiresTheClientCertificate(t *testing.T) {
	_, addr, certs := relayPair(t)
	other := newRelayCerts(t)
	get := func(client *ptCert) error {
		conf := &tls.Config{RootCAs: certs.ca.pool(), ServerName: relaySNI}
		if client != nil {
			conf.Certificates = []tls.Certificate{client.tlsCert()}
		}
		c := &http.Client{Timeout: ptClientTimeout, Transport: &http.Transport{TLSClientConfig: conf}}
		defer c.CloseIdleConnections()
		req, _ := http.NewRequest("GET", "https://"+addr+"/", nil)
		req.Host = "web.example"
		res, err := c.Do(req)
		if err != nil {
			return err
		}
		res.Body.Close()
		return nil
	}
	if err := get(certs.client); err != nil {
		t.Fatalf("with the relay's client certificate: %v", err)
	}
	if err := get(nil); err == nil {
		t.Error("without a client certificate: admitted")
	}
	if err := get(other.client); err == nil {
		t.Error("with another plane's client certificate: admitted")
	}
}

// A WebSocket is relayed over HTTP/1.1 both hops, both ways, half-close
// included.
func TestRelayE2EWebSocket(t *testing.T) {
	sawEOF := make(chan struct{}, 1)
	e, _, _ := relayPairTo(t, wsBackend(false, sawEOF))
	c, res := wsHandshake(t, e.bound.Origin, "web.example")
	if res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: status %d", res.StatusCode)
	}
	c.exchange()
	c.halfClose(sawEOF)
}
