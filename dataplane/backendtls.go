// This file builds the client TLS config of a cluster's BackendTLSPolicy.

package dataplane

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// buildBackendTLS makes the client TLS config for a cluster's
// BackendTLSPolicy:
//
//   - ServerName is s.SNI, which must be set.
//   - RootCAs holds the certificates of s.CAPEM; with CAPEM empty it is nil,
//     which is the system roots. CAPEM that holds no certificate, or a
//     CERTIFICATE block that does not parse, is an error.
//   - The client certificate comes from ClientCertPEM and ClientKeyPEM,
//     which must be set together.
//   - ALPN offers h2 then http/1.1 when s.H2, else http/1.1 only.
//   - TLS 1.2 is the least version, or 1.3 when s.MinVersion says so.
//
// Without SANs the certificate is verified the usual way, against SNI.
// With SANDNSNames or SANURIs it must instead chain to the roots and carry
// one of those DNS names (matched as x509 does for a host name, so a
// wildcard certificate covers one label) or one of those URIs (compared
// byte for byte with the URI as written in the certificate). crypto/tls
// cannot express that check, so the config sets InsecureSkipVerify and does
// all of it in VerifyConnection, which runs on resumed sessions too.
func buildBackendTLS(s *proxycfg.TLSSettings) (*tls.Config, error) {
	if s == nil {
		return nil, errors.New("backend TLS: no TLS settings; the cluster needs a BackendTLSPolicy")
	}
	if s.SNI == "" {
		return nil, errors.New("backend TLS: no SNI; set the BackendTLSPolicy's validation.hostname")
	}
	cfg := &tls.Config{
		ServerName: s.SNI,
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
	}
	if s.H2 {
		cfg.NextProtos = []string{"h2", "http/1.1"}
	}
	switch s.MinVersion {
	case "", proxycfg.TLS12:
	case proxycfg.TLS13:
		cfg.MinVersion = tls.VersionTLS13
	default:
		return nil, fmt.Errorf("backend TLS: minimum version %q is not %q or %q", s.MinVersion, proxycfg.TLS12, proxycfg.TLS13)
	}
	if s.CAPEM != "" {
		pool, err := btlsCertPool(s.CAPEM)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	switch {
	case s.ClientCertPEM != "" && s.ClientKeyPEM != "":
		pair, err := tls.X509KeyPair([]byte(s.ClientCertPEM), []byte(s.ClientKeyPEM))
		if err != nil {
			return nil, fmt.Errorf("backend TLS: client certificate and key do not load (%v); give a PEM certificate chain and its matching PEM private key", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case s.ClientCertPEM != "":
		return nil, errors.New("backend TLS: client certificate given without its private key; set both or neither")
	case s.ClientKeyPEM != "":
		return nil, errors.New("backend TLS: client private key given without its certificate; set both or neither")
	}
	if len(s.SANDNSNames) > 0 || len(s.SANURIs) > 0 {
		v := &btlsSANVerifier{
			roots: cfg.RootCAs,
			sni:   s.SNI,
			dns:   slices.Clone(s.SANDNSNames),
			uris:  slices.Clone(s.SANURIs),
		}
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = v.verify
	}
	return cfg, nil
}

// btlsCertPool parses every CERTIFICATE block of caPEM into a pool. Other
// block types are skipped; text outside blocks is ignored.
func btlsCertPool(caPEM string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	rest := []byte(caPEM)
	n, blocks := 0, 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		blocks++
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("backend TLS: CA certificate %d of the CA bundle does not parse (%v); fix or remove it in the caCertificateRefs", n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		if blocks == 0 {
			return nil, errors.New("backend TLS: the CA bundle holds no PEM block; the caCertificateRefs must hold PEM \"CERTIFICATE\" blocks (or use wellKnownCACertificates: System)")
		}
		return nil, errors.New("backend TLS: the CA bundle holds no \"CERTIFICATE\" PEM block; the caCertificateRefs must hold CA certificates (or use wellKnownCACertificates: System)")
	}
	return pool, nil
}

// btlsSANVerifier checks a backend's certificate against subjectAltNames.
type btlsSANVerifier struct {
	roots *x509.CertPool // nil: system roots
	sni   string         // for messages only
	dns   []string
	uris  []string
}

func (v *btlsSANVerifier) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return fmt.Errorf("backend TLS: the backend sent no certificate for SNI %q; it must serve one", v.sni)
	}
	leaf := cs.PeerCertificates[0]
	opts := x509.VerifyOptions{
		Roots:         v.roots,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(opts); err != nil {
		return fmt.Errorf("backend TLS: the certificate served for SNI %q (subject %q) is not trusted: %w; %s", v.sni, leaf.Subject.String(), err, btlsHint(err, v.roots == nil))
	}
	for _, name := range v.dns {
		if leaf.VerifyHostname(name) == nil {
			return nil
		}
	}
	certURIs := btlsURISANs(leaf)
	for _, u := range certURIs {
		if slices.Contains(v.uris, u) {
			return nil
		}
	}
	var want []string
	want = append(want, v.dns...)
	want = append(want, v.uris...)
	var have []string
	have = append(have, leaf.DNSNames...)
	for _, ip := range leaf.IPAddresses {
		have = append(have, ip.String())
	}
	have = append(have, certURIs...)
	return fmt.Errorf("backend TLS: the certificate served for SNI %q carries subject alternative names [%s], none of which matches the BackendTLSPolicy's subjectAltNames [%s]; add one of the certificate's names to subjectAltNames or reissue the certificate",
		v.sni, strings.Join(have, ", "), strings.Join(want, ", "))
}

// backendTLSError explains a failed handshake with a cluster whose
// settings are s: crypto/tls reports a failed normal verification (the
// path without SANs) in x509's words, which say what failed but not what
// to change; this adds that. Errors that already explain themselves (the
// SAN path's, prefixed "backend TLS:") and errors that are not about the
// certificate come back unchanged. The transport should pass dial errors
// through it.
func backendTLSError(err error, s *proxycfg.TLSSettings) error {
	if err == nil || s == nil || strings.Contains(err.Error(), "backend TLS:") {
		return err
	}
	var host x509.HostnameError
	if errors.As(err, &host) {
		return fmt.Errorf("backend TLS: %w; set the BackendTLSPolicy's hostname to a name the certificate carries, list one in subjectAltNames, or reissue the certificate", err)
	}
	var cve *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var ci x509.CertificateInvalidError
	if errors.As(err, &cve) || errors.As(err, &ua) || errors.As(err, &ci) {
		return fmt.Errorf("backend TLS: the certificate served for SNI %q is not trusted: %w; %s", s.SNI, err, btlsHint(err, s.CAPEM == ""))
	}
	return err
}

// btlsHint says how to fix a failed chain verification.
func btlsHint(err error, systemRoots bool) string {
	var ua x509.UnknownAuthorityError
	var ci x509.CertificateInvalidError
	switch {
	case errors.As(err, &ua) && systemRoots:
		return "it must chain to the system roots (wellKnownCACertificates: System); for a private CA, set caCertificateRefs to the CA that issued it"
	case errors.As(err, &ua):
		return "put the CA that issued it in the BackendTLSPolicy's caCertificateRefs, and have the backend send any intermediate certificates"
	case errors.As(err, &ci) && ci.Reason == x509.Expired:
		return "renew the backend's certificate (or check the clocks)"
	case errors.As(err, &ci) && ci.Reason == x509.IncompatibleUsage:
		return "reissue the backend's certificate with extended key usage serverAuth"
	case errors.As(err, &ci) && ci.Reason == x509.NotAuthorizedToSign:
		return "a certificate in the chain is not a CA; fix the backend's certificate chain"
	}
	return "check the backend's certificate chain and the BackendTLSPolicy's caCertificateRefs"
}

// btlsOIDSAN is the subjectAltName extension.
var btlsOIDSAN = asn1.ObjectIdentifier{2, 5, 29, 17}

// btlsURISANs returns the certificate's URI subject alternative names as
// written in it. x509.Certificate.URIs holds them parsed, and a URL's
// String need not give back the bytes it was parsed from, so this reads
// the extension itself: a SEQUENCE of GeneralName, where
// uniformResourceIdentifier is [6] IA5String, implicitly tagged.
func btlsURISANs(c *x509.Certificate) []string {
	var out []string
	for _, ext := range c.Extensions {
		if !ext.Id.Equal(btlsOIDSAN) {
			continue
		}
		var seq asn1.RawValue
		if rest, err := asn1.Unmarshal(ext.Value, &seq); err != nil || len(rest) != 0 || !seq.IsCompound || seq.Tag != asn1.TagSequence || seq.Class != asn1.ClassUniversal {
			return nil
		}
		b := seq.Bytes
		for len(b) > 0 {
			var gn asn1.RawValue
			rest, err := asn1.Unmarshal(b, &gn)
			if err != nil {
				return out
			}
			b = rest
			if gn.Class == asn1.ClassContextSpecific && gn.Tag == 6 && !gn.IsCompound {
				out = append(out, string(gn.Bytes))
			}
		}
	}
	return out
}

// tlsIdentity is a stable name for everything in s that shapes the TLS
// config: the hex SHA-256 over SNI, CAPEM, the SAN lists (sorted, since
// their order changes nothing), the client certificate and key, H2 and a
// minimum version above 1.2, each length-prefixed. Connection pools are keyed by it, so clusters with
// the same settings share connections and a change of any of them starts
// new ones. It is "" for nil.
func tlsIdentity(s *proxycfg.TLSSettings) string {
	if s == nil {
		return ""
	}
	h := sha256.New()
	var n [8]byte
	field := func(v string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
	list := func(vs []string) {
		vs = slices.Clone(vs)
		slices.Sort(vs)
		binary.BigEndian.PutUint64(n[:], uint64(len(vs)))
		h.Write(n[:])
		for _, v := range vs {
			field(v)
		}
	}
	field("tunnelgate/backend-tls/v1")
	field(s.SNI)
	field(s.CAPEM)
	list(s.SANDNSNames)
	list(s.SANURIs)
	field(s.ClientCertPEM)
	field(s.ClientKeyPEM)
	if s.H2 {
		field("h2")
	} else {
		field("")
	}
	if s.MinVersion != "" && s.MinVersion != proxycfg.TLS12 {
		field("min " + s.MinVersion) // last and only when set: the identities of earlier configs stay
	}
	return hex.EncodeToString(h.Sum(nil))
}
