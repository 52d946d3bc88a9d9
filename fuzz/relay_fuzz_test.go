package fuzz

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/planes"
	"github.com/tunnelgate/tunnelgate/ctrl/provision"
)

// FuzzRelayCredentials feeds KeepOrRenewRelayCredentials whatever a user
// may write into a plane's credentials Secret. It never panics, and what
// it returns is always usable: both key pairs load and the CA parses (the
// controller hands them to the shared proxies, which refuse a whole
// config with a cluster they cannot use); credentials that already last
// are kept as they are.
//
// Seeds: a set the controller made, the same with the two pairs swapped,
// PEM that is not a certificate, nothing; in
// testdata/fuzz/FuzzRelayCredentials, the fuzzer's first find (good
// certificates, the server's key lost: they were kept) and nothing.
func FuzzRelayCredentials(f *testing.F) {
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	good, err := planes.NewRelayCredentials(now)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good.CA, good.Cert, good.Key, good.ClientCert, good.ClientKey)
	f.Add(good.CA, good.ClientCert, good.ClientKey, good.Cert, good.Key)
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), good.Cert, good.Key, good.ClientCert, good.ClientKey)
	f.Add([]byte{}, []byte{}, []byte{}, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, ca, cert, key, clientCert, clientKey []byte) {
		in := provision.RelayCredentials{CA: ca, Cert: cert, Key: key, ClientCert: clientCert, ClientKey: clientKey}
		out, err := planes.KeepOrRenewRelayCredentials(in, true, now)
		if err != nil {
			t.Fatalf("error: %v", err) // only the system's randomness may fail
		}
		for name, pair := range map[string][2][]byte{"server": {out.Cert, out.Key}, "client": {out.ClientCert, out.ClientKey}} {
			if _, err := tls.X509KeyPair(pair[0], pair[1]); err != nil {
				t.Fatalf("%s pair unusable: %v", name, err)
			}
		}
		if !x509.NewCertPool().AppendCertsFromPEM(out.CA) {
			t.Fatal("CA does not parse")
		}
		again, err := planes.KeepOrRenewRelayCredentials(out, true, now)
		if err != nil || !bytes.Equal(again.CA, out.CA) || !bytes.Equal(again.ClientKey, out.ClientKey) {
			t.Fatalf("credentials just made are not kept (%v)", err)
		}
	})
}
