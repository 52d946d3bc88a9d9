package compiled

import (
	"net/url"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

func TestRedirectLocation(t *testing.T) {
	cases := []struct {
		scheme, host string
		port         int
		path, query  string
		want         string
	}{
		{"http", "example.org", 80, "/a", "", "http://example.org/a"},
		{"http", "example.org", 0, "/a", "", "http://example.org/a"},
		{"http", "example.org", -1, "/a", "", "http://example.org/a"},
		{"http", "example.org", 443, "/a", "", "http://example.org:443/a"},
		{"http", "example.org", 8080, "/a", "", "http://example.org:8080/a"},
		{"https", "example.org", 443, "/a", "", "https://example.org/a"},
		{"https", "example.org", 80, "/a", "", "https://example.org:80/a"},
		{"https", "example.org", 8443, "/a", "q=1&r=2", "https://example.org:8443/a?q=1&r=2"},
		{"HTTPS", "example.org", 443, "/", "", "HTTPS://example.org/"},
		{"", "example.org", 80, "/", "", "http://example.org/"},
		{"ftp", "example.org", 21, "/", "", "ftp://example.org:21/"},
		{"http", "::1", 8080, "/x", "", "http://[::1]:8080/x"},
		{"http", "[::1]", 80, "/x", "", "http://[::1]/x"},
		{"https", "2001:db8::1", 443, "/", "a", "https://[2001:db8::1]/?a"},
		{"http", "10.0.0.1", 65535, "/", "", "http://10.0.0.1:65535/"},
		{"http", "example.org", 80, "", "", "http://example.org/"},
		{"http", "example.org", 80, "", "q", "http://example.org/?q"},
		{"http", "example.org", 80, "a/b", "", "http://example.org/a/b"},
		{"http", "example.org", 80, "//a", "", "http://example.org//a"},
		{"http", "example.org", 80, "/a%20b", "x=%2F", "http://example.org/a%20b?x=%2F"},
	}
	for _, c := range cases {
		got := redirectLocation(c.scheme, c.host, c.port, c.path, c.query)
		if got != c.want {
			t.Errorf("redirectLocation(%q, %q, %d, %q, %q) = %q, want %q", c.scheme, c.host, c.port, c.path, c.query, got, c.want)
		}
		if _, err := url.Parse(got); err != nil {
			t.Errorf("redirectLocation(...) = %q does not parse: %v", got, err)
		}
	}
}

func TestCompileRedirectErrors(t *testing.T) {
	cases := []struct {
		name    string
		r       *proxycfg.Redirect
		prefix  string
		wantErr string
	}{
		{"nil", nil, "/", "missing"},
		{"status 200", &proxycfg.Redirect{StatusCode: 200}, "/", "statusCode"},
		{"status 304", &proxycfg.Redirect{StatusCode: 304}, "/", "statusCode"},
		{"status 300", &proxycfg.Redirect{StatusCode: 300}, "/", "statusCode"},
		{"no status: the proxy applies no default", &proxycfg.Redirect{}, "/", "statusCode 0"},
		{"scheme ftp", &proxycfg.Redirect{StatusCode: 302, Scheme: "ftp"}, "/", "scheme"},
		{"scheme ws", &proxycfg.Redirect{StatusCode: 302, Scheme: "ws"}, "/", "scheme"},
		{"port negative", &proxycfg.Redirect{StatusCode: 302, Port: -1}, "/", "port"},
		{"port too big", &proxycfg.Redirect{StatusCode: 302, Port: 65536}, "/", "port"},
		{"host with port", &proxycfg.Redirect{StatusCode: 302, Hostname: "example.org:80"}, "/", "hostname"},
		{"host wildcard", &proxycfg.Redirect{StatusCode: 302, Hostname: "*.example.org"}, "/", "hostname"},
		{"host ipv6", &proxycfg.Redirect{StatusCode: 302, Hostname: "::1"}, "/", "hostname"},
		{"prefix without PathPrefix", &proxycfg.Redirect{StatusCode: 302, Path: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/x"}}, "", "PathPrefix"},
		{"full relative", &proxycfg.Redirect{StatusCode: 302, Path: &proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath, ReplaceFullPath: "x"}}, "/", "must begin"},
		{"unknown path type", &proxycfg.Redirect{StatusCode: 302, Path: &proxycfg.PathModifier{Type: "Regex"}}, "/", "unsupported type"},
	}
	for _, c := range cases {
		_, err := compileRedirect(c.r, c.prefix)
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: err = %v, want one containing %q", c.name, err, c.wantErr)
		}
	}
	for _, s := range []int{301, 302, 303, 307, 308} {
		if _, err := compileRedirect(&proxycfg.Redirect{StatusCode: s}, "/"); err != nil {
			t.Errorf("status %d: %v", s, err)
		}
	}
	for _, p := range []int{0, 1, 80, 65535} {
		if _, err := compileRedirect(&proxycfg.Redirect{StatusCode: 302, Port: p}, "/"); err != nil {
			t.Errorf("port %d: %v", p, err)
		}
	}
	for _, s := range []string{"", "http", "https", "HTTPS"} {
		if _, err := compileRedirect(&proxycfg.Redirect{StatusCode: 302, Scheme: s}, "/"); err != nil {
			t.Errorf("scheme %q: %v", s, err)
		}
	}
}

// redirectCase is one request through a redirect filter.
type redirectCase struct {
	name   string
	r      proxycfg.Redirect
	prefix string // the match's PathPrefix value

	scheme, host string // of the request
	listener     int
	path, query  string

	wantLoc    string
	wantStatus int
}

func runRedirectCases(t *testing.T, cases []redirectCase) {
	t.Helper()
	for _, c := range cases {
		rd, err := compileRedirect(&c.r, c.prefix)
		if err != nil {
			t.Errorf("%s: compileRedirect: %v", c.name, err)
			continue
		}
		loc, status := rd.Location(c.scheme, c.host, c.listener, c.path, c.query)
		if loc != c.wantLoc || status != c.wantStatus {
			t.Errorf("%s: location = %q, %d; want %q, %d", c.name, loc, status, c.wantLoc, c.wantStatus)
		}
	}
}

// The conformance suite sends its requests to the Gateway's address with
// Host set to it; redirTestGW is that address here.
const redirTestGW = "gw.example:80"

func TestRedirectConformanceHostAndStatus(t *testing.T) {
	runRedirectCases(t, []redirectCase{
		{name: "hostname-redirect", r: proxycfg.Redirect{StatusCode: 302, Hostname: "example.org"}, prefix: "/hostname-redirect",
			scheme: "http", host: redirTestGW, listener: 80, path: "/hostname-redirect",
			wantLoc: "http://example.org/hostname-redirect", wantStatus: 302},
		{name: "host-and-status", r: proxycfg.Redirect{Hostname: "example.org", StatusCode: 301}, prefix: "/host-and-status",
			scheme: "http", host: redirTestGW, listener: 80, path: "/host-and-status",
			wantLoc: "http://example.org/host-and-status", wantStatus: 301},
	})
}

func TestRedirectConformancePath(t *testing.T) {
	prefixPM := &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/replacement-prefix"}
	runRedirectCases(t, []redirectCase{
		{name: "original-prefix", r: proxycfg.Redirect{StatusCode: 302, Path: prefixPM}, prefix: "/original-prefix",
			scheme: "http", host: redirTestGW, listener: 80, path: "/original-prefix/lemon",
			wantLoc: "http://gw.example/replacement-prefix/lemon", wantStatus: 302},
		{name: "full", r: proxycfg.Redirect{StatusCode: 302, Path: &proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath, ReplaceFullPath: "/full-path-replacement"}}, prefix: "/full",
			scheme: "http", host: redirTestGW, listener: 80, path: "/full/path/original",
			wantLoc: "http://gw.example/full-path-replacement", wantStatus: 302},
		{name: "path-and-host", r: proxycfg.Redirect{StatusCode: 302, Hostname: "example.org", Path: prefixPM}, prefix: "/path-and-host",
			scheme: "http", host: redirTestGW, listener: 80, path: "/path-and-host",
			wantLoc: "http://example.org/replacement-prefix", wantStatus: 302},
		{name: "path-and-status", r: proxycfg.Redirect{Path: prefixPM, StatusCode: 301}, prefix: "/path-and-status",
			scheme: "http", host: redirTestGW, listener: 80, path: "/path-and-status",
			wantLoc: "http://gw.example/replacement-prefix", wantStatus: 301},
		{name: "full-path-and-host", r: proxycfg.Redirect{StatusCode: 302, Hostname: "example.org", Path: &proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath, ReplaceFullPath: "/replacement-full"}}, prefix: "/full-path-and-host",
			scheme: "http", host: redirTestGW, listener: 80, path: "/full-path-and-host",
			wantLoc: "http://example.org/replacement-full", wantStatus: 302},
		{name: "full-path-and-status", r: proxycfg.Redirect{StatusCode: 301, Path: &proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath, ReplaceFullPath: "/replacement-full"}}, prefix: "/full-path-and-status",
			scheme: "http", host: redirTestGW, listener: 80, path: "/full-path-and-status",
			wantLoc: "http://gw.example/replacement-full", wantStatus: 301},
		{name: "query kept", r: proxycfg.Redirect{StatusCode: 302, Path: prefixPM}, prefix: "/original-prefix",
			scheme: "http", host: redirTestGW, listener: 80, path: "/original-prefix/x", query: "a=1&b=%20",
			wantLoc: "http://gw.example/replacement-prefix/x?a=1&b=%20", wantStatus: 302},
	})
}

func TestRedirectConformancePort(t *testing.T) {
	runRedirectCases(t, []redirectCase{
		{name: "port", r: proxycfg.Redirect{StatusCode: 302, Port: 8083}, prefix: "/port",
			scheme: "http", host: redirTestGW, listener: 80, path: "/port",
			wantLoc: "http://gw.example:8083/port", wantStatus: 302},
		{name: "port-and-host", r: proxycfg.Redirect{StatusCode: 302, Port: 8083, Hostname: "example.org"}, prefix: "/port-and-host",
			scheme: "http", host: redirTestGW, listener: 80, path: "/port-and-host",
			wantLoc: "http://example.org:8083/port-and-host", wantStatus: 302},
		{name: "port-and-status", r: proxycfg.Redirect{Port: 8083, StatusCode: 301}, prefix: "/port-and-status",
			scheme: "http", host: redirTestGW, listener: 80, path: "/port-and-status",
			wantLoc: "http://gw.example:8083/port-and-status", wantStatus: 301},
		{name: "port-and-host-and-status", r: proxycfg.Redirect{Port: 8083, Hostname: "example.org", StatusCode: 302}, prefix: "/port-and-host-and-status",
			scheme: "http", host: redirTestGW, listener: 80, path: "/port-and-host-and-status",
			wantLoc: "http://example.org:8083/port-and-host-and-status", wantStatus: 302},
	})
}

func TestRedirectConformanceScheme(t *testing.T) {
	runRedirectCases(t, []redirectCase{
		{name: "scheme", r: proxycfg.Redirect{StatusCode: 302, Scheme: "https"}, prefix: "/scheme",
			scheme: "http", host: redirTestGW, listener: 80, path: "/scheme",
			wantLoc: "https://gw.example/scheme", wantStatus: 302},
		{name: "scheme-and-host", r: proxycfg.Redirect{StatusCode: 302, Scheme: "https", Hostname: "example.org"}, prefix: "/scheme-and-host",
			scheme: "http", host: redirTestGW, listener: 80, path: "/scheme-and-host",
			wantLoc: "https://example.org/scheme-and-host", wantStatus: 302},
		{name: "scheme-and-status", r: proxycfg.Redirect{Scheme: "https", StatusCode: 301}, prefix: "/scheme-and-status",
			scheme: "http", host: redirTestGW, listener: 80, path: "/scheme-and-status",
			wantLoc: "https://gw.example/scheme-and-status", wantStatus: 301},
		{name: "scheme-and-host-and-status", r: proxycfg.Redirect{Scheme: "https", StatusCode: 302, Hostname: "example.org"}, prefix: "/scheme-and-host-and-status",
			scheme: "http", host: redirTestGW, listener: 80, path: "/scheme-and-host-and-status",
			wantLoc: "https://example.org/scheme-and-host-and-status", wantStatus: 302},
	})
}

func TestRedirectConformancePortAndScheme(t *testing.T) {
	h := "example.org"
	cases := []redirectCase{}
	add := func(listener int, scheme, reqHost, path string, r proxycfg.Redirect, want string) {
		cases = append(cases, redirectCase{
			name: scheme + ":" + path, r: r, prefix: path,
			scheme: scheme, host: reqHost, listener: listener, path: path,
			wantLoc: want, wantStatus: 302,
		})
	}
	// Listener on port 80 (HTTP).
	add(80, "http", redirTestGW, "/scheme-nil-and-port-nil", proxycfg.Redirect{StatusCode: 302, Hostname: h}, "http://example.org/scheme-nil-and-port-nil")
	add(80, "http", redirTestGW, "/scheme-nil-and-port-80", proxycfg.Redirect{StatusCode: 302, Hostname: h, Port: 80}, "http://example.org/scheme-nil-and-port-80")
	add(80, "http", redirTestGW, "/scheme-nil-and-port-8080", proxycfg.Redirect{StatusCode: 302, Hostname: h, Port: 8080}, "http://example.org:8080/scheme-nil-and-port-8080")
	add(80, "http", redirTestGW, "/scheme-https-and-port-nil", proxycfg.Redirect{StatusCode: 302, Hostname: h, Scheme: "https"}, "https://example.org/scheme-https-and-port-nil")
	add(80, "http", redirTestGW, "/scheme-https-and-port-443", proxycfg.Redirect{StatusCode: 302, Hostname: h, Scheme: "https", Port: 443}, "https://example.org/scheme-https-and-port-443")
	add(80, "http", redirTestGW, "/scheme-https-and-port-8443", proxycfg.Redirect{StatusCode: 302, Hostname: h, Scheme: "https", Port: 8443}, "https://example.org:8443/scheme-https-and-port-8443")
	// Listener on port 8080 (HTTP).
	add(8080, "http", "gw.example:8080", "/scheme-nil-and-port-nil", proxycfg.Redirect{StatusCode: 302, Hostname: h}, "http://example.org:8080/scheme-nil-and-port-nil")
	add(8080, "http", "gw.example:8080", "/scheme-nil-and-port-80", proxycfg.Redirect{StatusCode: 302, Hostname: h, Port: 80}, "http://example.org/scheme-nil-and-port-80")
	add(8080, "http", "gw.example:8080", "/scheme-https-and-port-nil", proxycfg.Redirect{StatusCode: 302, Hostname: h, Scheme: "https"}, "https://example.org/scheme-https-and-port-nil")
	// Listener on port 443 (HTTPS).
	add(443, "https", "example.org", "/scheme-nil-and-port-nil", proxycfg.Redirect{StatusCode: 302, Hostname: h}, "https://example.org/scheme-nil-and-port-nil")
	add(443, "https", "example.org", "/scheme-nil-and-port-443", proxycfg.Redirect{StatusCode: 302, Hostname: h, Port: 443}, "https://example.org/scheme-nil-and-port-443")
	add(443, "https", "example.org", "/scheme-nil-and-port-8443", proxycfg.Redirect{StatusCode: 302, Hostname: h, Port: 8443}, "https://example.org:8443/scheme-nil-and-port-8443")
	add(443, "https", "example.org", "/scheme-http-and-port-nil", proxycfg.Redirect{StatusCode: 302, Hostname: h, Scheme: "http"}, "http://example.org/scheme-http-and-port-nil")
	add(443, "https", "example.org", "/scheme-http-and-port-80", proxycfg.Redirect{StatusCode: 302, Hostname: h, Scheme: "http", Port: 80}, "http://example.org/scheme-http-and-port-80")
	add(443, "https", "example.org", "/scheme-http-and-port-8080", proxycfg.Redirect{StatusCode: 302, Hostname: h, Scheme: "http", Port: 8080}, "http://example.org:8080/scheme-http-and-port-8080")
	runRedirectCases(t, cases)

	// The parts the conformance suite reads back with url.Parse.
	rd, err := compileRedirect(&proxycfg.Redirect{StatusCode: 302, Hostname: h, Port: 8443}, "/p")
	if err != nil {
		t.Fatal(err)
	}
	loc, _ := rd.Location("https", "example.org", 443, "/p", "")
	u, err := url.Parse(loc)
	if err != nil || u.Scheme != "https" || u.Hostname() != h || u.Port() != "8443" || u.Path != "/p" {
		t.Errorf("location %q parses as %+v, %v", loc, u, err)
	}
}

func TestRedirectPortRules(t *testing.T) {
	runRedirectCases(t, []redirectCase{
		// No port, no scheme: the listener's port, even when the client
		// used another scheme (the spec says listener port, and the caller
		// chooses what it passes).
		{name: "listener port", r: proxycfg.Redirect{StatusCode: 302}, prefix: "/", scheme: "https", host: "a.example", listener: 8443, path: "/x",
			wantLoc: "https://a.example:8443/x", wantStatus: 302},
		{name: "listener 443 https", r: proxycfg.Redirect{StatusCode: 302}, prefix: "/", scheme: "https", host: "a.example:443", listener: 443, path: "/x",
			wantLoc: "https://a.example/x", wantStatus: 302},
		{name: "listener 80 https shows port", r: proxycfg.Redirect{StatusCode: 302}, prefix: "/", scheme: "https", host: "a.example", listener: 80, path: "/x",
			wantLoc: "https://a.example:80/x", wantStatus: 302},
		{name: "listener unknown", r: proxycfg.Redirect{StatusCode: 302}, prefix: "/", scheme: "http", host: "a.example:1234", listener: 0, path: "/x",
			wantLoc: "http://a.example/x", wantStatus: 302},
		// Scheme set: its well-known port, not the listener's.
		{name: "scheme http from 8443", r: proxycfg.Redirect{StatusCode: 302, Scheme: "http"}, prefix: "/", scheme: "https", host: "a.example:8443", listener: 8443, path: "/x",
			wantLoc: "http://a.example/x", wantStatus: 302},
		{name: "scheme https from 8080", r: proxycfg.Redirect{StatusCode: 302, Scheme: "HTTPS"}, prefix: "/", scheme: "http", host: "a.example:8080", listener: 8080, path: "/x",
			wantLoc: "https://a.example/x", wantStatus: 302},
		// Port set: used whatever the scheme.
		{name: "port 80 on https", r: proxycfg.Redirect{StatusCode: 302, Scheme: "https", Port: 80}, prefix: "/", scheme: "http", host: "a.example", listener: 80, path: "/x",
			wantLoc: "https://a.example:80/x", wantStatus: 302},
		// Request scheme spelled oddly.
		{name: "request scheme upper", r: proxycfg.Redirect{StatusCode: 302}, prefix: "/", scheme: "HTTPS", host: "a.example", listener: 443, path: "/x",
			wantLoc: "https://a.example/x", wantStatus: 302},
		{name: "request scheme empty", r: proxycfg.Redirect{StatusCode: 302}, prefix: "/", scheme: "", host: "a.example", listener: 80, path: "/x",
			wantLoc: "http://a.example/x", wantStatus: 302},
		// Request hosts: ports dropped, IPv6 kept in brackets.
		{name: "ipv6 request host", r: proxycfg.Redirect{StatusCode: 302, Scheme: "https"}, prefix: "/", scheme: "http", host: "[2001:db8::1]:8080", listener: 8080, path: "/x",
			wantLoc: "https://[2001:db8::1]/x", wantStatus: 302},
		{name: "ipv6 request host and port", r: proxycfg.Redirect{StatusCode: 302, Port: 9000}, prefix: "/", scheme: "http", host: "[::1]", listener: 80, path: "/",
			wantLoc: "http://[::1]:9000/", wantStatus: 302},
		// Status codes.
		{name: "303", r: proxycfg.Redirect{StatusCode: 303}, prefix: "/", scheme: "http", host: "a", listener: 80, path: "/", wantLoc: "http://a/", wantStatus: 303},
		{name: "307", r: proxycfg.Redirect{StatusCode: 307}, prefix: "/", scheme: "http", host: "a", listener: 80, path: "/", wantLoc: "http://a/", wantStatus: 307},
		{name: "308", r: proxycfg.Redirect{StatusCode: 308}, prefix: "/", scheme: "http", host: "a", listener: 80, path: "/", wantLoc: "http://a/", wantStatus: 308},
	})
}
