// Package onetimeca makes a certificate authority for a few leaf
// certificates, signs them, and forgets its key: the CA then vouches for
// those leaves and nothing else can ever be signed by it. A client that
// trusts the CA's certificate trusts exactly those leaves, so it can check
// a peer without system roots, and no CA key has to be kept anywhere.
//
// The proxy's generated TLS origin certificate (dataplane) and a plane's
// relay credentials (ctrl/planes) are made so.
package onetimeca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Leaf is a certificate to sign.
type Leaf struct {
	CommonName  string
	DNSNames    []string
	IPAddresses []net.IP
	// Usage is what the certificate is for: server or client
	// authentication.
	Usage    x509.ExtKeyUsage
	Lifetime time.Duration
}

// Cert is a signed leaf and its PKCS #8 private key, in PEM.
type Cert struct {
	CertPEM, KeyPEM []byte
}

// Issue makes a CA named caName, valid for caLifetime, signs leaves with
// it, in order, and drops its key. Every certificate is valid from
// backdate before now (for clocks a little behind), with an ECDSA P-256
// key, a random serial number and the organization "tunnelgate". It
// returns the CA's certificate and the leaves, in PEM.
func Issue(caName string, caLifetime time.Duration, now time.Time, backdate time.Duration, leaves ...Leaf) (caPEM []byte, certs []Cert, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: caName, Organization: []string{"tunnelgate"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(caLifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	if caTmpl.SerialNumber, err = serial(); err != nil {
		return nil, nil, err
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, fmt.Errorf("CA: %w", err)
	}
	for _, l := range leaves {
		c, err := sign(l, ca, caKey, now, backdate)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", l.CommonName, err)
		}
		certs = append(certs, c)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), certs, nil
}

// sign makes a key for l and signs its certificate with the CA.
func sign(l Leaf, ca *x509.Certificate, caKey *ecdsa.PrivateKey, now time.Time, backdate time.Duration) (Cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Cert{}, fmt.Errorf("key: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: l.CommonName, Organization: []string{"tunnelgate"}},
		NotBefore:   now.Add(-backdate),
		NotAfter:    now.Add(l.Lifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{l.Usage},
		DNSNames:    l.DNSNames,
		IPAddresses: l.IPAddresses,
	}
	if tmpl.SerialNumber, err = serial(); err != nil {
		return Cert{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return Cert{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Cert{}, fmt.Errorf("key: %w", err)
	}
	return Cert{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})}, nil
}

// serial is a random positive 128-bit serial number.
func serial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}
