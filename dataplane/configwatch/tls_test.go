package configwatch_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/test/testpki"
)

// issueFiles has ca sign a certificate for 127.0.0.1 (server) or a
// client, and writes it and its key into dir, returning the two files.
func issueFiles(t *testing.T, ca *testpki.CA, dir, name string, server bool) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM := ca.Issue(t, name, server)
	return writeFile(t, filepath.Join(dir, name+".crt"), string(certPEM)), writeFile(t, filepath.Join(dir, name+".key"), string(keyPEM))
}

// The whole path over TLS with client certificates: the controller's
// certificate checked against -ca-file, the proxy's against the
// controller's client CA, and the bearer token on top.
func TestWatchOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	serverCA, clientCA := testpki.NewCA(t, "test CA"), testpki.NewCA(t, "test CA")
	srvCert, srvKey := issueFiles(t, serverCA, dir, "server", true)
	tc, err := configserver.TLSConfig(configserver.TLSFiles{
		CertFile: srvCert, KeyFile: srvKey, ClientCAFile: writeFile(t, filepath.Join(dir, "client-ca.crt"), string(clientCA.PEM)),
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
	caFile := writeFile(t, filepath.Join(dir, "server-ca.crt"), string(serverCA.PEM))
	cliCert, cliKey := issueFiles(t, clientCA, dir, "proxy", false)

	// Without a client certificate, or trusting another CA: no config.
	for name, o := range map[string]configwatch.Options{
		"no client certificate": {CAFile: caFile},
		"the wrong CA":          {CAFile: writeFile(t, filepath.Join(dir, "other-ca.crt"), string(testpki.NewCA(t, "test CA").PEM)), CertFile: cliCert, KeyFile: cliKey},
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
