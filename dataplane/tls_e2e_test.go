package dataplane

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// End-to-end tests of backend TLS (BackendTLSPolicy): the proxy on real
// listeners, TLS backends on loopback with certificates made here.
//
// The helpers in this file (certificates, TLS backends, waiting with a
// deadline) are shared by the other *_e2e_test.go files.

// ptCert is a certificate with its private key; the certificate helpers
// are backendtls_test.go's.
type ptCert = btlsTestCert

// ptCA makes a self-signed CA.
func ptCA(t *testing.T, name string) *ptCert { return btlsCA(t, name, nil) }

// ptLeaf makes a leaf signed by ca. uris are parsed as URLs.
func ptLeaf(t *testing.T, ca *ptCert, cn string, dns, uris []string, usage x509.ExtKeyUsage) *ptCert {
	return btlsLeafCN(t, ca, cn, dns, uris, usage)
}

func (c *ptCert) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.cert)
	return p
}

// ptTLSBackend serves h over TLS on loopback with conf (which holds the
// certificate) and returns its address. With h2 it offers HTTP/2 and
// HTTP/1.1 in ALPN, else HTTP/1.1 only (a handler that hijacks needs that).
func ptTLSBackend(t *testing.T, conf *tls.Config, h2 bool, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var ps http.Protocols
	ps.SetHTTP1(true)
	ps.SetHTTP2(h2)
	srv := &http.Server{Handler: h, TLSConfig: conf.Clone(), Protocols: &ps, ErrorLog: ptQuietLog()}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("TLS backend: %v", err)
		}
	})
	return ln.Addr().String()
}

// ptQuietLog drops a test server's log (TLS handshake failures that the
// tests cause on purpose).
func ptQuietLog() *log.Logger { return log.New(io.Discard, "", 0) }

func ptTLSCluster(name, addr string, s proxycfg.TLSSettings) proxycfg.Cluster {
	c := cluster(name, addr)
	c.Protocol = proxycfg.ProtoTLS
	c.TLS = &s
	return c
}

// ptClientTimeout bounds every request of these tests, so that a proxy
// that hangs fails a test instead of stalling the whole run.
const ptClientTimeout = 10 * time.Second

// ptEnv is newTestEnv with a time limit on the env's clients.
func ptEnv(t *testing.T, cfg *proxycfg.Config, opts ...func(*Options)) *testEnv {
	t.Helper()
	e := newTestEnv(t, cfg, opts...)
	for _, c := range []*http.Client{e.client, e.h2, e.h2c} {
		c.Timeout = ptClientTimeout
	}
	return e
}

// ptWithin runs f and fails the test if it has not returned within d. f
// runs on its own goroutine, so it reports failure by returning an error.
// A blocked f is left behind; the test's cleanups (closing servers and
// clients) end it.
func ptWithin(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-timer.C:
		t.Fatalf("%s: not done within %v", what, d)
	}
}

// ptTLSInfo answers with what the backend saw of the connection.
func ptTLSInfo(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		fmt.Fprintf(&b, "backend=%s\nproto=%d\n", name, r.ProtoMajor)
		if r.TLS != nil {
			fmt.Fprintf(&b, "sni=%s\nalpn=%s\n", r.TLS.ServerName, r.TLS.NegotiatedProtocol)
			if len(r.TLS.PeerCertificates) > 0 {
				fmt.Fprintf(&b, "client=%s\n", r.TLS.PeerCertificates[0].Subject.CommonName)
			}
		} else {
			b.WriteString("tls=none\n")
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(b.String()))
	}
}

func TestTLSE2EBackend(t *testing.T) {
	t.Parallel()
	ca := ptCA(t, "backend CA")
	otherCA := ptCA(t, "unrelated CA")
	clientCA := ptCA(t, "client CA")
	const spiffe = "spiffe://cluster.local/ns/shop/sa/cart"
	leaf := ptLeaf(t, ca, "backend", []string{"backend.test"}, []string{spiffe}, x509.ExtKeyUsageServerAuth)
	client := ptLeaf(t, clientCA, "tunnelgate-proxy", nil, nil, x509.ExtKeyUsageClientAuth)

	plain := ptTLSBackend(t, &tls.Config{Certificates: []tls.Certificate{leaf.tlsCert()}}, false, ptTLSInfo("tls"))
	mtls := ptTLSBackend(t, &tls.Config{
		Certificates: []tls.Certificate{leaf.tlsCert()},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientCA.pool(),
	}, false, ptTLSInfo("mtls"))
	h2 := ptTLSBackend(t, &tls.Config{Certificates: []tls.Certificate{leaf.tlsCert()}}, true, ptTLSInfo("h2"))

	cases := []struct {
		name   string
		addr   string
		tls    proxycfg.TLSSettings
		status int
		// want are echo lines the backend must have reported.
		want map[string]string
	}{
		{"sni and CA", plain, proxycfg.TLSSettings{SNI: "backend.test", CAPEM: ca.certPEM()}, 200,
			map[string]string{"backend": "tls", "sni": "backend.test", "proto": "1"}},
		{"wrong CA", plain, proxycfg.TLSSettings{SNI: "backend.test", CAPEM: otherCA.certPEM()}, 502, nil},
		{"SNI not in certificate", plain, proxycfg.TLSSettings{SNI: "elsewhere.test", CAPEM: ca.certPEM()}, 502, nil},
		{"SAN DNS matches while SNI differs", plain,
			proxycfg.TLSSettings{SNI: "frontdoor.test", CAPEM: ca.certPEM(), SANDNSNames: []string{"nope.test", "backend.test"}}, 200,
			map[string]string{"backend": "tls", "sni": "frontdoor.test"}},
		{"SAN DNS mismatch", plain,
			proxycfg.TLSSettings{SNI: "backend.test", CAPEM: ca.certPEM(), SANDNSNames: []string{"nope.test"}}, 502, nil},
		{"SAN URI matches", plain,
			proxycfg.TLSSettings{SNI: "frontdoor.test", CAPEM: ca.certPEM(), SANURIs: []string{spiffe}}, 200,
			map[string]string{"backend": "tls"}},
		{"SAN URI mismatch", plain,
			proxycfg.TLSSettings{SNI: "backend.test", CAPEM: ca.certPEM(), SANURIs: []string{"spiffe://cluster.local/ns/shop/sa/billing"}}, 502, nil},
		{"SAN URI right but CA wrong", plain,
			proxycfg.TLSSettings{SNI: "backend.test", CAPEM: otherCA.certPEM(), SANURIs: []string{spiffe}}, 502, nil},
		{"client certificate", mtls,
			proxycfg.TLSSettings{SNI: "backend.test", CAPEM: ca.certPEM(), ClientCertPEM: client.certPEM(), ClientKeyPEM: client.keyPEM(t)}, 200,
			map[string]string{"backend": "mtls", "client": "tunnelgate-proxy"}},
		{"client certificate missing", mtls, proxycfg.TLSSettings{SNI: "backend.test", CAPEM: ca.certPEM()}, 502, nil},
		{"h2", h2, proxycfg.TLSSettings{SNI: "backend.test", CAPEM: ca.certPEM(), H2: true}, 200,
			map[string]string{"backend": "h2", "proto": "2", "alpn": "h2"}},
		{"h2 backend without H2", h2, proxycfg.TLSSettings{SNI: "backend.test", CAPEM: ca.certPEM()}, 200,
			map[string]string{"backend": "h2", "proto": "1", "alpn": "http/1.1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := ptEnv(t, config([]proxycfg.Route{route("r", to("b"))}, ptTLSCluster("b", c.addr, c.tls)))
			// Two requests: the second may reuse the connection (or, on
			// failure, must fail the same way again).
			for i := range 2 {
				res, body := e.get("app.example.com", "/tls")
				if res.StatusCode != c.status {
					t.Fatalf("request %d: status %d, want %d; body %q", i, res.StatusCode, c.status, body)
				}
				for k, v := range c.want {
					if got := echoed(body, k); got != v {
						t.Errorf("request %d: backend saw %s=%q, want %q\n%s", i, k, got, v, body)
					}
				}
			}
		})
	}
}

// TestTLSE2EBackendH2Client sends HTTP/2 from the client side too (as
// cloudflared does for gRPC hostnames) to an h2 TLS backend.
func TestTLSE2EBackendH2Client(t *testing.T) {
	t.Parallel()
	ca := ptCA(t, "backend CA")
	leaf := ptLeaf(t, ca, "backend", []string{"backend.test"}, nil, x509.ExtKeyUsageServerAuth)
	be := ptTLSBackend(t, &tls.Config{Certificates: []tls.Certificate{leaf.tlsCert()}}, true, ptTLSInfo("h2"))
	e := ptEnv(t, config([]proxycfg.Route{route("r", to("b"))},
		ptTLSCluster("b", be, proxycfg.TLSSettings{SNI: "backend.test", CAPEM: ca.certPEM(), H2: true})))
	req, _ := http.NewRequest("GET", "https://"+e.bound.OriginTLS+"/x", nil)
	res, body := e.do(e.h2, req)
	if res.StatusCode != 200 || res.ProtoMajor != 2 {
		t.Fatalf("status %d over HTTP/%d: %q", res.StatusCode, res.ProtoMajor, body)
	}
	if got := echoed(body, "proto"); got != "2" {
		t.Errorf("backend saw HTTP/%s, want 2\n%s", got, body)
	}
}
