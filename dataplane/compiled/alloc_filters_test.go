//go:build !race

package compiled

import (
	"net/http"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Allocation counts of the filter hot paths. The race detector allocates,
// so these run only without it.

func TestAllocsReplacePrefixNoChange(t *testing.T) {
	cases := []struct{ path, prefix, repl string }{
		{"/foo/bar", "/foo", "/foo/"}, // result is path
		{"/foobar", "/foo", "/xyz"},   // not under the prefix
		{"/foo", "/foo", "/xyz"},      // result is the replacement
		{"/foo/bar", "/foo", "/"},     // result is the rest of path
		{"/foo", "/foo", ""},          // result is "/"
		{"/a/b", "/", "/"},            // prefix "/" and no replacement
	}
	for _, c := range cases {
		n := testing.AllocsPerRun(100, func() {
			_ = replacePrefix(c.path, c.prefix, c.repl)
		})
		if n != 0 {
			t.Errorf("replacePrefix(%q, %q, %q): %v allocs, want 0", c.path, c.prefix, c.repl, n)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = replacePrefix("/foo/bar", "/foo", "/xyz") }); n > 1 {
		t.Errorf("replacePrefix with a new path: %v allocs, want at most 1", n)
	}
}

func TestAllocsRewriteApply(t *testing.T) {
	rw, err := compileRewrite(&proxycfg.Rewrite{Hostname: "b.example", Path: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/"}}, "/api")
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = rw.Apply("/api/x", "a.example") }); n != 0 {
		t.Errorf("rewrite.apply: %v allocs, want 0", n)
	}
}

func TestAllocsRedirectLocation(t *testing.T) {
	rd, err := compileRedirect(&proxycfg.Redirect{StatusCode: 302, Scheme: "https", Port: 8443, Path: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/new"}}, "/old")
	if err != nil {
		t.Fatal(err)
	}
	// The prefix replacement allocates once and the Location once.
	if n := testing.AllocsPerRun(100, func() { _, _ = rd.Location("http", "a.example:8080", 8080, "/old/x", "q=1") }); n > 2 {
		t.Errorf("redirect.location: %v allocs, want at most 2", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = redirectLocation("https", "::1", 8443, "/x", "q=1") }); n != 1 {
		t.Errorf("redirectLocation: %v allocs, want 1", n)
	}
}

func TestAllocsOriginMatches(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = originMatches("https://*.bar.com:8443", "https://a.b.BAR.com:8443") }); n != 0 {
		t.Errorf("originMatches: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = originMatches("http://[2001:db8::1]:8080", "http://[2001:DB8::1]:8080") }); n != 0 {
		t.Errorf("originMatches: %v allocs, want 0", n)
	}
}

func TestAllocsCORSHandle(t *testing.T) {
	c, err := compileCORS(&proxycfg.CORS{
		MaxAge:           5,
		AllowOrigins:     []string{"https://www.foo.com", "https://*.bar.com"},
		AllowMethods:     []string{"GET", "OPTIONS"},
		AllowHeaders:     []string{"x-header-1"},
		ExposeHeaders:    []string{"x-header-3"},
		AllowCredentials: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	star, err := compileCORS(&proxycfg.CORS{MaxAge: 5, AllowOrigins: []string{"*"}, AllowMethods: []string{"*"}, ExposeHeaders: []string{"X-A"}})
	if err != nil {
		t.Fatal(err)
	}
	out := http.Header{}
	run := func(name string, c *CORS, req http.Header, method string, want float64) {
		t.Helper()
		n := testing.AllocsPerRun(100, func() {
			clear(out)
			c.Handle(req, method, out)
		})
		if n != want {
			t.Errorf("%s: %v allocs, want %v", name, n, want)
		}
	}
	run("no origin", c, http.Header{"Accept": {"*/*"}}, "GET", 0)
	run("no origin, star", star, http.Header{}, "GET", 0)
	run("disallowed origin", c, http.Header{"Origin": {"https://evil.example"}}, "GET", 0)
	run("allowed origin, star", star, http.Header{"Origin": {"https://x.example"}}, "GET", 0)
	run("preflight, star", star, http.Header{"Origin": {"https://x.example"}, "Access-Control-Request-Method": {"PUT"}}, "OPTIONS", 0)
	// Echoing the origin costs its one-element slice.
	run("allowed origin", c, http.Header{"Origin": {"https://a.bar.com"}}, "GET", 1)
	run("preflight", c, http.Header{
		"Origin":                         {"https://www.foo.com"},
		"Access-Control-Request-Method":  {"GET"},
		"Access-Control-Request-Headers": {"x-header-1"},
	}, "OPTIONS", 1)
}

func TestAllocsSessionToken(t *testing.T) {
	p, err := compileSession(&proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "tg"})
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Cookie": {"a=1; b=2", " c=3 ;tg=\"value\"; d=4"}}
	var got string
	if n := testing.AllocsPerRun(1000, func() { got = p.Token(h) }); n > 0 {
		t.Errorf("token (cookie): %v allocations, want 0", n)
	}
	if got != "value" {
		t.Fatalf("token = %q", got)
	}
	hp, err := compileSession(&proxycfg.SessionPersistence{Lifetime: proxycfg.LifetimeSession, Name: "x-session", Type: proxycfg.SessionHeader})
	if err != nil {
		t.Fatal(err)
	}
	h = http.Header{"X-Session": {" v "}}
	if n := testing.AllocsPerRun(1000, func() { got = hp.Token(h) }); n > 0 {
		t.Errorf("token (header): %v allocations, want 0", n)
	}
	if got != "v" {
		t.Fatalf("token = %q", got)
	}
}
