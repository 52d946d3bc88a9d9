package cfaccess

import (
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/tunnelgate/tunnelgate/test/testaccess"
)

// The test team, its application and its clock.
const (
	testTeam = "team.cloudflareaccess.com"
	testIss  = "https://" + testTeam
	testAud  = "4714c1358e65fe4b408ad6d432a5f878f08194bdb4752441fd56faefa9b2b6f2"
	testKid  = "kid-current"
)

var testNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// testKeys are the team's signing key and a stranger's.
func testKeys(t testing.TB) (team, other *rsa.PrivateKey) {
	t.Helper()
	return testaccess.Key(t, "team"), testaccess.Key(t, "stranger")
}

// certsDoc is a team's certs document publishing the keys, by kid.
func certsDoc(t testing.TB, keys map[string]*rsa.PublicKey) []byte {
	t.Helper()
	return testaccess.Certs(t, keys)
}

// teamKeys parses the team's published keys: testKid alone.
func teamKeys(t testing.TB) *Keys {
	t.Helper()
	team, _ := testKeys(t)
	k, skipped, err := ParseKeys(certsDoc(t, map[string]*rsa.PublicKey{testKid: &team.PublicKey}))
	if err != nil || len(skipped) > 0 {
		t.Fatalf("ParseKeys: %v (skipped %v)", err, skipped)
	}
	return k
}

// claims are a valid user token's claims at testNow, to be changed.
func claims() map[string]any {
	return map[string]any{
		"aud": []string{testAud}, "iss": testIss, "email": "Ana@Example.com", "sub": "7335d417-61da-459d-899c-0a01c76a2f94",
		"type": "app", "identity_nonce": "6ei69kawdKzMIAPF", "country": "PT",
		"iat": testNow.Add(-time.Minute).Unix(), "nbf": testNow.Add(-time.Minute).Unix(), "exp": testNow.Add(23 * time.Hour).Unix(),
	}
}

// sign is a compact RS256 JWS of payload by key, with headers.
func sign(t testing.TB, key *rsa.PrivateKey, kid string, payload map[string]any, extra map[jose.HeaderKey]any) string {
	t.Helper()
	return testaccess.Sign(t, jose.RS256, key, kid, testaccess.JSON(t, payload), extra)
}

// handMade is a compact JWS of header and payload with the given
// signature bytes, for tokens no library would make.
func handMade(t testing.TB, header, payload map[string]any, sig func(signingInput string) []byte) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	in := enc(header) + "." + enc(payload)
	return in + "." + base64.RawURLEncoding.EncodeToString(sig(in))
}

// hs256WithPublicKey is the key-confusion forgery: HMAC-SHA256 keyed with
// the team's public key, as a verifier that let the token choose HS256
// would check it.
func hs256WithPublicKey(t testing.TB, pub *rsa.PublicKey, payload map[string]any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	return handMade(t, map[string]any{"alg": "HS256", "kid": testKid, "typ": "JWT"}, payload, func(in string) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(in))
		return m.Sum(nil)
	})
}
