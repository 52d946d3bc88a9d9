package hostile

// Identity belongs to the proxy. A backend behind Cloudflare Access reads
// who the visitor is from headers (Cf-Access-Authenticated-User-Email,
// the identity headers an AccessPolicy names) and from the token itself
// (Cf-Access-Jwt-Assertion, the CF_Authorization cookie). A client that
// could set any of them would be whoever it likes, on an open rule beside
// a protected one as much as on the protected one (a backend serves both,
// and reads its headers on each). So on every rule and every listener,
// trusted or not, a client's copies are dropped in any spelling, and only
// a protected rule's verified values reach the backend: one token, in the
// header, and in exactly one cookie when the client sent the cookie.

import (
	"crypto/rsa"
	"slices"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testaccess"
)

func TestIdentityBelongsToTheProxy(t *testing.T) {
	key := testaccess.Key(t, "hostile")
	certs := testaccess.Certs(t, map[string]*rsa.PublicKey{"k1": &key.PublicKey})
	access, teams := translatedAccess(t, string(certs))
	be := newBackend(t)
	rules := []proxycfg.Rule{
		{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/admin"}}}, Access: access},
		{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}},
	}
	e := newEnv(t, be.addr, withAccessTeams(teams...), withRules(rules...))
	token, other := signAccess(t, key, "k1"), signAccess(t, testaccess.Key(t, "hostile-other"), "k1")
	h := v1alpha1.DefaultAccessHeaders
	// What a client forges: every identity header in three spellings, a
	// token it has (valid, or not) in the header's twin, and cookies.
	var forged []hf
	for _, n := range []string{h.Email, h.Subject, h.Groups, h.ServiceToken} {
		forged = append(forged, hf{n, spoofed}, hf{strings.ReplaceAll(n, "-", "_"), spoofed}, hf{strings.ToUpper(n), spoofed})
	}
	forged = append(forged, hf{"Cf_Access_Jwt_Assertion", other})
	identityNames := []string{normName(h.Email), normName(h.Subject), normName(h.Groups), normName(h.ServiceToken), "cf-access-jwt-assertion"}

	e.each(func(t *testing.T, p path) {
		send := func(t *testing.T, target string, fields ...hf) rawRequest {
			t.Helper()
			n := len(be.requests())
			if s, body := getAs(t, p, target, fields...); s != 200 {
				t.Fatalf("GET %s: %d %q, want 200", target, s, truncated(body))
			}
			got := be.since(n)
			if len(got) != 1 {
				t.Fatalf("GET %s: the backend got %d requests, want 1", target, len(got))
			}
			return got[0]
		}

		t.Run("open rule", func(t *testing.T) {
			fields := append(slices.Clone(forged), hf{"Cf-Access-Jwt-Assertion", token},
				hf{"cookie", "a=1; CF_Authorization=" + token + "; cf_authorization=" + other + "; b=2"})
			r := send(t, "/x", fields...)
			for _, n := range identityNames {
				if v := r.values(n); len(v) > 0 {
					t.Errorf("the backend got %s %q on an open rule", n, v)
				}
			}
			expectOnce(t, r, "cookie", "a=1; b=2")
		})

		t.Run("protected rule", func(t *testing.T) {
			// The token in the header, and in a cookie with a forged one
			// after it, which Python's http.cookies would read.
			fields := append(slices.Clone(forged), hf{"Cf-Access-Jwt-Assertion", token},
				hf{"cookie", "a=1; CF_Authorization=" + token + "; CF_Authorization=" + other})
			r := send(t, "/admin/x", fields...)
			expectOnce(t, r, "cf-access-jwt-assertion", token)
			expectOnce(t, r, normName(h.Email), "ana@example.com")
			expectOnce(t, r, normName(h.Subject), "u1")
			expectOnce(t, r, normName(h.Groups), "eng")
			if v := r.values(normName(h.ServiceToken)); len(v) > 0 {
				t.Errorf("the backend got %s %q, which the client sent", h.ServiceToken, v)
			}
			expectOnce(t, r, "cookie", "a=1; CF_Authorization="+token)

			// The token in a cookie alone: it goes on in the header too.
			r = send(t, "/admin/y", hf{"cookie", "CF_Authorization=" + token + "; cf_AUTHORIZATION=" + other})
			expectOnce(t, r, "cf-access-jwt-assertion", token)
			expectOnce(t, r, "cookie", "CF_Authorization="+token)

			// A cookie the proxy cannot verify first is no way in.
			n := len(be.requests())
			if s, _ := getAs(t, p, "/admin/z", hf{"cookie", "CF_Authorization=" + other + "; CF_Authorization=" + token}); s != 403 {
				t.Errorf("an unverifiable first cookie: %d, want 403", s)
			}
			if len(be.since(n)) != 0 {
				t.Error("an unverifiable first cookie reached the backend")
			}
		})
	})
}
