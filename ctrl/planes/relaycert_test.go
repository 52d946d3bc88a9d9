package planes

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/provision"
)

// The relay's credentials make a working mutual TLS pair, are kept while
// they last, and are made anew when they near their end or are broken.
func TestRelayCredentials(t *testing.T) {
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	c, err := KeepOrRenewRelayCredentials(provision.RelayCredentials{}, false, now)
	if err != nil {
		t.Fatal(err)
	}
	server, err := tls.X509KeyPair(c.Cert, c.Key)
	if err != nil {
		t.Fatalf("server pair: %v", err)
	}
	client, err := tls.X509KeyPair(c.ClientCert, c.ClientKey)
	if err != nil {
		t.Fatalf("client pair: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(c.CA) {
		t.Fatal("CA does not parse")
	}
	verify := func(der []byte, usage x509.ExtKeyUsage, name string) error {
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return err
		}
		_, err = cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}})
		return err
	}
	if err := verify(server.Certificate[0], x509.ExtKeyUsageServerAuth, provision.RelayServerName); err != nil {
		t.Errorf("server certificate: %v", err)
	}
	if err := verify(client.Certificate[0], x509.ExtKeyUsageClientAuth, ""); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if err := verify(client.Certificate[0], x509.ExtKeyUsageServerAuth, provision.RelayServerName); err == nil {
		t.Error("the client certificate also serves")
	}

	kept, err := KeepOrRenewRelayCredentials(c, true, now.Add(365*24*time.Hour))
	if err != nil || string(kept.CA) != string(c.CA) {
		t.Errorf("a year on: made anew (%v); want kept", err)
	}
	for name, at := range map[string]time.Time{"near their end": now.Add(relayLifetime - relayMinRemaining/2)} {
		renewed, err := KeepOrRenewRelayCredentials(c, true, at)
		if err != nil || string(renewed.CA) == string(c.CA) {
			t.Errorf("%s: kept (%v); want new ones", name, err)
		}
	}
	broken := c
	broken.ClientCert = c.Cert // a server certificate where the client's goes
	if renewed, err := KeepOrRenewRelayCredentials(broken, true, now); err != nil || string(renewed.CA) == string(c.CA) {
		t.Errorf("broken: kept (%v); want new ones", err)
	}
	keyless := c
	keyless.Key = []byte("lost")
	if renewed, err := KeepOrRenewRelayCredentials(keyless, true, now); err != nil || string(renewed.CA) == string(c.CA) {
		t.Errorf("the server key lost: kept (%v); want new ones", err)
	}
}
