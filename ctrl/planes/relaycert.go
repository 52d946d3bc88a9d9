package planes

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/provision"
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

// relayCredentials are the plane's relay credentials from its Secret,
// or new ones when it has none, or none that will last.
func relayCredentials(existing provision.RelayCredentials, ok bool, now time.Time) (provision.RelayCredentials, error) {
	if ok && relayLasts(existing, now) {
		return existing, nil
	}
	return NewRelayCredentials(now)
}

// relayLasts says whether both certificates parse, chain to the CA, and
// stay valid for relayMinRemaining.
func relayLasts(c provision.RelayCredentials, now time.Time) bool {
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

// NewRelayCredentials makes a CA (ECDSA P-256), a server certificate for
// provision.RelayServerName and a client certificate, all valid from an
// hour before now for ten years, and drops the CA's key.
func NewRelayCredentials(now time.Time) (provision.RelayCredentials, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return provision.RelayCredentials{}, err
	}
	caTmpl := relayTemplate("tunnelgate relay CA", now)
	caTmpl.IsCA, caTmpl.BasicConstraintsValid, caTmpl.MaxPathLenZero = true, true, true
	caTmpl.KeyUsage = x509.KeyUsageCertSign
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return provision.RelayCredentials{}, fmt.Errorf("relay CA: %w", err)
	}
	server := relayTemplate(provision.RelayServerName, now)
	server.DNSNames = []string{provision.RelayServerName}
	server.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	certPEM, keyPEM, err := relayLeaf(server, caTmpl, caKey)
	if err != nil {
		return provision.RelayCredentials{}, fmt.Errorf("relay server certificate: %w", err)
	}
	client := relayTemplate("tunnelgate shared proxies", now)
	client.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	clientPEM, clientKeyPEM, err := relayLeaf(client, caTmpl, caKey)
	if err != nil {
		return provision.RelayCredentials{}, fmt.Errorf("relay client certificate: %w", err)
	}
	return provision.RelayCredentials{
		CA:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		Cert: certPEM, Key: keyPEM, ClientCert: clientPEM, ClientKey: clientKeyPEM,
	}, nil
}

// relayTemplate is a certificate named cn with a random serial number.
func relayTemplate(cn string, now time.Time) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"tunnelgate"}},
		NotBefore:    now.Add(-relayBackdate),
		NotAfter:     now.Add(relayLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
}

// relayLeaf signs tmpl with the CA, for a new key, and returns both in
// PEM.
func relayLeaf(tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}
