package cfaccess

import (
	"crypto/rsa"
	"encoding/base64"
	"maps"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/tunnelgate/tunnelgate/test/testaccess"
)

// Only the valid token passes; every forgery and every stale, foreign or
// broken token is refused with the reason a metric counts.
func TestVerifyRefusesAllButTheValid(t *testing.T) {
	team, other := testKeys(t)
	keys := teamKeys(t)
	with := func(change func(map[string]any)) map[string]any {
		c := claims()
		change(c)
		return c
	}
	valid := sign(t, team, testKid, claims(), nil)
	parts := strings.Split(valid, ".")
	tampered := with(func(c map[string]any) { c["email"] = "mallory@example.com" })
	for _, tc := range []struct {
		name  string
		token string
		want  Reason
	}{
		{"valid", valid, ReasonNone},
		{"none", "", ReasonMissing},
		{"expired", sign(t, team, testKid, with(func(c map[string]any) { c["exp"] = testNow.Add(-time.Minute).Unix() }), nil), ReasonExpired},
		{"without exp", sign(t, team, testKid, with(func(c map[string]any) { delete(c, "exp") }), nil), ReasonExpired},
		{"not yet valid", sign(t, team, testKid, with(func(c map[string]any) { c["nbf"] = testNow.Add(time.Minute).Unix() }), nil), ReasonNotYetValid},
		{"issued in the future", sign(t, team, testKid, with(func(c map[string]any) { c["iat"] = testNow.Add(time.Hour).Unix() }), nil), ReasonNotYetValid},
		{"wrong audience", sign(t, team, testKid, with(func(c map[string]any) { c["aud"] = []string{"another-app"} }), nil), ReasonWrongAudience},
		{"audience as a string", sign(t, team, testKid, with(func(c map[string]any) { c["aud"] = testAud }), nil), ReasonNone},
		{"wrong issuer", sign(t, team, testKid, with(func(c map[string]any) { c["iss"] = "https://evil.cloudflareaccess.com" }), nil), ReasonWrongIssuer},
		{"unknown kid", sign(t, team, "kid-retired", claims(), nil), ReasonUnknownKey},
		{"no kid", sign(t, team, "", claims(), nil), ReasonUnknownKey},
		{"a stranger's key under the team's kid", sign(t, other, testKid, claims(), nil), ReasonBadSignature},
		{"a stranger's key carried in the token", sign(t, other, "kid-evil", claims(),
			map[jose.HeaderKey]any{"jwk": jose.JSONWebKey{Key: &other.PublicKey, KeyID: "kid-evil"}}), ReasonUnknownKey},
		{"tampered payload", parts[0] + "." + strings.Split(sign(t, other, testKid, tampered, nil), ".")[1] + "." + parts[2], ReasonBadSignature},
		{"signature of another token", parts[0] + "." + parts[1] + "." + strings.Split(sign(t, team, testKid, tampered, nil), ".")[2], ReasonBadSignature},
		{"alg none", handMade(t, map[string]any{"alg": "none", "kid": testKid}, claims(), func(string) []byte { return nil }), ReasonAlgorithm},
		{"alg none without signature", encodedHeader(t, `{"alg":"none","kid":"`+testKid+`"}`) + "." + parts[1] + ".", ReasonAlgorithm},
		{"HS256 keyed with the public key", hs256WithPublicKey(t, &team.PublicKey, claims()), ReasonAlgorithm},
		{"RS512", signWith(t, jose.RS512, team, claims()), ReasonAlgorithm},
		{"PS256", signWith(t, jose.PS256, team, claims()), ReasonAlgorithm},
		{"oversized", valid + "." + strings.Repeat("A", MaxTokenBytes), ReasonTooLarge},
		{"two segments", parts[0] + "." + parts[1], ReasonMalformed},
		{"four segments", valid + ".x", ReasonMalformed},
		{"not base64", "!!." + parts[1] + "." + parts[2], ReasonMalformed},
		{"JSON serialization", `{"payload":"` + parts[1] + `","protected":"` + parts[0] + `","signature":"` + parts[2] + `"}`, ReasonMalformed},
		{"claims not JSON", handMadeSigned(t, team, "not json"), ReasonMalformed},
		{"a control character in the email, which a header could not carry",
			sign(t, team, testKid, with(func(c map[string]any) { c["email"] = "ana@example.com\r\nX-Admin: 1" }), nil), ReasonMalformed},
		{"exp not a number", sign(t, team, testKid, with(func(c map[string]any) { c["exp"] = "tomorrow" }), nil), ReasonMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := NewVerifier(0, 0)
			id, got := v.Verify(tc.token, keys, NewPolicy(testTeam, []string{testAud}), testNow)
			if got != tc.want {
				t.Fatalf("reason %s, want %s", got, tc.want)
			}
			if (id != nil) != (got == ReasonNone) {
				t.Fatalf("identity %+v with reason %s", id, got)
			}
			if id != nil && (id.Email != "Ana@Example.com" || id.Subject == "") {
				t.Errorf("identity %+v: want the token's email and subject", id)
			}
		})
	}
}

// The clock may be off by the leeway either way, no more.
func TestVerifyLeeway(t *testing.T) {
	team, _ := testKeys(t)
	keys, p := teamKeys(t), NewPolicy(testTeam, []string{testAud})
	c := claims()
	c["nbf"], c["exp"] = testNow.Unix(), testNow.Add(time.Hour).Unix()
	token := sign(t, team, testKid, c, nil)
	for _, tc := range []struct {
		at   time.Time
		want Reason
	}{
		{testNow.Add(-DefaultLeeway + time.Second), ReasonNone},
		{testNow.Add(-DefaultLeeway - time.Second), ReasonNotYetValid},
		{testNow.Add(time.Hour + DefaultLeeway - time.Second), ReasonNone},
		{testNow.Add(time.Hour + DefaultLeeway), ReasonExpired},
	} {
		if _, got := NewVerifier(0, 0).Verify(token, keys, p, tc.at); got != tc.want {
			t.Errorf("at %s: %s, want %s", tc.at.Sub(testNow), got, tc.want)
		}
	}
}

// Without a usable key nothing passes.
func TestVerifyWithoutKeys(t *testing.T) {
	team, _ := testKeys(t)
	token := sign(t, team, testKid, claims(), nil)
	if _, got := NewVerifier(0, 0).Verify(token, nil, NewPolicy(testTeam, []string{testAud}), testNow); got != ReasonNoKeys {
		t.Errorf("no keys: %s, want %s", got, ReasonNoKeys)
	}
}

// A policy naming who may pass admits a token matching one entry of one
// list, and refuses the rest as not_allowed.
func TestVerifyPolicyRequirements(t *testing.T) {
	team, _ := testKeys(t)
	keys := teamKeys(t)
	user := sign(t, team, testKid, claims(), nil)
	c := claims()
	c["groups"] = []string{"eng", "oncall"}
	grouped := sign(t, team, testKid, c, nil)
	c = claims()
	c["custom"] = map[string]any{"groups": "ops"}
	customGroup := sign(t, team, testKid, c, nil)
	c = claims()
	delete(c, "email")
	c["sub"], c["common_name"] = "", "88bf3b6d86161464f6509f7219099e57.access"
	service := sign(t, team, testKid, c, nil)
	for _, tc := range []struct {
		name                            string
		emails, domains, groups, tokens []string
		token                           string
		want                            Reason
	}{
		{"no requirement", nil, nil, nil, nil, user, ReasonNone},
		{"email, any case", []string{"ana@EXAMPLE.com"}, nil, nil, nil, user, ReasonNone},
		{"another email", []string{"bo@example.com"}, nil, nil, nil, user, ReasonNotAllowed},
		{"email domain", nil, []string{"@example.com"}, nil, nil, user, ReasonNone},
		{"a parent domain is not the domain", nil, []string{"com"}, nil, nil, user, ReasonNotAllowed},
		{"group", nil, nil, []string{"oncall"}, nil, grouped, ReasonNone},
		{"group among custom claims", nil, nil, []string{"ops"}, nil, customGroup, ReasonNone},
		{"group missing", nil, nil, []string{"admins"}, nil, grouped, ReasonNotAllowed},
		{"service token", nil, nil, nil, []string{"88bf3b6d86161464f6509f7219099e57.access"}, service, ReasonNone},
		{"a user where a service token is required", nil, nil, nil, []string{"88bf3b6d86161464f6509f7219099e57.access"}, user, ReasonNotAllowed},
		{"a service token where users are", []string{"ana@example.com"}, []string{"example.com"}, nil, nil, service, ReasonNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPolicy("https://"+testTeam+"/", []string{"another-app", testAud})
			p.Require(tc.emails, tc.domains, tc.groups, tc.tokens)
			if _, got := NewVerifier(0, 0).Verify(tc.token, keys, p, testNow); got != tc.want {
				t.Errorf("%s, want %s", got, tc.want)
			}
		})
	}
}

// A kept token is checked again on every request: its claims against the
// request's policy and clock, and its key against the team's keys now. A
// key withdrawn refuses what it signed; the same keys published again
// keep the cache.
func TestVerifyCache(t *testing.T) {
	team, _ := testKeys(t)
	keys, p := teamKeys(t), NewPolicy(testTeam, []string{testAud})
	v := NewVerifier(0, 0)
	token := sign(t, team, testKid, claims(), nil)
	first, r := v.Verify(token, keys, p, testNow)
	if r != ReasonNone || v.cache.len() != 1 {
		t.Fatalf("first: %s, %d kept", r, v.cache.len())
	}
	again, _ := v.Verify(token, teamKeys(t), p, testNow)
	if again != first {
		t.Error("the same keys parsed again did not keep the cached verification")
	}
	if _, r := v.Verify(token, keys, NewPolicy(testTeam, []string{"another-app"}), testNow); r != ReasonWrongAudience {
		t.Errorf("kept token, another application's policy: %s", r)
	}
	if _, r := v.Verify(token, keys, p, testNow.Add(24*time.Hour)); r != ReasonExpired {
		t.Errorf("kept token, after its expiry: %s", r)
	}
	_, other := testKeys(t)
	rotated, _, err := ParseKeys(certsDoc(t, map[string]*rsa.PublicKey{testKid: &other.PublicKey}))
	if err != nil {
		t.Fatal(err)
	}
	if _, r := v.Verify(token, rotated, p, testNow); r != ReasonBadSignature {
		t.Errorf("kept token, its kid now naming another key: %s", r)
	}
	withdrawn, _, err := ParseKeys(certsDoc(t, map[string]*rsa.PublicKey{"kid-next": &other.PublicKey}))
	if err != nil {
		t.Fatal(err)
	}
	if _, r := v.Verify(token, withdrawn, p, testNow); r != ReasonUnknownKey {
		t.Errorf("kept token, its key withdrawn: %s", r)
	}
	expired := claims()
	expired["exp"] = testNow.Add(-time.Hour).Unix()
	v2 := NewVerifier(0, 0)
	v2.Verify(sign(t, team, testKid, expired, nil), keys, p, testNow)
	if v2.cache.len() != 0 {
		t.Error("an expired token was kept")
	}
}

// The cache stays within its budget however many tokens pass.
func TestVerifyCacheBound(t *testing.T) {
	team, _ := testKeys(t)
	keys, p := teamKeys(t), NewPolicy(testTeam, []string{testAud})
	const budget = 64 << 10
	v := NewVerifier(0, budget)
	c := claims()
	for i := range 200 {
		c["identity_nonce"] = strings.Repeat("n", i)
		if _, r := v.Verify(sign(t, team, testKid, maps.Clone(c), nil), keys, p, testNow); r != ReasonNone {
			t.Fatalf("token %d: %s", i, r)
		}
		if b := v.cache.bytes.Load(); b > budget {
			t.Fatalf("after %d tokens the cache holds %d bytes, over its %d", i+1, b, budget)
		}
	}
	if n := v.cache.len(); n == 0 || n >= 200 {
		t.Errorf("%d tokens kept of 200 with a budget of %d bytes", n, budget)
	}
}

// A token found in the cache costs no allocation.
func TestAllocsVerifyCached(t *testing.T) {
	team, _ := testKeys(t)
	keys, p := teamKeys(t), NewPolicy(testTeam, []string{testAud})
	v := NewVerifier(0, 0)
	token := sign(t, team, testKid, claims(), nil)
	if _, r := v.Verify(token, keys, p, testNow); r != ReasonNone {
		t.Fatal(r)
	}
	if n := testing.AllocsPerRun(100, func() { v.Verify(token, keys, p, testNow) }); n != 0 {
		t.Errorf("%v allocations per cached verification, want 0", n)
	}
}

// encodedHeader is a JWS header, base64url-encoded as it is.
func encodedHeader(t testing.TB, header string) string {
	t.Helper()
	return base64.RawURLEncoding.EncodeToString([]byte(header))
}

// signWith is a valid token's claims signed by key with another
// algorithm than RS256, under the team's kid.
func signWith(t testing.TB, alg jose.SignatureAlgorithm, key *rsa.PrivateKey, payload map[string]any) string {
	t.Helper()
	return testaccess.Sign(t, alg, key, testKid, testaccess.JSON(t, payload), nil)
}

// handMadeSigned is payload, which need not be JSON, signed by the team
// key with RS256 under its kid.
func handMadeSigned(t testing.TB, key *rsa.PrivateKey, payload string) string {
	t.Helper()
	return testaccess.Sign(t, jose.RS256, key, testKid, []byte(payload), nil)
}
