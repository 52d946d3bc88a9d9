package hostile

// Spellings of a protected path. "/admin" is behind Cloudflare Access and
// "/" is open, both on one real file server (lighttpd, nginx, Python's
// http.server, Go's http.FileServer: test/realbackend) whose root holds
// admin/secret.txt. Each of those servers merges slashes, decodes "%2F",
// resolves dot segments and more before it opens a file (the table in
// test/realbackend's doc), so a proxy that routed "//admin/secret.txt" or
// "/admin%2Fsecret.txt" to the open rule would hand out the secret with no
// token. Whatever a client spells, on whatever listener and protocol, it
// must never get the secret without a token: the proxy refuses the
// spelling (400), or routes it to the rule the backend will serve it
// under, which asks for a token (403), or the backend finds no such file.

import (
	"crypto/rsa"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/realbackend"
	"github.com/tunnelgate/tunnelgate/test/testaccess"
)

const (
	secretBody = "SECRET"
	publicBody = "PUBLIC"
)

// protectedSpellings are targets a file server may read as
// /admin/secret.txt (or that some server somewhere does), none of which
// may reach it through the open rule.
var protectedSpellings = []string{
	// Repeated slashes.
	"//admin/secret.txt", "///admin/secret.txt", "/admin//secret.txt", "//admin//secret.txt",
	// Encoded slashes and backslashes, in both cases of hex.
	"/admin%2Fsecret.txt", "/admin%2fsecret.txt", "/%2Fadmin/secret.txt", "/%2fadmin%2fsecret.txt",
	"/admin%5Csecret.txt", "/admin%5csecret.txt", "/%5Cadmin/secret.txt", "/admin\\secret.txt", "/\\admin\\secret.txt",
	// Dot segments, plain, encoded and mixed with slashes.
	"/./admin/secret.txt", "/admin/./secret.txt", "/public/../admin/secret.txt", "/public/./../admin/secret.txt",
	"/%2e/admin/secret.txt", "/%2e%2e/admin/secret.txt", "/public/%2E%2E/admin/secret.txt", "/public/.%2e/admin/secret.txt",
	"/public/..%2Fadmin/secret.txt", "/public%2F..%2Fadmin%2Fsecret.txt", "/public/%2e%2e%2fadmin/secret.txt",
	"/public//..//admin/secret.txt", "/admin/x/../secret.txt", "/public.txt#/../admin/secret.txt",
	// Unreserved characters encoded.
	"/%61dmin/secret.txt", "/%61%64%6D%69%6E/secret.txt", "/a%64min/secret%2etxt",
	// NUL.
	"/admin/secret.txt%00", "/%00/../admin/secret.txt", "/admin%00/secret.txt",
	// Parameters (servlet containers drop them, and read "..;" as "..").
	"/admin;x/secret.txt", "/admin/secret.txt;x", "/public/..;/admin/secret.txt", "/;/admin/secret.txt", "/.;/admin/secret.txt",
	// Overlong UTF-8: '/' and '.' in disguise.
	"/%C0%AFadmin/secret.txt", "/public/%C0%AE%C0%AE/admin/secret.txt", "/public%C0%AF..%C0%AFadmin/secret.txt",
	"/%E0%80%AFadmin/secret.txt", "/%c0%afadmin/secret.txt",
	// Double encoding: one decode leaves an escape, which is data.
	"/admin%252Fsecret.txt", "/%252Fadmin/secret.txt", "/%2561dmin/secret.txt",
	// Case: the rule is case-sensitive, as Gateway API paths are; these
	// file systems are too.
	"/ADMIN/secret.txt", "/Admin/secret.txt",
}

// routedToAdmin are spellings the proxy routes as /admin/secret.txt
// itself: with a token they must get the secret, which shows the proxy
// forwarded the path it matched.
var routedToAdmin = []string{
	"//admin/secret.txt", "/admin//secret.txt", "/public/../admin/secret.txt", "/%2e%2e/admin/secret.txt",
	"/%61dmin/secret.txt", "/admin/x/../secret.txt",
}

func TestProtectedPathCannotBeSpeltAround(t *testing.T) {
	root := t.TempDir()
	for name, body := range map[string]string{"admin/secret.txt": secretBody, "public.txt": publicBody, "public/index.txt": publicBody} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	key := testaccess.Key(t, "hostile")
	certs := testaccess.Certs(t, map[string]*rsa.PublicKey{"k1": &key.PublicKey})
	token := signAccess(t, key, "k1")
	prefix := func(v string) []proxycfg.Match {
		return []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: v}}}
	}
	rules := []proxycfg.Rule{
		{Matches: prefix("/admin"), Access: &proxycfg.Access{Team: hostileTeam, Audiences: []string{hostileAud}}},
		{Matches: prefix("/")},
	}

	for _, kind := range realbackend.All() {
		t.Run(string(kind), func(t *testing.T) {
			be := realbackend.Start(t, kind, root)
			e := newEnv(t, be.Addr, withAccessTeams(proxycfg.AccessTeam{Domain: hostileTeam, Keys: string(certs)}), withRules(rules...))
			e.each(func(t *testing.T, p path) {
				get := func(target string, fields ...hf) (int, string) { return getAs(t, p, target, fields...) }
				// The controls: the rules do what they say.
				if s, body := get("/admin/secret.txt"); s != 403 {
					t.Fatalf("/admin/secret.txt without a token: %d %q, want 403", s, truncated(body))
				}
				if s, body := get("/public.txt"); s != 200 || body != publicBody {
					t.Fatalf("/public.txt: %d %q, want 200 %q", s, truncated(body), publicBody)
				}
				withToken := hf{"cf-access-jwt-assertion", token}
				if s, body := get("/admin/secret.txt", withToken); s != 200 || body != secretBody {
					t.Fatalf("/admin/secret.txt with a token: %d %q, want 200 %q", s, truncated(body), secretBody)
				}
				for _, target := range protectedSpellings {
					s, body := get(target)
					if strings.Contains(body, secretBody) {
						t.Errorf("%q without a token: %d, the secret", target, s)
					}
					if s == 200 && body != publicBody {
						t.Errorf("%q without a token: 200 %q, want a refusal or the public file", target, truncated(body))
					}
				}
				for _, target := range routedToAdmin {
					if s, body := get(target, withToken); s != 200 || body != secretBody {
						t.Errorf("%q with a token: %d %q, want 200 %q: the backend must get the path the router matched",
							target, s, truncated(body), secretBody)
					}
				}
				if p.proto == "h1" {
					// The absolute form (RFC 9112 §3.2.2) is routed the same way.
					abs := p.scheme() + "://" + p.addr + "//admin/secret.txt"
					if s, body := get(abs); strings.Contains(body, secretBody) {
						t.Errorf("%q without a token: %d, the secret", abs, s)
					}
				}
			})
		})
	}
}

// getAs sends GET target, written as it is, on a connection of its own to
// p (a request line, or an HTTP/2 :path), with fields (their names in
// lower case on HTTP/2), and returns the
// status and body; status 0 is no response (a reset, or the connection
// closed), which the caller counts as a refusal.
func getAs(t *testing.T, p path, target string, fields ...hf) (int, string) {
	t.Helper()
	c := p.dial(t)
	defer c.Close()
	if p.proto != "h1" {
		lower := make([]hf, len(fields)) // HTTP/2 field names are lower case (RFC 9113 §8.2.1)
		for i, f := range fields {
			lower[i] = hf{strings.ToLower(f.name), f.value}
		}
		s := h2dial(t, c).open(p.request("GET", target, p.addr, lower...), true).result(t)
		return s.status, string(s.body)
	}
	head := "GET " + target + " HTTP/1.1\r\nHost: " + p.addr + "\r\nConnection: close\r\n"
	for _, f := range fields {
		head += f.name + ": " + f.value + "\r\n"
	}
	res, body, err := exchange1(c, []byte(head+"\r\n"), "GET")
	if err != nil {
		if res == nil {
			return 0, fmt.Sprint(err)
		}
		return res.StatusCode, string(body)
	}
	return res.StatusCode, string(body)
}
