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

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/standalone"
	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/testaccess"
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

// An AccessPolicy as a user writes it, with the default identity
// headers, translated as the controller does: the email goes in
// Cf-Access-Authenticated-User-Email, the header Cloudflare's edge sets
// and backends written for Access read. A client that reaches the proxy
// another way (a second hostname, in the cluster) must not be able to
// set it, nor the other defaults, in any spelling; a token of a key the
// team's set lacks, or for another application, gets nowhere.
func TestPolicyDrivenAccessHeadersCannotBeForged(t *testing.T) {
	key, other := testaccess.Key(t, "hostile"), testaccess.Key(t, "hostile-other")
	certs := testaccess.Certs(t, map[string]*rsa.PublicKey{"k1": &key.PublicKey})
	access, teams := translatedAccess(t, string(certs))
	be := newBackend(t)
	e := newEnv(t, be.addr, withAccessTeams(teams...), withRule(func(r *proxycfg.Rule) { r.Access = access }))
	h := v1alpha1.DefaultAccessHeaders
	token := signAccess(t, key, "k1")
	forged := []hf{{h.Email, spoofed}, {strings.ReplaceAll(h.Email, "-", "_"), spoofed}, {strings.ToLower(h.Email), spoofed},
		{h.Subject, spoofed}, {h.Groups, "admins"}, {h.ServiceToken, spoofed}, {strings.ReplaceAll(h.ServiceToken, "-", "_"), spoofed}}

	e.each(func(t *testing.T, p path) {
		n := len(be.requests())
		sendFields(t, p, append([]hf{{"Cf-Access-Jwt-Assertion", token}}, forged...))
		got := be.since(n)
		if len(got) != 1 {
			t.Fatalf("backend got %d requests, want 1", len(got))
		}
		expectOnce(t, got[0], strings.ToLower(h.Email), "ana@example.com")
		expectOnce(t, got[0], strings.ToLower(h.Subject), "u1")
		expectOnce(t, got[0], strings.ToLower(h.Groups), "eng")
		for _, name := range []string{strings.ToLower(h.ServiceToken), strings.ReplaceAll(strings.ToLower(h.Email), "-", "_"),
			strings.ReplaceAll(strings.ToLower(h.ServiceToken), "-", "_")} {
			if v := got[0].values(name); len(v) != 0 {
				t.Errorf("backend got %s %q, which the client sent", name, v)
			}
		}

		for _, refused := range []struct {
			name  string
			token string
		}{
			{"a key the team's set lacks", signAccess(t, other, "k2")},
			{"a key the team's set lacks, under a known kid", signAccess(t, other, "k1")},
		} {
			n := len(be.requests())
			if s, _ := sendGET(t, p, append([]hf{{"Cf-Access-Jwt-Assertion", refused.token}}, forged...)); s != 403 {
				t.Errorf("%s: %d, want 403", refused.name, s)
			}
			if len(be.since(n)) != 0 {
				t.Errorf("%s: the backend was reached", refused.name)
			}
		}
	})
}

// translatedAccess is what translate makes of an AccessPolicy with the
// default identity headers on a route: the Access of its rule, and the
// config's teams, the team's keys being certs.
func translatedAccess(t *testing.T, certs string) (*proxycfg.Access, []proxycfg.AccessTeam) {
	t.Helper()
	snap, err := standalone.LoadBytes("policy.yaml", []byte(fixture.ClassYAML("tunnelgate", translate.DefaultControllerName, "")+"---\n"+
		fixture.GatewayYAML("", "gw", "tunnelgate", fixture.HTTP80)+`---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: app, port: 80}]}]
---
apiVersion: tunnelgate.dev/v1alpha1
kind: AccessPolicy
metadata: {name: protect}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: app}]
  teamDomain: `+hostileTeam+`
  audiences: [`+hostileAud+`]
`))
	if err != nil {
		t.Fatal(err)
	}
	out := translate.Translate(&translate.Input{Snapshot: *snap, ControllerName: translate.DefaultControllerName, AnyEndpointAddress: true,
		AccessKeys: map[string]*translate.AccessKeys{hostileTeam: {Doc: certs}}})
	for _, r := range out.Config.Routes {
		for _, ru := range r.Rules {
			if ru.Access != nil {
				return ru.Access, out.Config.AccessTeams
			}
		}
	}
	t.Fatalf("the policy protects no rule; statuses %+v", out.AccessPolicies)
	return nil, nil
}
