package configserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/test/testpki"
)

func writeFile(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// tlsGet asks for the config over TLS, trusting roots and presenting
// cert when given, and returns the status or the error.
func tlsGet(url string, roots *testpki.CA, cert *tls.Certificate) (int, error) {
	pool := x509.NewCertPool()
	pool.AddCert(roots.Cert)
	tc := &tls.Config{RootCAs: pool}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	req, _ := http.NewRequest("GET", url+configwatch.Path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}

func TestTLSWithClientCertificates(t *testing.T) {
	dir := t.TempDir()
	serverCA, clientCA, otherCA := testpki.NewCA(t, "server CA"), testpki.NewCA(t, "client CA"), testpki.NewCA(t, "other CA")
	certPEM, keyPEM := serverCA.Issue(t, "leaf", true)
	files := TLSFiles{
		CertFile:     writeFile(t, filepath.Join(dir, "tls.crt"), certPEM),
		KeyFile:      writeFile(t, filepath.Join(dir, "tls.key"), keyPEM),
		ClientCAFile: writeFile(t, filepath.Join(dir, "client-ca.crt"), clientCA.PEM),
	}
	tc, err := TLSConfig(files, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Token: testToken, Log: quietLog()})
	s.Publish(smallConfig("127.0.0.1:1"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, tc) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	url := "https://" + ln.Addr().String()

	ccPEM, ckPEM := clientCA.Issue(t, "leaf", false)
	good, err := tls.X509KeyPair(ccPEM, ckPEM)
	if err != nil {
		t.Fatal(err)
	}
	opPEM, okPEM := otherCA.Issue(t, "leaf", false)
	stranger, _ := tls.X509KeyPair(opPEM, okPEM)

	if code, err := tlsGet(url, serverCA, &good); err != nil || code != 200 {
		t.Fatalf("trusted client: %d %v", code, err)
	}
	if _, err := tlsGet(url, serverCA, nil); err == nil {
		t.Error("a client without a certificate got an answer")
	}
	if _, err := tlsGet(url, serverCA, &stranger); err == nil {
		t.Error("a client certificate from another CA was accepted")
	}
	if _, err := tlsGet(url, otherCA, &good); err == nil {
		t.Error("the client trusted a server its CA did not sign")
	}

	// A renewed certificate (here from another CA, to tell them apart)
	// is served without a restart.
	newCert, newKey := otherCA.Issue(t, "leaf", true)
	writeFile(t, files.KeyFile, newKey)
	writeFile(t, files.CertFile, newCert)
	if code, err := tlsGet(url, otherCA, &good); err != nil || code != 200 {
		t.Fatalf("after renewal: %d %v", code, err)
	}
	// A broken file keeps the last good certificate.
	writeFile(t, files.CertFile, []byte("not a certificate"))
	if code, err := tlsGet(url, otherCA, &good); err != nil || code != 200 {
		t.Fatalf("after a broken renewal: %d %v", code, err)
	}
}

func TestTLSConfigRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ca")
	certPEM, keyPEM := ca.Issue(t, "leaf", true)
	cert, key := writeFile(t, filepath.Join(dir, "c"), certPEM), writeFile(t, filepath.Join(dir, "k"), keyPEM)
	junk := writeFile(t, filepath.Join(dir, "junk"), []byte("junk"))
	for name, f := range map[string]TLSFiles{
		"no key":         {CertFile: cert},
		"missing file":   {CertFile: filepath.Join(dir, "nope"), KeyFile: key},
		"key mismatch":   {CertFile: cert, KeyFile: junk},
		"client CA junk": {CertFile: cert, KeyFile: key, ClientCAFile: junk},
	} {
		if _, err := TLSConfig(f, quietLog()); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
