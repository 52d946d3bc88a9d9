package configwatch_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  string
}

func newCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

// issue writes a certificate for 127.0.0.1 (server) or a client, and its
// key, into dir, returning the two files.
func (ca *testCA) issue(t *testing.T, dir, name string, server bool) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = writeFile(t, filepath.Join(dir, name+".crt"), string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	keyFile = writeFile(t, filepath.Join(dir, name+".key"), string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})))
	return certFile, keyFile
}

// The whole path over TLS with client certificates: the controller's
// certificate checked against -ca-file, the proxy's against the
// controller's client CA, and the bearer token on top.
func TestWatchOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	serverCA, clientCA := newCA(t), newCA(t)
	srvCert, srvKey := serverCA.issue(t, dir, "server", true)
	tc, err := configserver.TLSConfig(configserver.TLSFiles{
		CertFile: srvCert, KeyFile: srvKey, ClientCAFile: writeFile(t, filepath.Join(dir, "client-ca.crt"), clientCA.pem),
	}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	s := configserver.New(configserver.Options{Token: token, Log: quietLog(), MaxWait: time.Hour})
	s.Publish(config("", backend(t, "a")))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, tc) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	url := "https://" + ln.Addr().String()
	caFile := writeFile(t, filepath.Join(dir, "server-ca.crt"), serverCA.pem)
	cliCert, cliKey := clientCA.issue(t, dir, "proxy", false)

	// Without a client certificate, or trusting another CA: no config.
	for name, o := range map[string]configwatch.Options{
		"no client certificate": {CAFile: caFile},
		"the wrong CA":          {CAFile: writeFile(t, filepath.Join(dir, "other-ca.crt"), newCA(t).pem), CertFile: cliCert, KeyFile: cliKey},
	} {
		px := startProxy(t, url, o)
		ws := px.w.Stats()
		waitFor(t, name+": failures", func() bool { return ws.Failures[configwatch.FailUnreachable].Load() >= 2 })
		if px.p.Ready() {
			t.Errorf("%s: the proxy got a config", name)
		}
		px.stop()
	}

	px := startProxy(t, url, configwatch.Options{CAFile: caFile, CertFile: cliCert, KeyFile: cliKey})
	px.waitServes("app.example", "a")
}
