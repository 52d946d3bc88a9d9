// This file makes the TLS origin listener's certificate and CA.

package dataplane

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tunnelgate/tunnelgate/internal/onetimeca"
)

// A self-signed origin certificate for the TLS origin listener, when none
// is configured: a small CA and a leaf it signs. cloudflared (or any
// client) can trust the CA file rather than skip verification.

const (
	originCALifetime   = 10 * 365 * 24 * time.Hour
	originLeafLifetime = 365 * 24 * time.Hour
	// originBackdate covers clocks a little behind ours.
	originBackdate = time.Hour
	// originMinRemaining is how long a reused certificate must still be
	// valid; with less it is replaced.
	originMinRemaining = 30 * 24 * time.Hour

	originCertFile = "origin.crt"
	originKeyFile  = "origin.key"
	originCAFile   = "origin-ca.crt"
)

// generateOriginCert makes a CA (ECDSA P-256, valid ten years) and a leaf
// it signs (ECDSA P-256, valid one year, for server authentication), both
// valid from an hour before now. Each of hosts becomes an IP address SAN if
// it parses as one (IPv4 or IPv6, without brackets), else a DNS SAN; the
// leaf's common name is the first host. hosts must not be empty and no
// host may be empty or hold spaces. It returns the leaf certificate, the
// leaf's PKCS #8 private key and the CA certificate, in PEM. The CA's
// private key is dropped, so the CA vouches for this one leaf and nothing
// else can ever be signed by it.
func generateOriginCert(hosts []string, now time.Time) (certPEM, keyPEM, caPEM []byte, err error) {
	if len(hosts) == 0 {
		return nil, nil, nil, errors.New("origin certificate: no host names; give at least one (for example \"localhost\")")
	}
	var dns []string
	var ips []net.IP
	for _, h := range hosts {
		if h == "" || strings.ContainsAny(h, " \t\r\n,") {
			return nil, nil, nil, fmt.Errorf("origin certificate: host %q is not a DNS name or IP address", h)
		}
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, h)
		}
	}
	caPEM, certs, err := onetimeca.Issue("tunnelgate origin CA", originCALifetime, now, originBackdate, onetimeca.Leaf{
		CommonName: hosts[0], DNSNames: dns, IPAddresses: ips,
		Usage: x509.ExtKeyUsageServerAuth, Lifetime: originLeafLifetime,
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("origin certificate: %w", err)
	}
	return certs[0].CertPEM, certs[0].KeyPEM, caPEM, nil
}

// writeOriginCert makes sure dir holds an origin certificate for hosts and
// returns the paths of the leaf certificate (origin.crt), its key
// (origin.key, mode 0600) and the CA certificate (origin-ca.crt, mode
// 0644, as is origin.crt). Files already there are reused, untouched, when
// they parse, the key matches the certificate, the certificate chains to
// the CA file for server authentication both at now and 30 days later (so
// neither expires within 30 days) and it covers every host (an IP host by
// an IP SAN, a name by a DNS SAN that matches it as a TLS client would, or
// equals it, for a wildcard host). Otherwise all three are generated anew
// and each is written atomically: a temporary file in dir, synced, then
// renamed over the old one. A crash between the renames can leave a mixed
// set, which the next call sees as invalid and replaces. dir is created
// (0700) if missing.
func writeOriginCert(dir string, hosts []string, now time.Time) (certFile, keyFile, caFile string, err error) {
	certFile = filepath.Join(dir, originCertFile)
	keyFile = filepath.Join(dir, originKeyFile)
	caFile = filepath.Join(dir, originCAFile)
	if originReusable(certFile, keyFile, caFile, hosts, now) {
		return certFile, keyFile, caFile, nil
	}
	certPEM, keyPEM, caPEM, err := generateOriginCert(hosts, now)
	if err != nil {
		return "", "", "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", "", fmt.Errorf("origin certificate: %w", err)
	}
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{caFile, caPEM, 0o644},
		{keyFile, keyPEM, 0o600},
		{certFile, certPEM, 0o644},
	} {
		if err := originWriteFile(f.path, f.data, f.mode); err != nil {
			return "", "", "", fmt.Errorf("origin certificate: %w", err)
		}
	}
	return certFile, keyFile, caFile, nil
}

// originWriteFile writes data to path through a temporary file in the same
// directory and a rename, so a reader sees the old file or the new one.
func originWriteFile(path string, data []byte, mode os.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(mode); err != nil {
		return err
	}
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// originReusable reports whether the files at the paths make a usable
// certificate for hosts at now (see writeOriginCert).
func originReusable(certFile, keyFile, caFile string, hosts []string, now time.Time) bool {
	certPEM, err1 := os.ReadFile(certFile)
	keyPEM, err2 := os.ReadFile(keyFile)
	caPEM, err3 := os.ReadFile(caFile)
	if err1 != nil || err2 != nil || err3 != nil || len(hosts) == 0 {
		return false
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil || len(pair.Certificate) == 0 {
		return false
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return false
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return false
	}
	for _, at := range []time.Time{now, now.Add(originMinRemaining)} {
		opts := x509.VerifyOptions{
			Roots:       roots,
			CurrentTime: at,
			KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		if _, err := leaf.Verify(opts); err != nil {
			return false
		}
	}
	for _, h := range hosts {
		if !originCovers(leaf, h) {
			return false
		}
	}
	return true
}

// originCovers reports whether leaf is good for host.
func originCovers(leaf *x509.Certificate, host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		for _, have := range leaf.IPAddresses {
			if have.Equal(ip) {
				return true
			}
		}
		return false
	}
	if leaf.VerifyHostname(host) == nil {
		return true
	}
	for _, name := range leaf.DNSNames {
		if strings.EqualFold(name, host) {
			return true
		}
	}
	return false
}
