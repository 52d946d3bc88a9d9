package dataplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// btlsTestCert is a certificate with its key, for test servers and clients.
type btlsTestCert struct {
	cert *x509.Certificate
	der  []byte
	key  crypto.Signer
}

func (c *btlsTestCert) certPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.der}))
}

func (c *btlsTestCert) keyPEM(t *testing.T) string {
	der, err := x509.MarshalPKCS8PrivateKey(c.key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// tlsCert is the pair for a tls.Config, with chain appended after the leaf.
func (c *btlsTestCert) tlsCert(chain ...*btlsTestCert) tls.Certificate {
	tc := tls.Certificate{Certificate: [][]byte{c.der}, PrivateKey: c.key, Leaf: c.cert}
	for _, ch := range chain {
		tc.Certificate = append(tc.Certificate, ch.der)
	}
	return tc
}

var btlsSerial atomic.Int64 // tests that issue certificates run in parallel

// btlsIssue makes a certificate from tmpl, signed by parent (self-signed
// when parent is nil).
func btlsIssue(t *testing.T, tmpl *x509.Certificate, parent *btlsTestCert) *btlsTestCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(btlsSerial.Add(1))
	if tmpl.NotBefore.IsZero() {
		tmpl.NotBefore = time.Now().Add(-time.Hour)
		tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	}
	signerCert, signerKey := tmpl, crypto.Signer(key)
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &btlsTestCert{cert: c, der: der, key: key}
}

func btlsCA(t *testing.T, name string, parent *btlsTestCert) *btlsTestCert {
	return btlsIssue(t, &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, parent)
}

func btlsLeaf(t *testing.T, ca *btlsTestCert, dns []string, uris []string, usage x509.ExtKeyUsage) *btlsTestCert {
	return btlsLeafCN(t, ca, "leaf", dns, uris, usage)
}

// btlsLeafCN makes a leaf signed by ca with common name cn; uris are
// parsed as URLs.
func btlsLeafCN(t *testing.T, ca *btlsTestCert, cn string, dns []string, uris []string, usage x509.ExtKeyUsage) *btlsTestCert {
	t.Helper()
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		DNSNames:    dns,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	for _, u := range uris {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	return btlsIssue(t, tmpl, ca)
}

// btlsServer is a TLS listener on 127.0.0.1 that writes "ok" after every
// successful handshake and reports each connection's state.
type btlsServer struct {
	addr   string
	states chan tls.ConnectionState
}

func btlsListen(t *testing.T, cfg *tls.Config) *btlsServer {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &btlsServer{addr: ln.Addr().String(), states: make(chan tls.ConnectionState, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				tc.SetDeadline(time.Now().Add(5 * time.Second))
				if err := tc.Handshake(); err != nil {
					return
				}
				select {
				case s.states <- tc.ConnectionState():
				default:
				}
				tc.Write([]byte("ok"))
			}()
		}
	}()
	return s
}

// dial connects with cfg and reads the server's "ok", so that a failure
// the server sees only after the client's handshake (a TLS 1.3 client
// certificate) shows too.
func (s *btlsServer) dial(cfg *tls.Config) (tls.ConnectionState, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", s.addr, cfg)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2)
	if _, err := io.ReadFull(c, buf); err != nil {
		return tls.ConnectionState{}, err
	}
	if string(buf) != "ok" {
		return tls.ConnectionState{}, io.ErrUnexpectedEOF
	}
	return c.ConnectionState(), nil
}

func mustBuildBackendTLS(t *testing.T, s *proxycfg.TLSSettings) *tls.Config {
	t.Helper()
	cfg, err := buildBackendTLS(s)
	if err != nil {
		t.Fatalf("buildBackendTLS: %v", err)
	}
	return cfg
}

func TestBackendTLSHandshakes(t *testing.T) {
	ca := btlsCA(t, "test CA", nil)
	other := btlsCA(t, "other CA", nil)
	leaf := btlsLeaf(t, ca, []string{"backend.example.com", "alt.example.com"}, nil, x509.ExtKeyUsageServerAuth)
	wild := btlsLeaf(t, ca, []string{"*.wild.example.com"}, nil, x509.ExtKeyUsageServerAuth)
	spiffe := btlsLeaf(t, ca, nil, []string{"spiffe://cluster.local/ns/a/sa/b"}, x509.ExtKeyUsageServerAuth)
	untrusted := btlsLeaf(t, other, []string{"backend.example.com"}, []string{"spiffe://cluster.local/ns/a/sa/b"}, x509.ExtKeyUsageServerAuth)
	inter := btlsCA(t, "intermediate", ca)
	chained := btlsLeaf(t, inter, []string{"chained.example.com"}, nil, x509.ExtKeyUsageServerAuth)
	clientOnly := btlsLeaf(t, ca, []string{"backend.example.com"}, nil, x509.ExtKeyUsageClientAuth)
	expired := btlsIssue(t, &x509.Certificate{
		DNSNames: []string{"backend.example.com"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour),
	}, ca)

	serve := func(c *btlsTestCert, chain ...*btlsTestCert) *btlsServer {
		return btlsListen(t, &tls.Config{Certificates: []tls.Certificate{c.tlsCert(chain...)}})
	}
	srvLeaf := serve(leaf)
	srvWild := serve(wild)
	srvSpiffe := serve(spiffe)
	srvUntrusted := serve(untrusted)
	srvChained := serve(chained, inter)
	srvChainedNoInter := serve(chained)
	srvClientOnly := serve(clientOnly)
	srvExpired := serve(expired)
	srvTLS12 := btlsListen(t, &tls.Config{Certificates: []tls.Certificate{leaf.tlsCert()}, MaxVersion: tls.VersionTLS12})

	caPEM := ca.certPEM()
	cases := []struct {
		name    string
		srv     *btlsServer
		s       proxycfg.TLSSettings
		wantErr string // "" for success
	}{
		{"good SNI", srvLeaf, proxycfg.TLSSettings{SNI: "backend.example.com", CAPEM: caPEM}, ""},
		{"second DNS name as SNI", srvLeaf, proxycfg.TLSSettings{SNI: "alt.example.com", CAPEM: caPEM}, ""},
		{"wrong SNI", srvLeaf, proxycfg.TLSSettings{SNI: "other.example.com", CAPEM: caPEM}, "not other.example.com; set the BackendTLSPolicy's hostname"},
		{"untrusted CA", srvUntrusted, proxycfg.TLSSettings{SNI: "backend.example.com", CAPEM: caPEM}, "unknown authority; put the CA that issued it in the BackendTLSPolicy's caCertificateRefs"},
		{"system roots do not trust the test CA", srvLeaf, proxycfg.TLSSettings{SNI: "backend.example.com"}, "system roots"},
		{"expired", srvExpired, proxycfg.TLSSettings{SNI: "backend.example.com", CAPEM: caPEM}, "renew"},
		{"SAN expired", srvExpired, proxycfg.TLSSettings{SNI: "x", CAPEM: caPEM, SANDNSNames: []string{"backend.example.com"}}, "renew"},
		{"chain with intermediate", srvChained, proxycfg.TLSSettings{SNI: "chained.example.com", CAPEM: caPEM}, ""},

		{"SAN DNS match, SNI differs", srvLeaf, proxycfg.TLSSettings{SNI: "svc.ns.svc.cluster.local", CAPEM: caPEM, SANDNSNames: []string{"nope.example.com", "alt.example.com"}}, ""},
		{"SAN DNS mismatch", srvLeaf, proxycfg.TLSSettings{SNI: "backend.example.com", CAPEM: caPEM, SANDNSNames: []string{"nope.example.com"}}, "none of which matches"},
		{"SAN DNS wildcard in cert", srvWild, proxycfg.TLSSettings{SNI: "x", CAPEM: caPEM, SANDNSNames: []string{"api.wild.example.com"}}, ""},
		{"SAN DNS wildcard covers one label", srvWild, proxycfg.TLSSettings{SNI: "x", CAPEM: caPEM, SANDNSNames: []string{"a.b.wild.example.com"}}, "none of which matches"},
		{"SAN URI match", srvSpiffe, proxycfg.TLSSettings{SNI: "b.a.svc", CAPEM: caPEM, SANURIs: []string{"spiffe://cluster.local/ns/a/sa/b"}}, ""},
		{"SAN URI mismatch", srvSpiffe, proxycfg.TLSSettings{SNI: "b.a.svc", CAPEM: caPEM, SANURIs: []string{"spiffe://cluster.local/ns/a/sa/c"}}, "spiffe://cluster.local/ns/a/sa/b"},
		{"SAN URI is exact, no prefix", srvSpiffe, proxycfg.TLSSettings{SNI: "b.a.svc", CAPEM: caPEM, SANURIs: []string{"spiffe://cluster.local/ns/a/sa"}}, "none of which matches"},
		{"SAN URI or DNS, URI matches", srvSpiffe, proxycfg.TLSSettings{SNI: "b.a.svc", CAPEM: caPEM, SANDNSNames: []string{"backend.example.com"}, SANURIs: []string{"spiffe://cluster.local/ns/a/sa/b"}}, ""},
		{"SAN URI untrusted CA", srvUntrusted, proxycfg.TLSSettings{SNI: "b.a.svc", CAPEM: caPEM, SANURIs: []string{"spiffe://cluster.local/ns/a/sa/b"}}, "not trusted"},
		{"SAN DNS untrusted CA", srvUntrusted, proxycfg.TLSSettings{SNI: "backend.example.com", CAPEM: caPEM, SANDNSNames: []string{"backend.example.com"}}, "caCertificateRefs"},
		{"SAN with system roots", srvLeaf, proxycfg.TLSSettings{SNI: "backend.example.com", SANDNSNames: []string{"backend.example.com"}}, "system roots"},
		{"SAN with intermediate from the peer", srvChained, proxycfg.TLSSettings{SNI: "x", CAPEM: caPEM, SANDNSNames: []string{"chained.example.com"}}, ""},
		{"SAN without intermediate", srvChainedNoInter, proxycfg.TLSSettings{SNI: "x", CAPEM: caPEM, SANDNSNames: []string{"chained.example.com"}}, "not trusted"},
		{"SAN leaf without serverAuth", srvClientOnly, proxycfg.TLSSettings{SNI: "x", CAPEM: caPEM, SANDNSNames: []string{"backend.example.com"}}, "serverAuth"},
		{"leaf without serverAuth", srvClientOnly, proxycfg.TLSSettings{SNI: "backend.example.com", CAPEM: caPEM}, "serverAuth"},
		// The tunnelgate.dev/min-tls-version option of a BackendTLSPolicy.
		{"TLS 1.3 wanted, 1.3 served", srvLeaf, proxycfg.TLSSettings{SNI: "backend.example.com", CAPEM: caPEM, MinVersion: proxycfg.TLS13}, ""},
		{"TLS 1.3 wanted, 1.2 at most", srvTLS12, proxycfg.TLSSettings{SNI: "backend.example.com", CAPEM: caPEM, MinVersion: proxycfg.TLS13}, "version"},
		{"TLS 1.2 allowed", srvTLS12, proxycfg.TLSSettings{SNI: "backend.example.com", CAPEM: caPEM}, ""},
	}
	for _, c := range cases {
		cfg := mustBuildBackendTLS(t, &c.s)
		_, err := c.srv.dial(cfg)
		err = backendTLSError(err, &c.s)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.wantErr != "" && err == nil:
			t.Errorf("%s: handshake succeeded, want failure", c.name)
		case c.wantErr != "" && !strings.Contains(err.Error(), c.wantErr):
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.wantErr)
		case err != nil:
			t.Logf("%s: %v", c.name, err)
		}
	}
}

func TestBackendTLSClientCert(t *testing.T) {
	ca := btlsCA(t, "test CA", nil)
	clientCA := btlsCA(t, "client CA", nil)
	leaf := btlsLeaf(t, ca, []string{"backend.example.com"}, nil, x509.ExtKeyUsageServerAuth)
	client := btlsLeaf(t, clientCA, nil, []string{"spiffe://cluster.local/ns/gw/sa/tunnelgate"}, x509.ExtKeyUsageClientAuth)
	stranger := btlsLeaf(t, ca, nil, nil, x509.ExtKeyUsageClientAuth)
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.cert)
	for _, maxVer := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		srv := btlsListen(t, &tls.Config{
			Certificates: []tls.Certificate{leaf.tlsCert()},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    pool,
			MaxVersion:   maxVer,
		})
		base := proxycfg.TLSSettings{SNI: "backend.example.com", CAPEM: ca.certPEM()}

		with := base
		with.ClientCertPEM, with.ClientKeyPEM = client.certPEM(), client.keyPEM(t)
		if _, err := srv.dial(mustBuildBackendTLS(t, &with)); err != nil {
			t.Errorf("TLS %x: with client certificate: %v", maxVer, err)
		} else {
			st := <-srv.states
			if len(st.PeerCertificates) == 0 || st.PeerCertificates[0].URIs[0].String() != "spiffe://cluster.local/ns/gw/sa/tunnelgate" {
				t.Errorf("TLS %x: server did not see the client certificate", maxVer)
			}
		}
		if _, err := srv.dial(mustBuildBackendTLS(t, &base)); err == nil {
			t.Errorf("TLS %x: without client certificate: handshake succeeded", maxVer)
		}
		bad := base
		bad.ClientCertPEM, bad.ClientKeyPEM = stranger.certPEM(), stranger.keyPEM(t)
		if _, err := srv.dial(mustBuildBackendTLS(t, &bad)); err == nil {
			t.Errorf("TLS %x: client certificate from another CA: handshake succeeded", maxVer)
		}
	}
}

func TestBackendTLSALPN(t *testing.T) {
	ca := btlsCA(t, "test CA", nil)
	leaf := btlsLeaf(t, ca, []string{"backend.example.com"}, nil, x509.ExtKeyUsageServerAuth)
	srv := btlsListen(t, &tls.Config{Certificates: []tls.Certificate{leaf.tlsCert()}, NextProtos: []string{"h2", "http/1.1"}})
	for _, h2 := range []bool{true, false} {
		for _, san := range []bool{false, true} {
			s := proxycfg.TLSSettings{SNI: "backend.example.com", CAPEM: ca.certPEM(), H2: h2}
			if san {
				s.SANDNSNames = []string{"backend.example.com"}
			}
			st, err := srv.dial(mustBuildBackendTLS(t, &s))
			if err != nil {
				t.Fatalf("h2=%v san=%v: %v", h2, san, err)
			}
			want := "http/1.1"
			if h2 {
				want = "h2"
			}
			if st.NegotiatedProtocol != want {
				t.Errorf("h2=%v san=%v: negotiated %q, want %q", h2, san, st.NegotiatedProtocol, want)
			}
		}
	}
}

func TestBackendTLSSessionResumptionStillVerifies(t *testing.T) {
	// A resumed session skips the certificate exchange; VerifyConnection
	// must still run and apply the SAN check.
	ca := btlsCA(t, "test CA", nil)
	leaf := btlsLeaf(t, ca, []string{"backend.example.com"}, nil, x509.ExtKeyUsageServerAuth)
	srv := btlsListen(t, &tls.Config{Certificates: []tls.Certificate{leaf.tlsCert()}})
	cfg := mustBuildBackendTLS(t, &proxycfg.TLSSettings{SNI: "x", CAPEM: ca.certPEM(), SANDNSNames: []string{"backend.example.com"}})
	cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	calls := 0
	inner := cfg.VerifyConnection
	cfg.VerifyConnection = func(cs tls.ConnectionState) error { calls++; return inner(cs) }
	for i := 0; i < 3; i++ {
		st, err := srv.dial(cfg)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		if i > 0 && !st.DidResume {
			t.Errorf("dial %d did not resume", i)
		}
	}
	if calls != 3 {
		t.Errorf("VerifyConnection ran %d times for 3 connections", calls)
	}
	// A config that would refuse the certificate, sharing the session
	// cache, refuses the resumed session too.
	strict := mustBuildBackendTLS(t, &proxycfg.TLSSettings{SNI: "x", CAPEM: ca.certPEM(), SANDNSNames: []string{"nope.example.com"}})
	strict.ClientSessionCache = cfg.ClientSessionCache
	if _, err := srv.dial(strict); err == nil || !strings.Contains(err.Error(), "none of which matches") {
		t.Errorf("resumed session with mismatched SANs: %v", err)
	}
}

func TestBuildBackendTLSConfig(t *testing.T) {
	ca := btlsCA(t, "test CA", nil)
	client := btlsLeaf(t, ca, nil, nil, x509.ExtKeyUsageClientAuth)
	other := btlsLeaf(t, ca, nil, nil, x509.ExtKeyUsageClientAuth)

	cfg := mustBuildBackendTLS(t, &proxycfg.TLSSettings{SNI: "b.example.com"})
	if cfg.RootCAs != nil || cfg.InsecureSkipVerify || cfg.VerifyConnection != nil || cfg.ServerName != "b.example.com" ||
		cfg.MinVersion != tls.VersionTLS12 || strings.Join(cfg.NextProtos, ",") != "http/1.1" || len(cfg.Certificates) != 0 {
		t.Errorf("plain config: %+v", cfg)
	}
	if cfg := mustBuildBackendTLS(t, &proxycfg.TLSSettings{SNI: "b", MinVersion: proxycfg.TLS13}); cfg.MinVersion != tls.VersionTLS13 {
		t.Errorf("MinVersion 1.3: config's is %x", cfg.MinVersion)
	}
	cfg = mustBuildBackendTLS(t, &proxycfg.TLSSettings{SNI: "b", CAPEM: "junk\n" + ca.certPEM() + "trailing", H2: true, SANURIs: []string{"spiffe://x/y"},
		ClientCertPEM: client.certPEM(), ClientKeyPEM: client.keyPEM(t)})
	if cfg.RootCAs == nil || !cfg.InsecureSkipVerify || cfg.VerifyConnection == nil || strings.Join(cfg.NextProtos, ",") != "h2,http/1.1" || len(cfg.Certificates) != 1 {
		t.Errorf("full config: %+v", cfg)
	}

	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("x")}))
	bad := []struct {
		s    *proxycfg.TLSSettings
		want string
	}{
		{nil, "no TLS settings"},
		{&proxycfg.TLSSettings{}, "no SNI"},
		{&proxycfg.TLSSettings{SNI: "b", CAPEM: "not pem"}, "no PEM block"},
		{&proxycfg.TLSSettings{SNI: "b", CAPEM: keyPEM}, "no \"CERTIFICATE\""},
		{&proxycfg.TLSSettings{SNI: "b", CAPEM: ca.certPEM() + string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("garbage")}))}, "certificate 2"},
		{&proxycfg.TLSSettings{SNI: "b", ClientCertPEM: client.certPEM()}, "without its private key"},
		{&proxycfg.TLSSettings{SNI: "b", ClientKeyPEM: client.keyPEM(t)}, "without its certificate"},
		{&proxycfg.TLSSettings{SNI: "b", ClientCertPEM: client.certPEM(), ClientKeyPEM: other.keyPEM(t)}, "do not load"},
		{&proxycfg.TLSSettings{SNI: "b", MinVersion: "1.1"}, "minimum version"},
	}
	for _, b := range bad {
		_, err := buildBackendTLS(b.s)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("buildBackendTLS(%+v) = %v, want error containing %q", b.s, err, b.want)
		}
	}
}

func TestBackendTLSURISANsRaw(t *testing.T) {
	ca := btlsCA(t, "test CA", nil)
	leaf := btlsLeaf(t, ca, []string{"a.example.com"}, []string{"spiffe://cluster.local/ns/a/sa/b", "https://x.example/p%41th?q=1"}, x509.ExtKeyUsageServerAuth)
	got := btlsURISANs(leaf.cert)
	want := []string{"spiffe://cluster.local/ns/a/sa/b", "https://x.example/p%41th?q=1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("URI SANs = %q, want %q", got, want)
	}
	if got := btlsURISANs(ca.cert); len(got) != 0 {
		t.Errorf("CA without SANs: %q", got)
	}
}

func TestTLSIdentity(t *testing.T) {
	if tlsIdentity(nil) != "" {
		t.Error("nil identity not empty")
	}
	base := proxycfg.TLSSettings{SNI: "b", CAPEM: "ca", SANDNSNames: []string{"x", "y"}, SANURIs: []string{"u1", "u2"}, ClientCertPEM: "c", ClientKeyPEM: "k", H2: true}
	id := tlsIdentity(&base)
	if len(id) != 64 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Errorf("identity %q is not hex SHA-256", id)
	}
	same := base
	same.SANDNSNames = []string{"y", "x"}
	same.SANURIs = []string{"u2", "u1"}
	if tlsIdentity(&same) != id {
		t.Error("SAN order changed the identity")
	}
	if base.SANDNSNames[0] != "x" {
		t.Error("tlsIdentity sorted the caller's slice")
	}
	if tlsIdentity(&proxycfg.TLSSettings{}) == "" {
		t.Error("empty settings have an empty identity")
	}
	changes := []func(*proxycfg.TLSSettings){
		func(s *proxycfg.TLSSettings) { s.SNI = "c" },
		func(s *proxycfg.TLSSettings) { s.CAPEM = "cb" },
		func(s *proxycfg.TLSSettings) { s.SANDNSNames = []string{"x"} },
		func(s *proxycfg.TLSSettings) { s.SANDNSNames = []string{"xy"} },
		func(s *proxycfg.TLSSettings) { s.SANURIs = nil },
		func(s *proxycfg.TLSSettings) { s.ClientCertPEM = "" },
		func(s *proxycfg.TLSSettings) { s.ClientKeyPEM = "k2" },
		func(s *proxycfg.TLSSettings) { s.H2 = false },
		func(s *proxycfg.TLSSettings) { s.MinVersion = proxycfg.TLS13 },
		// Moving a name from the DNS list to the URI list is a change.
		func(s *proxycfg.TLSSettings) { s.SANDNSNames = []string{"x"}; s.SANURIs = []string{"u1", "u2", "y"} },
		// Moving bytes between adjacent fields is a change.
		func(s *proxycfg.TLSSettings) { s.SNI = "bc"; s.CAPEM = "a" },
	}
	seen := map[string]int{id: -1}
	for i, ch := range changes {
		s := base
		s.SANDNSNames = append([]string(nil), base.SANDNSNames...)
		s.SANURIs = append([]string(nil), base.SANURIs...)
		ch(&s)
		got := tlsIdentity(&s)
		if j, dup := seen[got]; dup {
			t.Errorf("change %d gives the same identity as %d", i, j)
		}
		seen[got] = i
	}
}
