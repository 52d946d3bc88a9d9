package hostile

// Request line and Host injection. The proxy writes an HTTP/1.1 request
// line and Host field from what the client sent; over HTTP/2 that is
// :method, :path and :authority, which are not delimited by spaces and
// which Go's HTTP/2 server checks only loosely: it resets a stream with a
// control byte other than tab in any value, a :path url.ParseRequestURI
// refuses (tab included), or an "@" in :authority, and lets spaces, tabs
// in :method and :authority, and any printable byte through. A :method
// of "GET /admin/secret.txt?" with :path "/public/index.txt" becomes the
// line "GET /admin/secret.txt? /public/index.txt HTTP/1.1": routed as
// /public, read by the backend as /admin. The proxy must refuse, before
// routing, a method that is not an RFC 9110 token, a target with a byte
// <= 0x20 or 0x7f, and an authority that is not an RFC 3986 host with an
// optional port: 400, or a stream reset by Go's HTTP/2 server. Whatever the
// client gets, the backend must only ever see "token SP target SP
// HTTP/1.1" and a Host it parses as a host.

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// publicOnly limits the route to PathPrefix /public: anything else must
// not reach the backend.
func publicOnly(r *proxycfg.Rule) {
	r.Matches = []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/public"}}}
}

// The HTTP/2 requests sent: each changes one pseudo-header of a request
// for /public/index.txt; an empty authority stands for the path's address.
var h2Injections = []struct{ name, method, target, authority string }{
	{"method/carries a target", "GET /admin/secret.txt?", "/public/index.txt", ""},
	{"method/carries a target and version", "GET /admin/secret.txt HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET", "/public/index.txt", ""},
	{"method/tab", "GET\t/admin/secret.txt?", "/public/index.txt", ""},
	{"method/slash", "GET/admin", "/public/index.txt", ""},
	{"method/NUL", "GET\x00", "/public/index.txt", ""},
	{"method/DEL", "GE\x7fT", "/public/index.txt", ""},
	{"target/space in path", "GET", "/public/index.txt /admin/secret.txt", ""},
	{"target/space and version in path", "GET", "/public/x HTTP/1.0", ""},
	{"target/space in query", "GET", "/public/x?a=b /admin/secret.txt", ""},
	{"target/tab in path", "GET", "/public/a\tb", ""},
	{"target/tab in query", "GET", "/public/x?a=\tb", ""},
	{"target/VT in query", "GET", "/public/x?a\x0bb", ""},
	{"target/DEL in path", "GET", "/public/a\x7fb", ""},
	{"target/DEL in query", "GET", "/public/x?\x7f", ""},
	{"target/NUL in path", "GET", "/public/a\x00b", ""},
	{"target/CRLF in path", "GET", "/public/a\r\nX-Injected: 1", ""},
	{"target/CRLF in query", "GET", "/public/x?a\r\nX-Injected: 1", ""},
	{"authority/space", "GET", "/public/index.txt", "example.com evil.example"},
	{"authority/tab", "GET", "/public/index.txt", "example.com\tevil.example"},
	{"authority/slash", "GET", "/public/index.txt", "example.com/admin"},
	{"authority/question mark", "GET", "/public/index.txt", "example.com?x"},
	{"authority/backslash", "GET", "/public/index.txt", "example.com\\evil.example"},
	{"authority/userinfo", "GET", "/public/index.txt", "user@example.com"},
	{"authority/CRLF", "GET", "/public/index.txt", "example.com\r\nX-Injected: 1"},
	{"authority/NUL", "GET", "/public/index.txt", "example.com\x00"},
}

// The HTTP/1.1 request heads sent: a request line and a Host value.
// net/http's server and the proxy's own refuse most of these already.
var h1Injections = []struct{ name, line, host string }{
	{"method/not a token", "GE(T /public/index.txt HTTP/1.1", ""},
	{"method/DEL", "GET\x7f /public/index.txt HTTP/1.1", ""},
	{"target/VT in path", "GET /public/a\x0bb HTTP/1.1", ""},
	{"target/DEL in path", "GET /public/a\x7fb HTTP/1.1", ""},
	{"target/DEL in query", "GET /public/x?a\x7fb HTTP/1.1", ""},
	{"host/slash", "GET /public/index.txt HTTP/1.1", "example.com/admin"},
	{"host/userinfo", "GET /public/index.txt HTTP/1.1", "user@example.com"},
}

func TestRequestLineInjection(t *testing.T) {
	be := newBackend(t)
	e := newEnv(t, be.addr, withRule(publicOnly))

	e.each(func(t *testing.T, p path) {
		t.Run("control", func(t *testing.T) {
			n := len(be.requests())
			s := h2dial(t, p.dial(t)).open(p.request("GET", "/public/index.txt?a=b", p.addr), true).result(t)
			if s.status != 200 {
				t.Fatalf("a valid request got %v, want 200", s)
			}
			got := be.since(n)
			checkForwarded(t, got)
			if len(got) != 1 || got[0].line != "GET /public/index.txt?a=b HTTP/1.1" {
				t.Fatalf("backend got %q, want the one line GET /public/index.txt?a=b HTTP/1.1", lines(got))
			}
		})
		for _, tc := range h2Injections {
			t.Run(tc.name, func(t *testing.T) {
				authority := tc.authority
				if authority == "" {
					authority = p.addr
				}
				n := len(be.requests())
				s := h2dial(t, p.dial(t)).open(p.request(tc.method, tc.target, authority), true).result(t)
				checkForwarded(t, be.since(n))
				t.Logf("got %v", s)
				if s.status != 400 && !s.refused() {
					t.Errorf(":method %q :path %q :authority %q: got %v, want 400 or a reset", tc.method, tc.target, authority, s)
				}
			})
		}
	}, onH2)

	e.each(func(t *testing.T, p path) {
		t.Run("control", func(t *testing.T) {
			c := p.dial(t)
			defer c.Close()
			res, body, err := exchange1(c, []byte("GET /public/index.txt?a=b HTTP/1.1\r\nHost: "+p.addr+"\r\nConnection: close\r\n\r\n"), "GET")
			if err != nil || res.StatusCode != 200 {
				t.Fatalf("a valid request got %v %q, want 200", err, body)
			}
		})
		for _, tc := range h1Injections {
			t.Run(tc.name, func(t *testing.T) {
				host := tc.host
				if host == "" {
					host = p.addr
				}
				n := len(be.requests())
				c := p.dial(t)
				defer c.Close()
				res, body, err := exchange1(c, []byte(tc.line+"\r\nHost: "+host+"\r\nConnection: close\r\n\r\n"), "GET")
				checkForwarded(t, be.since(n))
				if err != nil {
					t.Fatalf("%q, Host %q: %v", tc.line, host, err)
				}
				if res.StatusCode != 400 {
					t.Errorf("%q, Host %q: got %d %q, want 400", tc.line, host, res.StatusCode, truncated(string(body)))
				}
			})
		}
	}, onH1)
}

// checkForwarded fails the test for a request that reached the backend
// with a request line that is not "token SP target SP HTTP/1.1", or a Host
// that is not one RFC 3986 host with an optional port.
func checkForwarded(t *testing.T, reqs []rawRequest) {
	t.Helper()
	for _, r := range reqs {
		if !validRequestLine(r.line) {
			t.Errorf("the backend received the request line %q", r.line)
		}
		if h, ok := r.host(); !ok || !validHost(h) {
			t.Errorf("the backend received %q with the Host fields %q", r.line, r.values("host"))
		}
	}
}

// validRequestLine reports whether line is method SP target SP HTTP/1.1
// with a token method and a target free of controls and spaces.
func validRequestLine(line string) bool {
	parts := strings.Split(line, " ")
	if len(parts) != 3 || parts[2] != "HTTP/1.1" || !isToken(parts[0]) || parts[1] == "" {
		return false
	}
	for _, c := range []byte(parts[1]) {
		if c <= 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// validHost reports whether h is uri-host [":" port] (RFC 9110 §7.2,
// RFC 3986 §3.2.2): an IP literal, or a reg-name (IPv4 addresses are
// reg-names too).
func validHost(h string) bool {
	host, port := h, ""
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasSuffix(h, "]") {
		host, port = h[:i], h[i+1:]
	}
	for _, c := range []byte(port) {
		if c < '0' || c > '9' {
			return false
		}
	}
	if strings.HasPrefix(host, "[") {
		a, err := netip.ParseAddr(strings.TrimSuffix(host[1:], "]"))
		return strings.HasSuffix(host, "]") && err == nil && a.Is6() && a.Zone() == ""
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-._~!$&'()*+,;=", c) >= 0:
		case c == '%' && i+2 < len(host) && isHexDigit(host[i+1]) && isHexDigit(host[i+2]):
			i += 2
		default:
			return false
		}
	}
	return true
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// lines are the request lines of reqs, for messages.
func lines(reqs []rawRequest) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.line)
	}
	return out
}
