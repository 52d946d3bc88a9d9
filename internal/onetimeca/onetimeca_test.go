package onetimeca

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"testing"
	"time"
)

// Each leaf is a working pair that chains to the CA for its usage alone,
// and the CA can sign no further CA.
func TestIssue(t *testing.T) {
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	caPEM, certs, err := Issue("test CA", 48*time.Hour, now, time.Hour,
		Leaf{CommonName: "srv", DNSNames: []string{"srv.example"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, Usage: x509.ExtKeyUsageServerAuth, Lifetime: 24 * time.Hour},
		Leaf{CommonName: "cli", Usage: x509.ExtKeyUsageClientAuth, Lifetime: 24 * time.Hour})
	if err != nil || len(certs) != 2 {
		t.Fatalf("Issue: %d certificates, %v", len(certs), err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA does not parse")
	}
	for i, want := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		pair, err := tls.X509KeyPair(certs[i].CertPEM, certs[i].KeyPEM)
		if err != nil {
			t.Fatalf("leaf %d: %v", i, err)
		}
		leaf, _ := x509.ParseCertificate(pair.Certificate[0])
		at := now.Add(-30 * time.Minute) // within the backdate
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{want}}); err != nil {
			t.Errorf("leaf %d for its usage: %v", i, err)
		}
		other := x509.ExtKeyUsageClientAuth + x509.ExtKeyUsageServerAuth - want
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{other}}); err == nil {
			t.Errorf("leaf %d verifies for the other usage too", i)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now.Add(25 * time.Hour), KeyUsages: []x509.ExtKeyUsage{want}}); err == nil {
			t.Errorf("leaf %d valid beyond its lifetime", i)
		}
	}
	block, _ := pem.Decode(caPEM)
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil || !ca.IsCA || !ca.MaxPathLenZero {
		t.Errorf("CA: %v; want one that may sign no further CA", err)
	}
}
