// This file makes and renews a plane's relay credentials.

package planes

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/provision"
	"github.com/tunnelgate/tunnelgate/internal/onetimeca"
)

// The relay between the shared proxies and a plane that takes its
// requests through them (GatewayConfig classTunnel) is TLS both ways,
// with certificates of that plane alone: a CA made for it signs a server
// certificate (for the plane's proxies) and a client certificate (for
// the shared proxies), and is then forgotten, so nothing else can ever
// be signed by it. They live in the plane's credentials Secret, made
// once by the leader and read back by every replica; they are made anew
// when they near their end.

const (
	relayLifetime = 10 * 365 * 24 * time.Hour
	// relayBackdate covers clocks a little behind the controller's.
	relayBackdate = time.Hour
	// relayMinRemaining is how long relay certificates must still be
	// valid to be kept.
	relayMinRemaining = 30 * 24 * time.Hour
)

// KeepOrRenewRelayCredentials are a plane's relay credentials as it has
// them (ok: it has them all), or new ones when it has none, or none that
// will last. existing may be anything a user wrote into the Secret.
func KeepOrRenewRelayCredentials(existing provision.RelayCredentials, ok bool, now time.Time) (provision.RelayCredentials, error) {
	if ok && relayLasts(existing, now) {
		return existing, nil
	}
	return NewRelayCredentials(now)
}

// relayLasts says whether both certificates parse, go with their keys,
// chain to the CA, and stay valid for relayMinRemaining.
func relayLasts(c provision.RelayCredentials, now time.Time) bool {
	for _, pair := range [][2][]byte{{c.Cert, c.Key}, {c.ClientCert, c.ClientKey}} {
		if _, err := tls.X509KeyPair(pair[0], pair[1]); err != nil {
			return false
		}
	}
	ca, err := parsePEMCert(c.CA)
	if err != nil {
		return false
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, leaf := range []struct {
		pem   []byte
		usage x509.ExtKeyUsage
	}{{c.Cert, x509.ExtKeyUsageServerAuth}, {c.ClientCert, x509.ExtKeyUsageClientAuth}} {
		cert, err := parsePEMCert(leaf.pem)
		if err != nil || cert.NotAfter.Before(now.Add(relayMinRemaining)) {
			return false
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{leaf.usage}}); err != nil {
			return false
		}
	}
	return true
}

func parsePEMCert(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

// NewRelayCredentials makes a CA, a server certificate for
// provision.RelayServerName and a client certificate, all valid from an
// hour before now for ten years, and drops the CA's key.
func NewRelayCredentials(now time.Time) (provision.RelayCredentials, error) {
	ca, certs, err := onetimeca.Issue("tunnelgate relay CA", relayLifetime, now, relayBackdate,
		onetimeca.Leaf{CommonName: provision.RelayServerName, DNSNames: []string{provision.RelayServerName},
			Usage: x509.ExtKeyUsageServerAuth, Lifetime: relayLifetime},
		onetimeca.Leaf{CommonName: "tunnelgate shared proxies", Usage: x509.ExtKeyUsageClientAuth, Lifetime: relayLifetime})
	if err != nil {
		return provision.RelayCredentials{}, fmt.Errorf("relay credentials: %w", err)
	}
	return provision.RelayCredentials{CA: ca, Cert: certs[0].CertPEM, Key: certs[0].KeyPEM,
		ClientCert: certs[1].CertPEM, ClientKey: certs[1].KeyPEM}, nil
}
