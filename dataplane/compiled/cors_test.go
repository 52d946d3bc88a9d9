package compiled

import (
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

func TestOriginMatches(t *testing.T) {
	cases := []struct {
		pattern, origin string
		want            bool
	}{
		// A lone "*" allows everything, even what is not an origin.
		{"*", "https://a.example", true},
		{"*", "null", true},
		{"*", "", true},
		{"*", "garbage", true},
		// Exact.
		{"https://www.foo.com", "https://www.foo.com", true},
		{"https://www.foo.com", "https://WWW.Foo.COM", true},
		{"https://WWW.FOO.COM", "https://www.foo.com", true},
		{"HTTPS://www.foo.com", "https://www.foo.com", true},
		{"https://www.foo.com", "HTTPS://www.foo.com", true},
		{"https://www.foo.com", "http://www.foo.com", false},
		{"https://www.foo.com", "https://foo.com", false},
		{"https://www.foo.com", "https://www.foo.com.evil", false},
		{"https://www.foo.com", "https://evilwww.foo.com", false},
		{"https://www.foo.com", "https://foobar.com", false},
		// Ports: the default equals an explicit default on either side.
		{"https://a.com", "https://a.com:443", true},
		{"https://a.com:443", "https://a.com", true},
		{"http://a.com", "http://a.com:80", true},
		{"http://a.com:80", "http://a.com", true},
		{"http://foo.com:8080", "http://foo.com:8080", true},
		{"http://foo.com:8080", "http://foo.com", false},
		{"http://foo.com", "http://foo.com:8080", false},
		{"https://a.com", "https://a.com:80", false},
		{"http://a.com:443", "https://a.com", false},
		// Wildcards: greedy to the left over one or more labels.
		{"https://*.bar.com", "https://www.bar.com", true},
		{"https://*.bar.com", "https://xpto.www.bar.com", true},
		{"https://*.bar.com", "https://a.b.c.d.BAR.com", true},
		{"https://*.bar.com", "https://bar.com", false},
		{"https://*.bar.com", "https://foobar.com", false},
		{"https://*.bar.com", "https://www.bar.com.evil", false},
		{"https://*.bar.com", "http://www.bar.com", false},
		{"https://*.bar.com", "https://www.bar.com:8443", false},
		{"https://*.bar.com:8443", "https://www.bar.com:8443", true},
		{"https://*.bar.com:443", "https://www.bar.com", true},
		{"https://*", "https://anything.example", true},
		{"https://*", "https://[::1]", true},
		{"https://*", "http://anything.example", false},
		{"https://*", "https://anything.example:8443", false},
		{"http://*:8080", "http://x:8080", true},
		// IPv6 and IPv4 literals.
		{"http://[::1]:8080", "http://[::1]:8080", true},
		{"http://[::1]", "http://[::1]:80", true},
		{"http://[::1]", "http://[::2]", false},
		{"http://[:0]", "http://[:0]", false},
		{"http://[fe80::1%25eth0]", "http://[fe80::1%25eth0]", false},
		{"http://[1.2.3.4]", "http://[1.2.3.4]", false},
		{"http://[::FFFF:1.2.3.4]", "http://[::ffff:1.2.3.4]", true},
		{"http://127.0.0.1", "http://127.0.0.1", true},
		// Underscores and such, which browsers send.
		{"https://my_host.example", "https://my_host.example", true},
		// "null" and malformed origins match only a lone "*".
		{"https://a.com", "null", false},
		{"https://*", "null", false},
		{"https://a.com", "https://a.com/", false},
		{"https://a.com", "https://a.com/path", false},
		{"https://a.com", "https://user@a.com", false},
		{"https://a.com", "https://a.com:", false},
		{"https://a.com", "https://a.com:0443x", false},
		{"https://a.com", "a.com", false},
		{"https://*", "https://", false},
		{"https://*", "https://*", false},
		{"https://*.a.com", "https://*.a.com", false},
		{"ftp://a.com", "ftp://a.com", false},
		{"https://a.com:99999", "https://a.com:99999", false},
		{"https://a.com:0", "https://a.com:0", false},
		{"https://a..com", "https://a..com", false},
		{"https://a.com.", "https://a.com.", false},
		// Invalid patterns allow nothing.
		{"", "https://a.com", false},
		{"a.com", "https://a.com", false},
		{"https://a.*.com", "https://a.b.com", false},
		{"https://**.a.com", "https://b.a.com", false},
		{"https://*a.com", "https://ba.com", false},
		{"https://a.com/", "https://a.com", false},
	}
	for _, c := range cases {
		if got := originMatches(c.pattern, c.origin); got != c.want {
			t.Errorf("originMatches(%q, %q) = %v, want %v", c.pattern, c.origin, got, c.want)
		}
	}
}

func TestCompileCORSErrors(t *testing.T) {
	cases := []struct {
		name    string
		c       *proxycfg.CORS
		wantErr string
	}{
		{"nil", nil, "missing"},
		{"origin without scheme", &proxycfg.CORS{MaxAge: 5, AllowOrigins: []string{"www.foo.com"}}, "allowOrigins"},
		{"origin with path", &proxycfg.CORS{MaxAge: 5, AllowOrigins: []string{"https://www.foo.com/"}}, "allowOrigins"},
		{"origin bad scheme", &proxycfg.CORS{MaxAge: 5, AllowOrigins: []string{"ftp://foo.com"}}, "allowOrigins"},
		{"origin bad port", &proxycfg.CORS{MaxAge: 5, AllowOrigins: []string{"https://foo.com:70000"}}, "allowOrigins"},
		{"origin inner wildcard", &proxycfg.CORS{MaxAge: 5, AllowOrigins: []string{"https://a.*.com"}}, "allowOrigins"},
		{"method with space", &proxycfg.CORS{MaxAge: 5, AllowMethods: []string{"GE T"}}, "allowMethods"},
		{"method empty", &proxycfg.CORS{MaxAge: 5, AllowMethods: []string{""}}, "allowMethods"},
		{"header with colon", &proxycfg.CORS{MaxAge: 5, AllowHeaders: []string{":authority"}}, "allowHeaders"},
		{"header with slash", &proxycfg.CORS{MaxAge: 5, AllowHeaders: []string{"/invalid"}}, "allowHeaders"},
		{"expose with comma", &proxycfg.CORS{MaxAge: 5, ExposeHeaders: []string{"a,b"}}, "exposeHeaders"},
		{"negative max age", &proxycfg.CORS{MaxAge: -1}, "maxAge"},
	}
	for _, c := range cases {
		_, err := compileCORS(c.c)
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: err = %v, want one containing %q", c.name, err, c.wantErr)
		}
	}
	ok := &proxycfg.CORS{
		AllowOrigins:  []string{"https://a.com", "http://*.b.com:8080", "https://*"},
		AllowMethods:  []string{"GET", "PATCH", "CUSTOM-METHOD"},
		AllowHeaders:  []string{"X-A", "content-type"},
		ExposeHeaders: []string{"*"},
		MaxAge:        86400,
	}
	if _, err := compileCORS(ok); err != nil {
		t.Errorf("valid filter: %v", err)
	}
}

// corsReq builds a request header from name, value pairs (names canonicalised).
func corsReq(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// corsWant is the headers a CORS answer must have, exactly. A value with
// ", " is compared as a set of list elements, as the conformance suite
// allows any order.
type corsWant map[string]string

func checkCORS(t *testing.T, name string, c *CORS, method string, req http.Header, wantPreflight bool, want corsWant) {
	t.Helper()
	out := http.Header{}
	pre := c.Handle(req, method, out)
	if pre != wantPreflight {
		t.Errorf("%s: preflight = %v, want %v", name, pre, wantPreflight)
	}
	got := map[string]string{}
	for k, v := range out {
		got[k] = strings.Join(v, ", ")
	}
	norm := func(m map[string]string) map[string]string {
		n := map[string]string{}
		for k, v := range m {
			parts := strings.Split(v, ",")
			for i := range parts {
				parts[i] = strings.TrimSpace(parts[i])
			}
			sort.Strings(parts)
			n[http.CanonicalHeaderKey(k)] = strings.Join(parts, ",")
		}
		return n
	}
	if g, w := norm(got), norm(want); !reflect.DeepEqual(g, w) {
		t.Errorf("%s: headers\n got  %v\n want %v", name, got, map[string]string(want))
	}
}

func mustCORS(t *testing.T, c *proxycfg.CORS) *CORS {
	t.Helper()
	cc, err := compileCORS(c)
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// The routes of conformance test httproute-cors.
var (
	corsConf1 = &proxycfg.CORS{
		AllowOrigins:     []string{"https://www.foo.com", "https://*.bar.com"},
		AllowMethods:     []string{"GET", "OPTIONS"},
		AllowHeaders:     []string{"x-header-1", "x-header-2"},
		ExposeHeaders:    []string{"x-header-3", "x-header-4"},
		AllowCredentials: true,
		MaxAge:           3600,
	}
	corsConf2 = &proxycfg.CORS{
		MaxAge:       5,
		AllowOrigins: []string{"https://www.foo.com"},
		AllowMethods: []string{"*"},
	}
	corsConfWildOrigin = &proxycfg.CORS{
		MaxAge:       5,
		AllowOrigins: []string{"*"},
		AllowMethods: []string{"PUT"},
	}
	corsConfWildAuth = &proxycfg.CORS{
		MaxAge:           5,
		AllowOrigins:     []string{"*"},
		AllowMethods:     []string{"*"},
		AllowHeaders:     []string{"*"},
		AllowCredentials: true,
	}
	corsConfWildUnauth = &proxycfg.CORS{
		MaxAge:       5,
		AllowOrigins: []string{"*"},
		AllowMethods: []string{"*"},
		AllowHeaders: []string{"*"},
	}
)

func TestCORSConformance(t *testing.T) {
	c1 := mustCORS(t, corsConf1)
	preflight1 := corsWant{
		"Access-Control-Allow-Methods":     "GET, OPTIONS",
		"Access-Control-Allow-Headers":     "x-header-1, x-header-2",
		"Access-Control-Expose-Headers":    "x-header-3, x-header-4",
		"Access-Control-Max-Age":           "3600",
		"Access-Control-Allow-Credentials": "true",
	}
	with := func(w corsWant, k, v string) corsWant {
		n := corsWant{k: v}
		for a, b := range w {
			n[a] = b
		}
		return n
	}
	for _, o := range []string{"https://www.foo.com", "https://www.bar.com", "https://xpto.www.bar.com"} {
		checkCORS(t, "cors-1 preflight "+o, c1, "OPTIONS", corsReq(
			"Origin", o,
			"access-control-request-method", "GET",
			"access-control-request-headers", "x-header-1, x-header-2",
		), true, with(preflight1, "Access-Control-Allow-Origin", o))
	}
	checkCORS(t, "cors-1 preflight non-matching", c1, "OPTIONS", corsReq(
		"Origin", "https://foobar.com",
		"access-control-request-method", "GET",
	), true, corsWant{})
	for _, o := range []string{"https://www.foo.com", "https://www.bar.com"} {
		checkCORS(t, "cors-1 simple "+o, c1, "GET", corsReq(
			"Origin", o,
			"access-control-request-method", "GET",
			"access-control-request-headers", "x-header-1, x-header-2",
		), false, corsWant{
			"Access-Control-Allow-Origin":      o,
			"Access-Control-Allow-Credentials": "true",
			"Access-Control-Expose-Headers":    "x-header-3, x-header-4",
			"Vary":                             "Origin",
		})
	}
	checkCORS(t, "cors-1 simple non-matching", c1, "GET", corsReq(
		"Origin", "https://foobar.com",
		"access-control-request-method", "GET",
	), false, corsWant{"Vary": "Origin"})

	c2 := mustCORS(t, corsConf2)
	checkCORS(t, "cors-2 preflight POST", c2, "OPTIONS", corsReq(
		"Origin", "https://www.foo.com",
		"access-control-request-method", "POST",
	), true, corsWant{
		"Access-Control-Allow-Origin":  "https://www.foo.com",
		"Access-Control-Allow-Methods": "*",
		"Access-Control-Max-Age":       "5",
	})

	cw := mustCORS(t, corsConfWildOrigin)
	for _, o := range []string{"https://foobar.com", "https://foobar.com:12345"} {
		checkCORS(t, "wildcard-origin preflight "+o, cw, "OPTIONS", corsReq(
			"Origin", o,
			"access-control-request-method", "PUT",
		), true, corsWant{
			"Access-Control-Allow-Origin":  "*",
			"Access-Control-Allow-Methods": "PUT",
			"Access-Control-Max-Age":       "5",
		})
		checkCORS(t, "wildcard-origin request "+o, cw, "PUT", corsReq("Origin", o), false,
			corsWant{"Access-Control-Allow-Origin": "*"})
	}

	ca := mustCORS(t, corsConfWildAuth)
	checkCORS(t, "wildcard-methods-headers preflight", ca, "OPTIONS", corsReq(
		"Origin", "https://other.foo.com",
		"access-control-request-method", "PUT",
		"access-control-request-headers", "x-header-1, x-header-2",
	), true, corsWant{
		"Access-Control-Allow-Origin":      "https://other.foo.com",
		"Access-Control-Allow-Methods":     "PUT",
		"Access-Control-Allow-Headers":     "x-header-1, x-header-2",
		"Access-Control-Allow-Credentials": "true",
		"Access-Control-Max-Age":           "5",
	})
	checkCORS(t, "wildcard-methods-headers request", ca, "GET", corsReq("Origin", "https://other.foo.com"), false, corsWant{
		"Access-Control-Allow-Origin":      "https://other.foo.com",
		"Access-Control-Allow-Credentials": "true",
		"Vary":                             "Origin",
	})

	cu := mustCORS(t, corsConfWildUnauth)
	checkCORS(t, "wildcard-methods-headers-unauth preflight", cu, "OPTIONS", corsReq(
		"Origin", "https://other.foo.com",
		"access-control-request-method", "PUT",
		"access-control-request-headers", "x-header-1, x-header-2",
	), true, corsWant{
		"Access-Control-Allow-Origin":  "*",
		"Access-Control-Allow-Methods": "*",
		"Access-Control-Allow-Headers": "x-header-1, x-header-2",
		"Access-Control-Max-Age":       "5",
	})
	checkCORS(t, "wildcard-methods-headers-unauth request", cu, "GET", corsReq("Origin", "https://other.foo.com"), false, corsWant{
		"Access-Control-Allow-Origin": "*",
	})
}

func TestCORSHandle(t *testing.T) {
	c1 := mustCORS(t, corsConf1)
	// No Origin: not CORS; only Vary, since the answer depends on Origin.
	checkCORS(t, "no origin", c1, "GET", corsReq(), false, corsWant{"Vary": "Origin"})
	// OPTIONS without Access-Control-Request-Method is an actual request.
	checkCORS(t, "options without request method", c1, "OPTIONS", corsReq("Origin", "https://www.foo.com"), false, corsWant{
		"Access-Control-Allow-Origin":      "https://www.foo.com",
		"Access-Control-Allow-Credentials": "true",
		"Access-Control-Expose-Headers":    "x-header-3, x-header-4",
		"Vary":                             "Origin",
	})
	checkCORS(t, "options with empty request method", c1, "OPTIONS", corsReq("Origin", "https://www.foo.com", "Access-Control-Request-Method", ""), false, corsWant{
		"Access-Control-Allow-Origin":      "https://www.foo.com",
		"Access-Control-Allow-Credentials": "true",
		"Access-Control-Expose-Headers":    "x-header-3, x-header-4",
		"Vary":                             "Origin",
	})
	// OPTIONS with a request method but no Origin is not a preflight.
	checkCORS(t, "options without origin", c1, "OPTIONS", corsReq("Access-Control-Request-Method", "GET"), false, corsWant{"Vary": "Origin"})
	// Allow-Headers is omitted without Access-Control-Request-Headers.
	checkCORS(t, "preflight without request headers", c1, "OPTIONS", corsReq(
		"Origin", "https://www.foo.com", "Access-Control-Request-Method", "GET",
	), true, corsWant{
		"Access-Control-Allow-Origin":      "https://www.foo.com",
		"Access-Control-Allow-Methods":     "GET, OPTIONS",
		"Access-Control-Expose-Headers":    "x-header-3, x-header-4",
		"Access-Control-Max-Age":           "3600",
		"Access-Control-Allow-Credentials": "true",
	})
	// Several Origin values are not one origin.
	checkCORS(t, "two origins", c1, "GET", corsReq("Origin", "https://www.foo.com", "Origin", "https://www.bar.com"), false, corsWant{"Vary": "Origin"})
	checkCORS(t, "two origins preflight", c1, "OPTIONS", corsReq("Origin", "https://www.foo.com", "Origin", "https://www.bar.com", "Access-Control-Request-Method", "GET"), true, corsWant{})
	// "null" is not allowed by a list.
	checkCORS(t, "null origin", c1, "GET", corsReq("Origin", "null"), false, corsWant{"Vary": "Origin"})
	// Default ports equal.
	checkCORS(t, "explicit default port", c1, "GET", corsReq("Origin", "https://www.foo.com:443"), false, corsWant{
		"Access-Control-Allow-Origin":      "https://www.foo.com:443",
		"Access-Control-Allow-Credentials": "true",
		"Access-Control-Expose-Headers":    "x-header-3, x-header-4",
		"Vary":                             "Origin",
	})

	// A Vary already there is extended, not replaced; Origin is not added twice.
	out := http.Header{"Vary": {"Accept-Encoding"}}
	c1.Handle(corsReq("Origin", "https://www.foo.com"), "GET", out)
	if got := out["Vary"]; !reflect.DeepEqual(got, []string{"Accept-Encoding", "Origin"}) {
		t.Errorf("Vary = %q", got)
	}
	for _, v := range [][]string{{"origin"}, {"Accept-Encoding, ORIGIN"}, {"*"}, {"a", " Origin "}} {
		out := http.Header{"Vary": append([]string(nil), v...)}
		c1.Handle(corsReq("Origin", "https://www.foo.com"), "GET", out)
		if got := out["Vary"]; !reflect.DeepEqual(got, v) {
			t.Errorf("Vary %q became %q", v, got)
		}
	}

	// Wildcards with credentials echo; the method echo of a standard
	// method shares a constant.
	ca := mustCORS(t, corsConfWildAuth)
	checkCORS(t, "custom method echo", ca, "OPTIONS", corsReq(
		"Origin", "http://x.example:8080", "Access-Control-Request-Method", "PURGE",
	), true, corsWant{
		"Access-Control-Allow-Origin":      "http://x.example:8080",
		"Access-Control-Allow-Methods":     "PURGE",
		"Access-Control-Allow-Credentials": "true",
		"Access-Control-Max-Age":           "5",
	})
	checkCORS(t, "bad method not echoed", ca, "OPTIONS", corsReq(
		"Origin", "http://x.example", "Access-Control-Request-Method", "GET POST",
	), true, corsWant{
		"Access-Control-Allow-Origin":      "http://x.example",
		"Access-Control-Allow-Credentials": "true",
		"Access-Control-Max-Age":           "5",
	})
	checkCORS(t, "bad headers not echoed", ca, "OPTIONS", corsReq(
		"Origin", "http://x.example", "Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "a b",
	), true, corsWant{
		"Access-Control-Allow-Origin":      "http://x.example",
		"Access-Control-Allow-Methods":     "GET",
		"Access-Control-Allow-Credentials": "true",
		"Access-Control-Max-Age":           "5",
	})
	checkCORS(t, "several request-headers lines", ca, "OPTIONS", corsReq(
		"Origin", "http://x.example", "Access-Control-Request-Method", "GET",
		"Access-Control-Request-Headers", "authorization", "Access-Control-Request-Headers", "x-a",
	), true, corsWant{
		"Access-Control-Allow-Origin":      "http://x.example",
		"Access-Control-Allow-Methods":     "GET",
		"Access-Control-Allow-Headers":     "authorization,x-a",
		"Access-Control-Allow-Credentials": "true",
		"Access-Control-Max-Age":           "5",
	})
	// "*" with credentials echoes any origin, even "null".
	checkCORS(t, "null with star and credentials", ca, "GET", corsReq("Origin", "null"), false, corsWant{
		"Access-Control-Allow-Origin":      "null",
		"Access-Control-Allow-Credentials": "true",
		"Vary":                             "Origin",
	})

	// Without allowMethods or allowHeaders nothing is claimed for them.
	bare := mustCORS(t, &proxycfg.CORS{MaxAge: 5, AllowOrigins: []string{"https://a.com"}})
	checkCORS(t, "bare preflight", bare, "OPTIONS", corsReq(
		"Origin", "https://a.com", "Access-Control-Request-Method", "DELETE", "Access-Control-Request-Headers", "x-a",
	), true, corsWant{
		"Access-Control-Allow-Origin": "https://a.com",
		"Access-Control-Max-Age":      "5",
	})
	// An empty allowOrigins allows no one, but still answers preflights.
	none := mustCORS(t, &proxycfg.CORS{MaxAge: 5})
	checkCORS(t, "no origins preflight", none, "OPTIONS", corsReq("Origin", "https://a.com", "Access-Control-Request-Method", "GET"), true, corsWant{})
	checkCORS(t, "no origins request", none, "GET", corsReq("Origin", "https://a.com"), false, corsWant{"Vary": "Origin"})

	// Expose "*": a "*" without credentials, nothing with them.
	exposeStar := mustCORS(t, &proxycfg.CORS{MaxAge: 5, AllowOrigins: []string{"https://a.com"}, ExposeHeaders: []string{"*"}})
	checkCORS(t, "expose star", exposeStar, "GET", corsReq("Origin", "https://a.com"), false, corsWant{
		"Access-Control-Allow-Origin":   "https://a.com",
		"Access-Control-Expose-Headers": "*",
		"Vary":                          "Origin",
	})
	exposeStarCred := mustCORS(t, &proxycfg.CORS{MaxAge: 5, AllowOrigins: []string{"https://a.com"}, ExposeHeaders: []string{"*"}, AllowCredentials: true})
	checkCORS(t, "expose star with credentials", exposeStarCred, "GET", corsReq("Origin", "https://a.com"), false, corsWant{
		"Access-Control-Allow-Origin":      "https://a.com",
		"Access-Control-Allow-Credentials": "true",
		"Vary":                             "Origin",
	})

	// A lone "*" without credentials answers every response the same,
	// Origin or not, with no Vary.
	star := mustCORS(t, &proxycfg.CORS{MaxAge: 5, AllowOrigins: []string{"*"}, ExposeHeaders: []string{"X-Trace"}})
	checkCORS(t, "star no origin", star, "GET", corsReq(), false, corsWant{
		"Access-Control-Allow-Origin":   "*",
		"Access-Control-Expose-Headers": "X-Trace",
	})
	checkCORS(t, "star null", star, "POST", corsReq("Origin", "null"), false, corsWant{
		"Access-Control-Allow-Origin":   "*",
		"Access-Control-Expose-Headers": "X-Trace",
	})
}

// The shared constant slices must not be changed by a later append.
func TestCORSSharedValuesAppendSafe(t *testing.T) {
	c := mustCORS(t, corsConf1)
	out := http.Header{}
	c.Handle(corsReq("Origin", "https://www.foo.com", "Access-Control-Request-Method", "GET"), "OPTIONS", out)
	out.Add("Access-Control-Allow-Methods", "PUT")
	out.Add("Access-Control-Max-Age", "1")
	if got := c.methods; len(got) != 1 || got[0] != "GET, OPTIONS" {
		t.Errorf("compiled methods changed to %q", got)
	}
	if got := c.maxAge; len(got) != 1 || got[0] != "3600" {
		t.Errorf("compiled max age changed to %q", got)
	}
	for _, s := range [][]string{corsValStar, corsValTrue, corsValOrigin, c.methods, c.headers, c.expose, c.maxAge} {
		if len(s) != cap(s) {
			t.Errorf("shared value %q has len %d cap %d", s, len(s), cap(s))
		}
	}
	for m, s := range corsValMethods {
		if len(s) != 1 || cap(s) != 1 || s[0] != m {
			t.Errorf("corsValMethods[%q] = %q (cap %d)", m, s, cap(s))
		}
	}
}

func TestCORSTokenList(t *testing.T) {
	good := []string{"a", "a,b", "a, b", " a ,\tb ", "a,,b", "x-header-1, x-header-2"}
	bad := []string{"", ",", " , ", "a b", "a;b", "a,b c", "é"}
	for _, s := range good {
		if !corsTokenList(s) {
			t.Errorf("corsTokenList(%q) = false", s)
		}
	}
	for _, s := range bad {
		if corsTokenList(s) {
			t.Errorf("corsTokenList(%q) = true", s)
		}
	}
}
