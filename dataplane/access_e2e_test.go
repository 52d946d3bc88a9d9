package dataplane

// End-to-end tests of Cloudflare Access on protected rules: real clients,
// the proxy's listeners, loopback backends, and tokens signed in the test
// with a team key the config publishes.

import (
	"bytes"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testaccess"
)

const (
	e2eTeam = "e2e.cloudflareaccess.com"
	e2eAud  = "e2e-app"
	e2eKid  = "e2e-kid"
)

func accessTeamKey(t testing.TB) *rsa.PrivateKey { return testaccess.Key(t, "e2e") }

// accessTeam is the config's Access team publishing key under e2eKid.
func accessTeam(t testing.TB, key *rsa.PublicKey) proxycfg.AccessTeam {
	t.Helper()
	return proxycfg.AccessTeam{Domain: e2eTeam, Keys: string(testaccess.Certs(t, map[string]*rsa.PublicKey{e2eKid: key}))}
}

// accessJWT is a token of the team for claims, signed by key.
func accessJWT(t testing.TB, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	return testaccess.Sign(t, jose.RS256, key, e2eKid, testaccess.JSON(t, claims), nil)
}

// accessProxy is a proxy whose one rule, every request to backend, has
// access (nil: none), with the team publishing key.
func accessProxy(t testing.TB, backend string, key *rsa.PublicKey, access *proxycfg.Access) *Proxy {
	t.Helper()
	rule := to("a")
	rule.Access = access
	cfg := config([]proxycfg.Route{route("r", rule)}, cluster("a", backend))
	cfg.AccessTeams = []proxycfg.AccessTeam{accessTeam(t, key)}
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := p.Load(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// accessClaims are a user's claims valid now, changed by edits.
func accessClaims(edits ...func(map[string]any)) map[string]any {
	now := time.Now()
	c := map[string]any{"aud": []string{e2eAud}, "iss": "https://" + e2eTeam, "email": "ana@example.com",
		"sub": "user-1", "groups": []string{"eng", "oncall"}, "type": "app",
		"iat": now.Add(-time.Minute).Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix()}
	for _, e := range edits {
		e(c)
	}
	return c
}

// accessConfig protects the route "private" (every path of host
// private.example) and leaves "public" open, both to backend.
func accessConfig(t *testing.T, backend string, team proxycfg.AccessTeam) *proxycfg.Config {
	t.Helper()
	private := to("app")
	private.Access = &proxycfg.Access{Team: e2eTeam, Audiences: []string{e2eAud},
		EmailHeader: "X-Auth-Email", SubjectHeader: "X-Auth-Subject", GroupsHeader: "X-Auth-Groups"}
	pr, pu := route("private", private), route("public", to("app"))
	pr.Hostnames, pu.Hostnames = []string{"private.example"}, []string{"public.example"}
	cfg := config([]proxycfg.Route{pr, pu}, cluster("app", backend))
	cfg.AccessTeams = []proxycfg.AccessTeam{team}
	return cfg
}

// A protected rule lets through only a valid token, from the header or
// the cookie, and hands the backend the token's identity in place of any
// the client wrote; every refusal is a 403 that never reaches the
// backend, counted by its reason. An open rule beside it needs nothing.
func TestAccessProtectsRule(t *testing.T) {
	key := accessTeamKey(t)
	var reached atomic.Int64
	backend := startBackend(t, func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		echo("app")(w, r)
	})
	e := newTestEnv(t, accessConfig(t, backend, accessTeam(t, &key.PublicKey)))
	valid := accessJWT(t, key, accessClaims())

	res, body := e.get("private.example", "/", "Cf-Access-Jwt-Assertion", valid,
		"X-Auth-Email", "mallory@example.com", "X_Auth_Email", "mallory@example.com", "X-Auth-Groups", "admins")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("valid token: %d %s", res.StatusCode, body)
	}
	if got := feValues(body, "X-Auth-Email"); len(got) != 1 || got[0] != "ana@example.com" {
		t.Errorf("X-Auth-Email %q, want the token's alone", got)
	}
	if got := feValues(body, "X_auth_email"); len(got) != 0 {
		t.Errorf("the client's X_Auth_Email reached the backend: %q", got)
	}
	if got := echoed(body, "X-Auth-Subject"); got != "user-1" {
		t.Errorf("X-Auth-Subject %q", got)
	}
	if got := feValues(body, "X-Auth-Groups"); len(got) != 1 || got[0] != "eng, oncall" {
		t.Errorf("X-Auth-Groups %q, want the token's", got)
	}

	if res, body := e.get("private.example", "/", "Cookie", "theme=dark; CF_Authorization="+valid+"; other=1"); res.StatusCode != http.StatusOK {
		t.Errorf("valid token in the cookie: %d %s", res.StatusCode, body)
	}
	if res, _ := e.get("public.example", "/", "X-Auth-Email", "anyone@example.com"); res.StatusCode != http.StatusOK {
		t.Errorf("open rule: %d", res.StatusCode)
	}

	before := reached.Load()
	none := func(map[string]any) {}
	for _, tc := range []struct {
		name   string
		token  string
		reason cfaccess.Reason
	}{
		{"no token", "", cfaccess.ReasonMissing},
		{"expired", accessJWT(t, key, accessClaims(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })), cfaccess.ReasonExpired},
		{"another application", accessJWT(t, key, accessClaims(func(c map[string]any) { c["aud"] = []string{"other"} })), cfaccess.ReasonWrongAudience},
		{"another team", accessJWT(t, key, accessClaims(func(c map[string]any) { c["iss"] = "https://evil.cloudflareaccess.com" })), cfaccess.ReasonWrongIssuer},
		{"alg none", unsigned(accessClaims(none)), cfaccess.ReasonAlgorithm},
		{"tampered", tamper(valid), cfaccess.ReasonBadSignature},
		{"garbage", "not-a-token", cfaccess.ReasonMalformed},
		{"two tokens, the first valid", valid + "\x00second", cfaccess.ReasonMalformed},
	} {
		was := e.p.stats.Access[tc.reason].Load()
		hdr := []string{"X-Auth-Email", "ana@example.com"}
		if first, second, two := strings.Cut(tc.token, "\x00"); two {
			hdr = append(hdr, "Cf-Access-Jwt-Assertion", first, "Cf-Access-Jwt-Assertion", second)
		} else if tc.token != "" {
			hdr = append(hdr, "Cf-Access-Jwt-Assertion", tc.token)
		}
		res, body := e.get("private.example", "/", hdr...)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(body, "Cloudflare Access") {
			t.Errorf("%s: %d %q, want 403", tc.name, res.StatusCode, body)
		}
		if e.p.stats.Access[tc.reason].Load() != was+1 {
			t.Errorf("%s: not counted as %s", tc.name, tc.reason)
		}
	}
	if n := reached.Load() - before; n != 0 {
		t.Errorf("the backend was reached %d times by refused requests", n)
	}
}

// A gRPC client without a token gets PERMISSION_DENIED, and an HTTP/2
// backend gets the identity like an HTTP/1.1 one.
func TestAccessGRPCAndH2Backend(t *testing.T) {
	key := accessTeamKey(t)
	backend := h2cBackend(t, echo("h2"))
	cfg := accessConfig(t, backend, accessTeam(t, &key.PublicKey))
	cfg.Clusters[0].Protocol = proxycfg.ProtoH2C
	e := newTestEnv(t, cfg)

	req, _ := http.NewRequest("POST", "http://"+e.bound.Plain+"/pkg.Svc/Call", strings.NewReader("\x00\x00\x00\x00\x00"))
	req.Host = "private.example"
	req.Header.Set("Content-Type", "application/grpc")
	res, _ := e.do(e.h2c, req)
	if res.StatusCode != http.StatusOK || res.Header.Get("Grpc-Status") != "7" {
		t.Errorf("gRPC without a token: %d, grpc-status %q; want 200 with 7 (PERMISSION_DENIED)", res.StatusCode, res.Header.Get("Grpc-Status"))
	}

	res, body := e.get("private.example", "/", "Cf-Access-Jwt-Assertion", accessJWT(t, key, accessClaims()), "X-Auth-Subject", "forged")
	if res.StatusCode != http.StatusOK || echoed(body, "X-Auth-Subject") != "user-1" || echoed(body, "X-Auth-Email") != "ana@example.com" {
		t.Errorf("through an HTTP/2 backend: %d\n%s", res.StatusCode, body)
	}
}

// Keys that do not parse fail the team's rules closed, unless the proxy
// served good keys for the team before: it keeps those.
func TestAccessKeysFailClosed(t *testing.T) {
	key := accessTeamKey(t)
	backend := startBackend(t, echo("app"))
	token := accessJWT(t, key, accessClaims())
	broken := proxycfg.AccessTeam{Domain: e2eTeam, Keys: `{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"` + e2eKid + `"}]}`}

	e := newTestEnv(t, accessConfig(t, backend, broken))
	if res, _ := e.get("private.example", "/", "Cf-Access-Jwt-Assertion", token); res.StatusCode != http.StatusForbidden {
		t.Errorf("no usable key ever: %d, want 403", res.StatusCode)
	}
	if e.p.stats.Access[cfaccess.ReasonNoKeys].Load() != 1 {
		t.Error("not counted as no_keys")
	}

	good := accessConfig(t, backend, accessTeam(t, &key.PublicKey))
	if err := e.p.Load(good); err != nil {
		t.Fatal(err)
	}
	bad := accessConfig(t, backend, broken)
	bad.Version = "with broken keys"
	if err := e.p.Load(bad); err != nil {
		t.Fatalf("a config whose keys do not parse is refused whole: %v", err)
	}
	if e.p.Version() != "with broken keys" {
		t.Fatal("the config with broken keys is not served")
	}
	if res, body := e.get("private.example", "/", "Cf-Access-Jwt-Assertion", token); res.StatusCode != http.StatusOK {
		t.Errorf("the last good keys were not kept: %d %s", res.StatusCode, body)
	}
}

// What a protected rule's config cannot be is refused, naming it.
func TestAccessConfigRefused(t *testing.T) {
	key := accessTeamKey(t)
	for _, tc := range []struct {
		name string
		edit func(*proxycfg.Config)
		want string
	}{
		{"a team not in the config", func(c *proxycfg.Config) { c.AccessTeams = nil }, `team "e2e.cloudflareaccess.com" is not among`},
		{"no audience", func(c *proxycfg.Config) { c.Routes[0].Rules[0].Access.Audiences = nil }, "audiences is empty"},
		{"a header name that is not one", func(c *proxycfg.Config) { c.Routes[0].Rules[0].Access.EmailHeader = "X Email" }, "is not a header name"},
		{"a hop-by-hop header", func(c *proxycfg.Config) { c.Routes[0].Rules[0].Access.SubjectHeader = "connection" }, "does not let"},
		{"one header twice", func(c *proxycfg.Config) { c.Routes[0].Rules[0].Access.GroupsHeader = "x-auth-email" }, "is also emailHeader"},
		{"an identity header a filter sets", func(c *proxycfg.Config) {
			c.Routes[0].Rules[0].Filters = []proxycfg.Filter{{Type: proxycfg.FilterRequestHeaderModifier,
				RequestHeaderModifier: &proxycfg.HeaderModifier{Set: []proxycfg.Header{{Name: "X-Auth-Email", Value: "x"}}}}}
		}, "also set or removed by a request header filter"},
		{"two teams of one domain", func(c *proxycfg.Config) { c.AccessTeams = append(c.AccessTeams, c.AccessTeams[0]) }, "defined twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := accessConfig(t, "127.0.0.1:1", accessTeam(t, &key.PublicKey))
			tc.edit(cfg)
			err := New(Options{}).Load(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// unsigned is claims as an alg-none token.
func unsigned(claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": "none", "kid": e2eKid})
	c, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c) + "."
}

// tamper changes the email in a token's payload, keeping its signature.
func tamper(token string) string {
	parts := strings.Split(token, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	payload = []byte(strings.Replace(string(payload), "ana@", "eve@", 1))
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
}

// withHeader is the request head req with one more field before its end.
func withHeader(req []byte, name, value string) []byte {
	head := bytes.TrimSuffix(req, []byte("\r\n"))
	return append(append(slices.Clone(head), name+": "+value+"\r\n"...), "\r\n"...)
}
