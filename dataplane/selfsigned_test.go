package dataplane

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var originT0 = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)

func originParse(t *testing.T, pemBytes []byte) *x509.Certificate {
	t.Helper()
	b, rest := pem.Decode(pemBytes)
	if b == nil || b.Type != "CERTIFICATE" || len(bytes.TrimSpace(rest)) != 0 {
		t.Fatalf("not one PEM certificate: %q", pemBytes)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGenerateOriginCert(t *testing.T) {
	certPEM, keyPEM, caPEM, err := generateOriginCert([]string{"localhost", "127.0.0.1", "::1", "origin.example.com"}, originT0)
	if err != nil {
		t.Fatal(err)
	}
	leaf, ca := originParse(t, certPEM), originParse(t, caPEM)
	if !ca.IsCA || !ca.BasicConstraintsValid || ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("CA flags: IsCA=%v usage=%v", ca.IsCA, ca.KeyUsage)
	}
	if leaf.IsCA {
		t.Error("leaf is a CA")
	}
	for _, c := range []*x509.Certificate{ca, leaf} {
		pub, ok := c.PublicKey.(*ecdsa.PublicKey)
		if !ok || pub.Curve != elliptic.P256() {
			t.Errorf("%s: key %T, want ECDSA P-256", c.Subject, c.PublicKey)
		}
	}
	if got := ca.NotAfter.Sub(originT0); got != 10*365*24*time.Hour {
		t.Errorf("CA lifetime %v", got)
	}
	if got := leaf.NotAfter.Sub(originT0); got != 365*24*time.Hour {
		t.Errorf("leaf lifetime %v", got)
	}
	if leaf.NotBefore.After(originT0) || ca.NotBefore.After(originT0) {
		t.Error("not valid at now")
	}
	if len(leaf.DNSNames) != 2 || leaf.DNSNames[0] != "localhost" || leaf.DNSNames[1] != "origin.example.com" {
		t.Errorf("DNS SANs %q", leaf.DNSNames)
	}
	if len(leaf.IPAddresses) != 2 || !leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) || !leaf.IPAddresses[1].Equal(net.IPv6loopback) {
		t.Errorf("IP SANs %v", leaf.IPAddresses)
	}
	if leaf.Subject.CommonName != "localhost" {
		t.Errorf("CN %q", leaf.Subject.CommonName)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "origin.example.com", CurrentTime: originT0}); err != nil {
		t.Errorf("leaf does not verify: %v", err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Errorf("key does not match: %v", err)
	}
	if b, _ := pem.Decode(keyPEM); b == nil || b.Type != "PRIVATE KEY" {
		t.Errorf("key PEM type")
	}
	// Two calls make different keys and serials.
	certPEM2, _, _, err := generateOriginCert([]string{"localhost"}, originT0)
	if err != nil {
		t.Fatal(err)
	}
	if originParse(t, certPEM2).SerialNumber.Cmp(leaf.SerialNumber) == 0 {
		t.Error("same serial twice")
	}

	for _, hosts := range [][]string{nil, {""}, {"a b"}, {"localhost", "x,y"}} {
		if _, _, _, err := generateOriginCert(hosts, originT0); err == nil {
			t.Errorf("hosts %q: no error", hosts)
		}
	}
}

type originFiles struct{ cert, key, ca []byte }

func originRead(t *testing.T, certFile, keyFile, caFile string) originFiles {
	t.Helper()
	var f originFiles
	var err error
	if f.cert, err = os.ReadFile(certFile); err != nil {
		t.Fatal(err)
	}
	if f.key, err = os.ReadFile(keyFile); err != nil {
		t.Fatal(err)
	}
	if f.ca, err = os.ReadFile(caFile); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f originFiles) same(g originFiles) bool {
	return bytes.Equal(f.cert, g.cert) && bytes.Equal(f.key, g.key) && bytes.Equal(f.ca, g.ca)
}

func mustWriteOrigin(t *testing.T, dir string, hosts []string, now time.Time) originFiles {
	t.Helper()
	c, k, ca, err := writeOriginCert(dir, hosts, now)
	if err != nil {
		t.Fatal(err)
	}
	if c != filepath.Join(dir, "origin.crt") || k != filepath.Join(dir, "origin.key") || ca != filepath.Join(dir, "origin-ca.crt") {
		t.Fatalf("paths %s %s %s", c, k, ca)
	}
	return originRead(t, c, k, ca)
}

func TestWriteOriginCert(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs") // does not exist yet
	hosts := []string{"localhost", "127.0.0.1"}
	first := mustWriteOrigin(t, dir, hosts, originT0)

	for name, want := range map[string]os.FileMode{"origin.crt": 0o644, "origin.key": 0o600, "origin-ca.crt": 0o644} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Errorf("dir holds %d entries, want 3 (temporary files left?)", len(ents))
	}

	// Reused: a later time still 30+ days from expiry, hosts in another
	// order or a subset.
	for _, c := range []struct {
		hosts []string
		now   time.Time
	}{
		{hosts, originT0},
		{[]string{"127.0.0.1", "localhost"}, originT0.Add(24 * time.Hour)},
		{[]string{"localhost"}, originT0.Add(300 * 24 * time.Hour)},
	} {
		if got := mustWriteOrigin(t, dir, c.hosts, c.now); !got.same(first) {
			t.Errorf("hosts %q at %v: regenerated, want reuse", c.hosts, c.now)
		}
	}

	// Regenerated: under 30 days left, expired, a host missing.
	cur := first
	for _, c := range []struct {
		name  string
		hosts []string
		now   time.Time
	}{
		{"under 30 days left", hosts, originT0.Add(340 * 24 * time.Hour)},
		{"expired", hosts, originT0.Add(3 * 365 * 24 * time.Hour)},
		{"missing DNS host", append(hosts, "origin.example.com"), originT0.Add(3 * 365 * 24 * time.Hour)},
		{"missing IP host", append(hosts, "origin.example.com", "::1"), originT0.Add(3 * 365 * 24 * time.Hour)},
	} {
		got := mustWriteOrigin(t, dir, c.hosts, c.now)
		if got.same(cur) || bytes.Equal(got.key, cur.key) || bytes.Equal(got.ca, cur.ca) {
			t.Errorf("%s: not regenerated", c.name)
		}
		leaf := originParse(t, got.cert)
		for _, h := range c.hosts {
			if !originCovers(leaf, h) {
				t.Errorf("%s: new certificate does not cover %q", c.name, h)
			}
		}
		cur = got
	}
}

func TestWriteOriginCertRepairs(t *testing.T) {
	hosts := []string{"localhost"}
	breakers := map[string]func(dir string, f originFiles){
		"missing key": func(dir string, f originFiles) { os.Remove(filepath.Join(dir, "origin.key")) },
		"missing CA":  func(dir string, f originFiles) { os.Remove(filepath.Join(dir, "origin-ca.crt")) },
		"garbage cert": func(dir string, f originFiles) {
			os.WriteFile(filepath.Join(dir, "origin.crt"), []byte("junk"), 0o644)
		},
		"key of another pair": func(dir string, f originFiles) {
			_, key, _, err := generateOriginCert(hosts, originT0)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, "origin.key"), key, 0o600)
		},
		"CA of another pair": func(dir string, f originFiles) {
			_, _, ca, err := generateOriginCert(hosts, originT0)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, "origin-ca.crt"), ca, 0o644)
		},
	}
	for name, brk := range breakers {
		dir := t.TempDir()
		first := mustWriteOrigin(t, dir, hosts, originT0)
		brk(dir, first)
		got := mustWriteOrigin(t, dir, hosts, originT0)
		if got.same(first) {
			t.Errorf("%s: reused", name)
		}
		if _, err := tls.X509KeyPair(got.cert, got.key); err != nil {
			t.Errorf("%s: repaired pair does not load: %v", name, err)
		}
		if got2 := mustWriteOrigin(t, dir, hosts, originT0); !got2.same(got) {
			t.Errorf("%s: repaired files not reused", name)
		}
	}
}

func TestWriteOriginCertErrors(t *testing.T) {
	if _, _, _, err := writeOriginCert(t.TempDir(), nil, originT0); err == nil {
		t.Error("no hosts: no error")
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	if _, _, _, err := writeOriginCert(filepath.Join(file, "sub"), []string{"localhost"}, originT0); err == nil {
		t.Error("dir under a file: no error")
	}
}

// TestOriginCertHandshake serves the written pair and dials it with the CA
// as the only root, as cloudflared would be told to.
func TestOriginCertHandshake(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, caFile, err := writeOriginCert(dir, []string{"localhost", "127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if c.(*tls.Conn).Handshake() == nil {
					c.Write([]byte("ok"))
				}
			}()
		}
	}()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA file holds no certificate")
	}
	dial := func(serverName string, roots *x509.CertPool) error {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), &tls.Config{ServerName: serverName, RootCAs: roots})
		if err != nil {
			return err
		}
		defer c.Close()
		buf := make([]byte, 2)
		_, err = io.ReadFull(c, buf)
		return err
	}
	for _, name := range []string{"localhost", "127.0.0.1"} {
		if err := dial(name, roots); err != nil {
			t.Errorf("ServerName %q: %v", name, err)
		}
	}
	if err := dial("other.example.com", roots); err == nil {
		t.Error("ServerName other.example.com: handshake succeeded")
	}
	if err := dial("localhost", x509.NewCertPool()); err == nil {
		t.Error("without the CA as root: handshake succeeded")
	}
}
