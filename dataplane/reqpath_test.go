package dataplane

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testnet"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

func TestPathRefusal(t *testing.T) {
	for p, refused := range map[string]bool{
		"/":                     false,
		"/admin/secret.txt":     false,
		"/a%20b":                false,
		"/caf%C3%A9":            false,
		"/%E2%82%AC":            false, // a three-byte sequence that is not overlong
		"/%F0%9F%98%80":         false,
		"/a;b/c":                false, // parameters are data
		"/a/..b;x":              false,
		"/admin/secret.txt%00":  true,
		"/%00":                  true,
		"/%C0%AFadmin":          true,
		"/%C1%9C":               true,
		"/%E0%80%AF":            true,
		"/%E0%9F%BF":            true,
		"/%F0%80%80%AF":         true,
		"/%F0%8F%BF%BF":         true,
		"/public/..;/admin":     true,
		"/public/..;x=1/admin":  true,
		"/.;/admin":             true,
		"/admin/..;":            true,
		"/%E0":                  false, // a lone lead byte: invalid text, but nothing in disguise
		"/%C2%A9":               false,
		"/admin%252Fsecret.txt": false, // an escaped '%': data
	} {
		if got := pathRefusal(p) != ""; got != refused {
			t.Errorf("pathRefusal(%q) = %q, want refused %v", p, pathRefusal(p), refused)
		}
	}
}

func TestDecodeSlashes(t *testing.T) {
	for in, want := range map[string]string{
		"/admin%2Fsecret":       "/admin/secret",
		"/%2Fadmin/secret":      "/admin/secret",
		"/admin%5Csecret":       "/admin/secret",
		"/public%2F..%2Fadmin":  "/admin",
		"/a%2F%2F%2Fb":          "/a/b",
		"/a%252Fb":              "/a%252Fb",
		"/a%2F.%2Fb%5C..%5Cc/d": "/a/c/d",
	} {
		if hasEncodedSlash(in) != strings.Contains(strings.ReplaceAll(in, "%25", ""), "%") {
			t.Errorf("hasEncodedSlash(%q) = %v", in, hasEncodedSlash(in))
		}
		if got := decodeSlashes(in); got != want {
			t.Errorf("decodeSlashes(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRequestPathForwardedAsMatched sends spellings of a protected path
// on each listener and protocol, and checks that the rule the router
// chose is the one whose backend got the request, with the path the
// router matched: "/admin" and "/" go to different backends, so a
// spelling that reaches the "/" backend with a path under "/admin" would
// show here.
func TestRequestPathForwardedAsMatched(t *testing.T) {
	admin := startBackend(t, echo("admin"))
	open := startBackend(t, echo("open"))
	cfg := func(slashes string) *proxycfg.Config {
		c := config([]proxycfg.Route{route("r",
			proxycfg.Rule{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/admin"}}},
				Backends: []proxycfg.BackendRef{{Cluster: "admin", Weight: 1}}},
			to("open"))}, cluster("admin", admin), cluster("open", open))
		c.Listeners[0].EncodedSlashes = slashes
		return c
	}
	type want struct {
		status  int
		backend string
		target  string
	}
	ok := func(backend, target string) want { return want{200, backend, target} }
	refused := want{status: 400}
	common := map[string]want{
		"/admin/secret.txt":          ok("admin", "/admin/secret.txt"),
		"//admin/secret.txt":         ok("admin", "/admin/secret.txt"),
		"///admin//secret.txt":       ok("admin", "/admin/secret.txt"),
		"/admin//secret.txt":         ok("admin", "/admin/secret.txt"),
		"/./admin/secret.txt":        ok("admin", "/admin/secret.txt"),
		"/public/../admin/x?a=1":     ok("admin", "/admin/x?a=1"),
		"/public/%2e%2e/admin/x":     ok("admin", "/admin/x"),
		"/public//..//admin/x":       ok("admin", "/admin/x"),
		"/%61dmin/secret.txt":        ok("admin", "/admin/secret.txt"),
		"/public.txt":                ok("open", "/public.txt"),
		"/admin;x/secret.txt":        ok("open", "/admin;x/secret.txt"),
		"/public/..;/admin/x":        refused,
		"/admin/secret.txt%00":       refused,
		"/%C0%AFadmin/secret.txt":    refused,
		"/%E0%80%AFadmin/secret.txt": refused,
	}
	slashed := []string{"/admin%2Fsecret.txt", "/admin%2fsecret.txt", "/%2Fadmin/secret.txt", "/%2fadmin/secret.txt",
		"/admin%5Csecret.txt", "/admin\\secret.txt", "/\\admin/secret.txt", "/public%2F..%2Fadmin/x"}
	for _, mode := range []struct {
		name, listener, proxy string
		slashed               func(p string) want
	}{
		{"default", "", "", func(string) want { return refused }},
		{"listener Reject", proxycfg.SlashesReject, proxycfg.SlashesKeep, func(string) want { return refused }},
		{"listener Decode", proxycfg.SlashesDecode, "", func(p string) want {
			if p == "/public%2F..%2Fadmin/x" {
				return ok("admin", "/admin/x")
			}
			return ok("admin", "/admin/secret.txt")
		}},
		{"proxy Decode", "", proxycfg.SlashesDecode, func(p string) want {
			if p == "/public%2F..%2Fadmin/x" {
				return ok("admin", "/admin/x")
			}
			return ok("admin", "/admin/secret.txt")
		}},
		{"listener Keep", proxycfg.SlashesKeep, proxycfg.SlashesReject, func(p string) want {
			// Escaped, the slash is data: one path element, which the
			// "/admin" rule does not cover, forwarded as it is.
			norm := strings.NewReplacer("%2f", "%2F", "\\", "%5C").Replace(p)
			if strings.HasPrefix(norm, "/admin/") {
				return ok("admin", norm)
			}
			return ok("open", norm)
		}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			e := newTestEnv(t, cfg(mode.listener), func(o *Options) { o.EncodedSlashes = mode.proxy })
			cases := map[string]want{}
			for p, w := range common {
				cases[p] = w
			}
			for _, p := range slashed {
				cases[p] = mode.slashed(p)
			}
			for target, w := range cases {
				for _, way := range []struct {
					name string
					send func(target string) (int, string)
				}{
					{"origin/h1", func(tg string) (int, string) { return rawGET(t, e.bound.Origin, tg) }},
					{"plain/h1", func(tg string) (int, string) { return rawGET(t, e.bound.Plain, tg) }},
					{"origin-tls/h2", func(tg string) (int, string) { return opaqueGET(t, e.h2, "https://"+e.bound.OriginTLS, tg) }},
					{"plain/h2c", func(tg string) (int, string) { return opaqueGET(t, e.h2c, "http://"+e.bound.Plain, tg) }},
				} {
					if strings.HasSuffix(way.name, "h2") || strings.HasSuffix(way.name, "h2c") {
						if strings.ContainsRune(target, '\\') || strings.HasPrefix(target, "//") {
							// Go's HTTP/2 client will not send such a :path;
							// test/hostile sends every spelling in raw frames.
							continue
						}
					}
					status, body := way.send(target)
					if status != w.status {
						t.Errorf("%s %q: status %d, want %d (%s)", way.name, target, status, w.status, strings.TrimSpace(body))
						continue
					}
					if w.status != 200 {
						continue
					}
					if b, tg := echoed(body, "backend"), echoed(body, "target"); b != w.backend || tg != w.target {
						t.Errorf("%s %q: backend %s got %q, want backend %s with %q", way.name, target, b, tg, w.backend, w.target)
					}
				}
			}
		})
	}
}

// TestMergedListenersTakeTheStrictestSlashes: two listeners of one
// hostname, one keeping encoded slashes and one leaving it to the proxy
// (Reject), are one vhost, which refuses them.
func TestMergedListenersTakeTheStrictestSlashes(t *testing.T) {
	be := startBackend(t, echo("b"))
	c := config([]proxycfg.Route{route("r", to("b"))}, cluster("b", be))
	c.Listeners = []proxycfg.Listener{
		{Name: "gw/a", Port: 80, Protocol: proxycfg.ListenerHTTP, EncodedSlashes: proxycfg.SlashesKeep},
		{Name: "gw/b", Port: 80, Protocol: proxycfg.ListenerHTTP},
	}
	c.Routes[0].Listeners = []string{"gw/a", "gw/b"}
	e := newTestEnv(t, c)
	if s, body := rawGET(t, e.bound.Origin, "/a%2Fb"); s != 400 {
		t.Errorf("merged Keep and unset: %d, want 400 (%s)", s, body)
	}
	c.Listeners[1].EncodedSlashes = proxycfg.SlashesKeep
	if err := e.p.Load(c); err != nil {
		t.Fatal(err)
	}
	if s, body := rawGET(t, e.bound.Origin, "/a%2Fb"); s != 200 || echoed(body, "target") != "/a%2Fb" {
		t.Errorf("both Keep: %d, target %q, want 200 /a%%2Fb", s, echoed(body, "target"))
	}
	c.Listeners[1].EncodedSlashes = "Allow"
	if err := e.p.Load(c); err == nil || !strings.Contains(err.Error(), `encodedSlashes "Allow"`) {
		t.Errorf("an unknown encodedSlashes loaded: %v", err)
	}
}

// rawGET sends GET target, as written, to addr (testnet.RawGET).
func rawGET(t *testing.T, addr, target string) (int, string) {
	t.Helper()
	return testnet.RawGET(t, addr, "h", target)
}

// opaqueGET sends a GET whose :path is target as written, with client.
func opaqueGET(t *testing.T, client *http.Client, base, target string) (int, string) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	path, query, _ := strings.Cut(target, "?")
	u.Opaque, u.RawQuery = path, query
	req := &http.Request{Method: "GET", URL: u, Host: "h", Header: http.Header{}}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %q: %v", target, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// The access log shows the path the router matched and, beside it, the
// client's spelling when that differs; a path refused before routing
// shows as the client sent it.
func TestAccessLogShowsRoutedPath(t *testing.T) {
	be := startBackend(t, echo("b"))
	var out testproc.SyncBuffer
	al := observe.NewAccessLog(&out, observe.AccessLogOptions{})
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("b"))}, cluster("b", be)), func(o *Options) { o.AccessLog = al })
	rawGET(t, e.bound.Origin, "//cart/./x?y=1")
	rawGET(t, e.bound.Origin, "/cart/x?y=1")
	rawGET(t, e.bound.Origin, "/a%2Fb")
	closeAfter(t, al, 3)
	lines := parseAccessLog(t, out.String())
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), out.String())
	}
	lines[0].want(t, "path", "/cart/x?y=1")
	lines[0].want(t, "client_path", "//cart/./x?y=1")
	lines[1].want(t, "path", "/cart/x?y=1")
	if _, ok := lines[1]["client_path"]; ok {
		t.Errorf("a path routed as sent has a client_path: %v", lines[1])
	}
	lines[2].want(t, "path", "/a%2Fb")
	lines[2].want(t, "status", 400)
}

// A path whose encoded slashes, read as '/', make a spelling refused on
// every listener is refused too (found by FuzzRequestPath).
func TestDecodedPathIsCheckedAgain(t *testing.T) {
	be := startBackend(t, echo("b"))
	c := config([]proxycfg.Route{route("r", to("b"))}, cluster("b", be))
	c.Listeners[0].EncodedSlashes = proxycfg.SlashesDecode
	e := newTestEnv(t, c)
	for _, target := range []string{"/%2F.;", "/public%2F..;%2Fadmin", "/a%5C..;x/b"} {
		if s, body := rawGET(t, e.bound.Origin, target); s != 400 {
			t.Errorf("%q: %d (%s), want 400", target, s, echoed(body, "target"))
		}
	}
}
