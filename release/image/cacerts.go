// This file implements the image's CA bundle.

package image

import (
	"bytes"
	"encoding/pem"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// CABundle returns the image's /etc/ssl/certs/ca-certificates.crt: the
// roots of Mozilla's NSS trust store, as the Go team publishes them in
// golang.org/x/crypto/x509roots/fallback, in PEM, in the bundle's order.
//
// The module is pinned by go.mod and checked by go.sum, so every machine
// builds the same file without the network at image time; the machine's
// own /etc/ssl/certs would differ from one distribution (and one update)
// to the next. A newer bundle is a go.mod bump, reviewed like any other.
//
// Roots that NSS distrusts after a date are left out: a PEM file cannot
// carry that constraint, and trusting them without it would accept
// certificates NSS refuses.
func CABundle() []byte {
	var b bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		// Encoding to a bytes.Buffer cannot fail.
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})
	}
	return b.Bytes()
}
