package kubeenv

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"
)

// pki is the Env's certificate authority and the files the control plane
// reads. Everything is generated per Env: nothing is shared or checked in.
type pki struct {
	dir    string
	ca     *x509.Certificate
	caKey  crypto.Signer
	caPEM  []byte
	notAft time.Time
}

// Files in the pki directory.
const (
	fileCACert       = "ca.crt"
	fileCAKey        = "ca.key"
	fileServingCert  = "apiserver.crt"
	fileServingKey   = "apiserver.key"
	fileKubeletCert  = "apiserver-kubelet-client.crt"
	fileKubeletKey   = "apiserver-kubelet-client.key"
	fileSAPrivateKey = "sa.key"
	fileSAPublicKey  = "sa.pub"
)

// newPKI writes a CA, the apiserver's serving certificate for 127.0.0.1,
// localhost and the kubernetes Service (its names and ClusterIP), its
// client certificate towards kubelets, and the service account signing key
// pair (RSA, which every Kubernetes version accepts).
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	now := time.Now()
	p := &pki{dir: dir, notAft: now.Add(7 * 24 * time.Hour)}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "kubeenv-ca"},
		NotBefore:             now.Add(-time.Hour), // tolerate clock skew between processes
		NotAfter:              p.notAft,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	if p.ca, err = x509.ParseCertificate(der); err != nil {
		return nil, err
	}
	p.caKey = key
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	if err := p.write(map[string][]byte{fileCACert: p.caPEM, fileCAKey: keyPEM}); err != nil {
		return nil, err
	}

	// As on a cluster, the kubernetes Service's ClusterIP (the first address
	// of ServiceCIDR) is a SAN too: Pods that test/kubelet runs reach the
	// API server there and verify it with the CA of their ServiceAccount
	// volume.
	kubernetesIP := netip.MustParsePrefix(ServiceCIDR).Masked().Addr().Next()
	cert, keyPEM, err := p.issue(pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth,
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IP(kubernetesIP.AsSlice())})
	if err != nil {
		return nil, err
	}
	if err := p.write(map[string][]byte{fileServingCert: cert, fileServingKey: keyPEM}); err != nil {
		return nil, err
	}
	cert, keyPEM, err = p.clientCert("kube-apiserver-kubelet-client", "system:masters")
	if err != nil {
		return nil, err
	}
	if err := p.write(map[string][]byte{fileKubeletCert: cert, fileKubeletKey: keyPEM}); err != nil {
		return nil, err
	}

	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPriv, err := encodeKey(sa)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(sa.Public())
	if err != nil {
		return nil, err
	}
	saPub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})
	if err := p.write(map[string][]byte{fileSAPrivateKey: saPriv, fileSAPublicKey: saPub}); err != nil {
		return nil, err
	}
	return p, nil
}

// clientCert issues a client certificate: the apiserver takes the common
// name as the user name and the organizations as its groups.
func (p *pki) clientCert(user string, groups ...string) (certPEM, keyPEM []byte, err error) {
	return p.issue(pkix.Name{CommonName: user, Organization: groups}, x509.ExtKeyUsageClientAuth, nil, nil)
}

// issue signs a fresh P-256 key for one purpose.
func (p *pki) issue(subject pkix.Name, usage x509.ExtKeyUsage, dns []string, ips []net.IP) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      subject,
		NotBefore:    p.ca.NotBefore,
		NotAfter:     p.notAft,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, key.Public(), p.caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeenv: sign certificate for %s: %w", subject.CommonName, err)
	}
	if keyPEM, err = encodeKey(key); err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

// write writes files by name into the pki directory.
func (p *pki) write(files map[string][]byte) error {
	for name, data := range files {
		if err := os.WriteFile(p.path(name), data, 0o600); err != nil {
			return fmt.Errorf("kubeenv: write %s: %w", name, err)
		}
	}
	return nil
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}
