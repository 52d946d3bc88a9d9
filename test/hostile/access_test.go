package hostile

// Cloudflare Access identity. A protected rule hands the backend the
// identity of the token it verified, in headers the backend trusts; a
// client on any way in, trusted listener or not, must not add to them or
// replace them, in any spelling (case, '_' for '-', HTTP/2's lower case),
// and must not get through without a token Access signed, or with two
// tokens of which the backend could read the other.

import (
	"crypto/rsa"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/internal/testaccess"
)

const (
	hostileTeam = "hostile.cloudflareaccess.com"
	hostileAud  = "hostile-app"
)

func TestAccessIdentityCannotBeForged(t *testing.T) {
	key := testaccess.Key(t, "hostile")
	certs := testaccess.Certs(t, map[string]*rsa.PublicKey{"k1": &key.PublicKey})
	be := newBackend(t)
	e := newEnv(t, be.addr, withAccessTeams(proxycfg.AccessTeam{Domain: hostileTeam, Keys: string(certs)}),
		withRule(func(r *proxycfg.Rule) {
			r.Access = &proxycfg.Access{Team: hostileTeam, Audiences: []string{hostileAud},
				EmailHeader: "X-Auth-Email", GroupsHeader: "X-Auth-Groups"}
		}))
	token := signAccess(t, key, "k1")
	forged := []hf{{"X-Auth-Email", spoofed}, {"X_Auth_Email", spoofed}, {"x-auth-EMAIL", spoofed}, {"X-Auth-Groups", "admins"}}

	e.each(func(t *testing.T, p path) {
		n := len(be.requests())
		sendFields(t, p, append([]hf{{"Cf-Access-Jwt-Assertion", token}}, forged...))
		got := be.since(n)
		if len(got) != 1 {
			t.Fatalf("backend got %d requests, want 1", len(got))
		}
		expectOnce(t, got[0], "x-auth-email", "ana@example.com")
		expectOnce(t, got[0], "x-auth-groups", "eng")

		for _, refused := range []struct {
			name   string
			fields []hf
		}{
			{"no token, forged identity", forged},
			{"two tokens", []hf{{"Cf-Access-Jwt-Assertion", token}, {"Cf-Access-Jwt-Assertion", "x.y.z"}}},
			{"a token with its signature cut", []hf{{"Cf-Access-Jwt-Assertion", token[:strings.LastIndexByte(token, '.')+1]}}},
		} {
			n := len(be.requests())
			if s, _ := sendGET(t, p, refused.fields); s != 403 {
				t.Errorf("%s: %d, want 403", refused.name, s)
			}
			if len(be.since(n)) != 0 {
				t.Errorf("%s: the backend was reached", refused.name)
			}
		}
	})
}

// signAccess is a user's token of the hostile team, valid for an hour.
func signAccess(t *testing.T, key *rsa.PrivateKey, kid string) string {
	t.Helper()
	now := time.Now()
	claims := testaccess.JSON(t, map[string]any{"aud": []string{hostileAud}, "iss": "https://" + hostileTeam,
		"email": "ana@example.com", "sub": "u1", "groups": []string{"eng"},
		"iat": now.Add(-time.Minute).Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix()})
	return testaccess.Sign(t, jose.RS256, key, kid, claims, nil)
}
