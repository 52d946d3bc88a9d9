// Package testaccess makes what Cloudflare Access would, for tests: a
// team's RSA signing keys, the certs document that publishes them, and
// tokens signed with them (or with any algorithm, key and header a
// forgery needs).
package testaccess

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"sync"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

var (
	keysMu sync.Mutex
	keys   = map[string]*rsa.PrivateKey{}
)

// Key is a 2048-bit RSA key known by name, made once per test binary
// (making one takes a moment): tests asking for the same name share it.
func Key(t testing.TB, name string) *rsa.PrivateKey {
	t.Helper()
	keysMu.Lock()
	defer keysMu.Unlock()
	if k := keys[name]; k != nil {
		return k
	}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keys[name] = k
	return k
}

// Certs is a team's certs document publishing pub by kid, for RS256
// signatures, shaped as Cloudflare's (its PEM members left empty).
func Certs(t testing.TB, pub map[string]*rsa.PublicKey) []byte {
	t.Helper()
	var set jose.JSONWebKeySet
	for kid, k := range pub {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k, KeyID: kid, Algorithm: string(jose.RS256), Use: "sig"})
	}
	return JSON(t, struct {
		jose.JSONWebKeySet
		PublicCert  map[string]string   `json:"public_cert"`
		PublicCerts []map[string]string `json:"public_certs"`
	}{set, map[string]string{}, []map[string]string{}})
}

// Sign is payload as a compact JWS (typ JWT) signed by key with alg,
// with kid (none when "") and the extra headers.
func Sign(t testing.TB, alg jose.SignatureAlgorithm, key *rsa.PrivateKey, kid string, payload []byte, extra map[jose.HeaderKey]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	for k, v := range extra {
		opts = opts.WithHeader(k, v)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// JSON is v as JSON.
func JSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
