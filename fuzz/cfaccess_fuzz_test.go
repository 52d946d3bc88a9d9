package fuzz

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
	"github.com/tunnelgate/tunnelgate/test/testaccess"
)

// The Access team of FuzzAccessToken: its key (a test key, committed so
// the seed corpus stays signed by it), kid, domain and application.
const (
	accessKid  = "fuzz-kid"
	accessTeam = "fuzz.cloudflareaccess.com"
	accessAud  = "fuzz-aud"
)

var accessNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// FuzzAccessToken feeds the Access token verifier whatever a client may
// send as Cf-Access-Jwt-Assertion. It never panics, and it passes nothing
// an independent check refuses: a compact JWS of three strict base64url
// parts whose header says RS256 with the team's kid and whose signature
// crypto/rsa verifies with the team's key; what passes carries the one
// valid seed's identity. A verifier that kept the token answers as one
// that sees it first.
//
// Seeds: the valid token; it with alg none, with HS256 keyed by the
// public key, with another kid, with its payload changed; an expired
// one; truncations; garbage.
func FuzzAccessToken(f *testing.F) {
	key := accessKey(f)
	keys, _, err := cfaccess.ParseKeys(accessCerts(f, &key.PublicKey))
	if err != nil {
		f.Fatal(err)
	}
	policy := cfaccess.NewPolicy(accessTeam, []string{accessAud})
	valid := accessToken(f, key, accessKid, accessClaims(0))
	parts := strings.Split(valid, ".")
	f.Add(valid)
	f.Add(b64(`{"alg":"none","kid":"`+accessKid+`"}`) + "." + parts[1] + ".")
	f.Add(b64(`{"alg":"HS256","kid":"`+accessKid+`"}`) + "." + parts[1] + "." + parts[2])
	f.Add(accessToken(f, key, "another-kid", accessClaims(0)))
	f.Add(parts[0] + "." + b64(strings.Replace(mustJSON(f, accessClaims(0)), "ana@", "eve@", 1)) + "." + parts[2])
	f.Add(accessToken(f, key, accessKid, accessClaims(-48*time.Hour)))
	f.Add(valid[:len(valid)/2])
	f.Add(parts[0] + "." + parts[1])
	f.Add("..")
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, token string) {
		fresh := cfaccess.NewVerifier(0, 0)
		id, r := fresh.Verify(token, keys, policy, accessNow)
		if again, r2 := fresh.Verify(token, keys, policy, accessNow); r2 != r || again != id {
			t.Fatalf("kept: %s, first: %s", r2, r)
		}
		if r != cfaccess.ReasonNone {
			return
		}
		if !independentlySigned(token, &key.PublicKey) {
			t.Fatalf("passed, though no RS256 signature of the team's key: %q", token)
		}
		if id.Email != "ana@example.com" || id.Subject != "user-1" {
			t.Fatalf("passed with identity %+v, not the valid token's", id)
		}
	})
}

// independentlySigned is the reference check: three strict base64url
// parts, a JSON header with alg RS256 and the team's kid, and a PKCS #1
// v1.5 SHA-256 signature of the first two parts by pub.
func independentlySigned(token string, pub *rsa.PublicKey) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	dec := base64.RawURLEncoding.Strict()
	header, err := dec.DecodeString(parts[0])
	if err != nil {
		return false
	}
	var h struct{ Alg, Kid string }
	if json.Unmarshal(header, &h) != nil || h.Alg != "RS256" || h.Kid != accessKid {
		return false
	}
	if _, err := dec.DecodeString(parts[1]); err != nil {
		return false
	}
	sig, err := dec.DecodeString(parts[2])
	if err != nil {
		return false
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	return rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) == nil
}

func accessKey(f *testing.F) *rsa.PrivateKey {
	b, err := os.ReadFile("testdata/access-team-key.pem")
	if err != nil {
		f.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		f.Fatal("testdata/access-team-key.pem: no PEM block")
	}
	k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		f.Fatal(err)
	}
	return k
}

func accessCerts(f *testing.F, pub *rsa.PublicKey) []byte {
	return testaccess.Certs(f, map[string]*rsa.PublicKey{accessKid: pub})
}

// accessClaims are a user's token claims, issued at accessNow+shift.
func accessClaims(shift time.Duration) map[string]any {
	at := accessNow.Add(shift)
	return map[string]any{"aud": []string{accessAud}, "iss": "https://" + accessTeam, "email": "ana@example.com", "sub": "user-1",
		"type": "app", "iat": at.Unix(), "nbf": at.Unix(), "exp": at.Add(time.Hour).Unix()}
}

func accessToken(f *testing.F, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	return testaccess.Sign(f, jose.RS256, key, kid, testaccess.JSON(f, claims), nil)
}

func mustJSON(f *testing.F, v any) string { return string(testaccess.JSON(f, v)) }

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
