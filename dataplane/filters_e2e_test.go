package dataplane

// End-to-end tests of route filters, forwarding headers and weighted
// backends: every request goes from a real client through the proxy's
// listeners to real loopback backends.

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testnet"
)

// feValues returns every value of header name in an echo body, in the
// order the backend saw them.
func feValues(body, name string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			out = append(out, v)
		}
	}
	return out
}

// feSend sends a request to http://addr+path with the given Host and
// header pairs and returns the response with its body read.
func feSend(t *testing.T, c *http.Client, method, addr, host, path string, body io.Reader, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return res, string(b)
}

// feRaw writes raw, a whole HTTP/1.1 request, on a new connection to
// addr and reads one response.
func feRaw(t *testing.T, addr, raw string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading response: %v", err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return res, string(b)
}

// feRawBackend is an HTTP/1.1 backend that reads each request (skipping
// its body) and answers with the bytes of resp, a whole response, on
// kept-alive connections.
func feRawBackend(t *testing.T, resp string) string {
	return testnet.RawServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if _, err := io.WriteString(c, resp); err != nil {
				return
			}
		}
	})
}

// fePrefix is a match list of one PathPrefix match.
func fePrefix(p string) []proxycfg.Match {
	return []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: p}}}
}

func feReqMod(m proxycfg.HeaderModifier) proxycfg.Filter {
	return proxycfg.Filter{Type: proxycfg.FilterRequestHeaderModifier, RequestHeaderModifier: &m}
}

func feRespMod(m proxycfg.HeaderModifier) proxycfg.Filter {
	return proxycfg.Filter{Type: proxycfg.FilterResponseHeaderModifier, ResponseHeaderModifier: &m}
}

func feHdrs(kv ...string) []proxycfg.Header {
	var out []proxycfg.Header
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, proxycfg.Header{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

// feCluster makes a cluster of one backend of the given protocol.
func feCluster(t *testing.T, name, proto string, h http.HandlerFunc) proxycfg.Cluster {
	t.Helper()
	var addr string
	if proto == proxycfg.ProtoH2C {
		addr = h2cBackend(t, h)
	} else {
		addr = startBackend(t, h)
	}
	c := cluster(name, addr)
	c.Protocol = proto
	return c
}

func TestE2ERequestHeaderModifier(t *testing.T) {
	for _, proto := range []string{proxycfg.ProtoHTTP1, proxycfg.ProtoH2C} {
		t.Run(proto, func(t *testing.T) {
			rule := func(path string, filters ...proxycfg.Filter) proxycfg.Rule {
				r := to("a")
				r.Matches = fePrefix(path)
				r.Filters = filters
				return r
			}
			backendRule := rule("/backend",
				feReqMod(proxycfg.HeaderModifier{Set: feHdrs("X-Order", "rule"), Remove: []string{"X-Z"}, Add: feHdrs("X-Both", "rule")}))
			backendRule.Backends[0].Filters = []proxycfg.Filter{
				feReqMod(proxycfg.HeaderModifier{Set: feHdrs("X-Order", "backend"), Add: feHdrs("X-Z", "backend", "X-Both", "backend")}),
			}
			cfg := config([]proxycfg.Route{route("r",
				rule("/set", feReqMod(proxycfg.HeaderModifier{Set: feHdrs("X-Set", "new")})),
				rule("/add", feReqMod(proxycfg.HeaderModifier{Add: feHdrs("X-Add", "added")})),
				rule("/remove", feReqMod(proxycfg.HeaderModifier{Remove: []string{"X-Rm"}})),
				// Within one modifier: Set, then Add, then Remove.
				rule("/within", feReqMod(proxycfg.HeaderModifier{
					Set:    feHdrs("X-Sa", "set", "X-Sr", "set"),
					Add:    feHdrs("X-Sa", "add", "X-Sr", "add"),
					Remove: []string{"X-Sr"},
				})),
				// Several modifiers, applied in order.
				rule("/compose",
					feReqMod(proxycfg.HeaderModifier{Set: feHdrs("X-C", "first"), Add: feHdrs("X-D", "d1")}),
					feReqMod(proxycfg.HeaderModifier{Set: feHdrs("X-C", "second"), Remove: []string{"X-D"}}),
					feReqMod(proxycfg.HeaderModifier{Add: feHdrs("X-D", "d3", "X-C", "third")}),
				),
				backendRule,
				rule("/case", feReqMod(proxycfg.HeaderModifier{
					Set:    feHdrs("x-mixed-CASE", "set"),
					Add:    feHdrs("X-ADD-case", "added"),
					Remove: []string{"x-REMOVE-me"},
				})),
			)}, feCluster(t, "a", proto, echo("a")))
			e := newTestEnv(t, cfg)

			for _, tc := range []struct {
				path string
				send []string            // header pairs the client sends
				want map[string][]string // values the backend must see (nil: absent)
			}{
				{"/set", []string{"X-Set", "old", "X-Other", "o"}, map[string][]string{"X-Set": {"new"}, "X-Other": {"o"}}},
				{"/set", nil, map[string][]string{"X-Set": {"new"}}},
				{"/add", []string{"X-Add", "client"}, map[string][]string{"X-Add": {"client", "added"}}},
				{"/add", nil, map[string][]string{"X-Add": {"added"}}},
				{"/remove", []string{"X-Rm", "secret", "X-Other", "o"}, map[string][]string{"X-Rm": nil, "X-Other": {"o"}}},
				{"/within", []string{"X-Sa", "client", "X-Sr", "client"}, map[string][]string{"X-Sa": {"set", "add"}, "X-Sr": nil}},
				{"/compose", []string{"X-C", "client", "X-D", "client"}, map[string][]string{"X-C": {"second", "third"}, "X-D": {"d3"}}},
				{"/backend", []string{"X-Order", "client", "X-Z", "client", "X-Both", "client"},
					map[string][]string{"X-Order": {"backend"}, "X-Z": {"backend"}, "X-Both": {"client", "rule", "backend"}}},
				{"/case", []string{"X-Mixed-Case", "client", "X-Add-Case", "client", "X-Remove-Me", "client"},
					map[string][]string{"X-Mixed-Case": {"set"}, "X-Add-Case": {"client", "added"}, "X-Remove-Me": nil}},
			} {
				for _, via := range []struct {
					name string
					c    *http.Client
					addr string
				}{{"h1-origin", e.client, e.bound.Origin}, {"h2c-plain", e.h2c, e.bound.Plain}} {
					res, body := feSend(t, via.c, "GET", via.addr, "app.example.com", tc.path, nil, tc.send...)
					if res.StatusCode != 200 {
						t.Fatalf("%s %s: status %d: %s", via.name, tc.path, res.StatusCode, body)
					}
					for name, want := range tc.want {
						if got := feValues(body, name); !slices.Equal(got, want) {
							t.Errorf("%s %s (client sent %q): backend saw %s = %q, want %q", via.name, tc.path, tc.send, name, got, want)
						}
					}
				}
			}
		})
	}
}

func TestE2EHeaderModifierRejectsManagedHeaders(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header string
		filter func(name string) proxycfg.Filter
		onBE   bool
	}{
		{"set Host", "Host", func(n string) proxycfg.Filter { return feReqMod(proxycfg.HeaderModifier{Set: feHdrs(n, "evil")}) }, false},
		{"set host lower case", "host", func(n string) proxycfg.Filter { return feReqMod(proxycfg.HeaderModifier{Set: feHdrs(n, "evil")}) }, false},
		{"add Content-Length", "Content-Length", func(n string) proxycfg.Filter { return feReqMod(proxycfg.HeaderModifier{Add: feHdrs(n, "5")}) }, false},
		{"remove content-length", "content-length", func(n string) proxycfg.Filter { return feReqMod(proxycfg.HeaderModifier{Remove: []string{n}}) }, false},
		{"set Connection", "Connection", func(n string) proxycfg.Filter { return feReqMod(proxycfg.HeaderModifier{Set: feHdrs(n, "close")}) }, false},
		{"remove CONNECTION", "CONNECTION", func(n string) proxycfg.Filter { return feReqMod(proxycfg.HeaderModifier{Remove: []string{n}}) }, false},
		{"response set Content-Length", "Content-Length", func(n string) proxycfg.Filter { return feRespMod(proxycfg.HeaderModifier{Set: feHdrs(n, "1")}) }, false},
		{"response add Connection", "Connection", func(n string) proxycfg.Filter { return feRespMod(proxycfg.HeaderModifier{Add: feHdrs(n, "close")}) }, false},
		{"backend set Host", "Host", func(n string) proxycfg.Filter { return feReqMod(proxycfg.HeaderModifier{Set: feHdrs(n, "evil")}) }, true},
		{"backend response remove Connection", "Connection", func(n string) proxycfg.Filter { return feRespMod(proxycfg.HeaderModifier{Remove: []string{n}}) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := to("a")
			if tc.onBE {
				r.Backends[0].Filters = []proxycfg.Filter{tc.filter(tc.header)}
			} else {
				r.Filters = []proxycfg.Filter{tc.filter(tc.header)}
			}
			p := New(Options{Log: feQuietLog()})
			err := p.Load(config([]proxycfg.Route{route("r", r)}, cluster("a", "127.0.0.1:1")))
			if err == nil {
				t.Fatalf("Load accepted a modifier of %s", tc.header)
			}
			msg := err.Error()
			if !strings.Contains(msg, fmt.Sprintf("%q", tc.header)) || !strings.Contains(msg, "managed by the proxy") {
				t.Errorf("error does not name the header %q and say why:\n%v", tc.header, err)
			}
			if p.Ready() {
				t.Errorf("a rejected config is being served")
			}
		})
	}
	// The same modifiers of an ordinary header are accepted.
	r := to("a")
	r.Filters = []proxycfg.Filter{feReqMod(proxycfg.HeaderModifier{Set: feHdrs("X-Host", "h"), Remove: []string{"X-Content-Length"}})}
	if err := New(Options{Log: feQuietLog()}).Load(config([]proxycfg.Route{route("r", r)}, cluster("a", "127.0.0.1:1"))); err != nil {
		t.Errorf("Load rejected ordinary headers: %v", err)
	}
}

func TestE2EResponseHeaderModifier(t *testing.T) {
	backend := func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/plain")
		for _, n := range []string{"X-Set", "X-Add", "X-Rm", "X-Order", "X-Be-Rm", "X-Keep"} {
			h.Set(n, "backend")
		}
		io.WriteString(w, "hello")
	}
	for _, proto := range []string{proxycfg.ProtoHTTP1, proxycfg.ProtoH2C} {
		t.Run(proto, func(t *testing.T) {
			rule := func(path string, filters ...proxycfg.Filter) proxycfg.Rule {
				r := to("a")
				r.Matches = fePrefix(path)
				r.Filters = filters
				return r
			}
			beRule := rule("/backend", feRespMod(proxycfg.HeaderModifier{Set: feHdrs("X-Order", "rule"), Add: feHdrs("X-Be-Rm", "rule")}))
			beRule.Backends[0].Filters = []proxycfg.Filter{
				feRespMod(proxycfg.HeaderModifier{Set: feHdrs("X-Order", "backend-filter"), Remove: []string{"x-be-rm"}, Add: feHdrs("X-New", "be")}),
			}
			cfg := config([]proxycfg.Route{route("r",
				rule("/filters",
					feRespMod(proxycfg.HeaderModifier{Set: feHdrs("x-set", "proxy", "X-Fresh", "fresh"), Add: feHdrs("X-Add", "proxy"), Remove: []string{"X-RM"}}),
					feRespMod(proxycfg.HeaderModifier{Add: feHdrs("X-Fresh", "second")}),
				),
				beRule,
			)}, feCluster(t, "a", proto, backend))
			e := newTestEnv(t, cfg)
			for _, tc := range []struct {
				path string
				want map[string][]string
			}{
				{"/filters", map[string][]string{
					"X-Set": {"proxy"}, "X-Add": {"backend", "proxy"}, "X-Rm": nil,
					"X-Fresh": {"fresh", "second"}, "X-Keep": {"backend"},
				}},
				{"/backend", map[string][]string{
					"X-Order": {"backend-filter"}, "X-Be-Rm": nil, "X-New": {"be"}, "X-Keep": {"backend"},
				}},
			} {
				for _, via := range []struct {
					name string
					c    *http.Client
					addr string
				}{{"h1-origin", e.client, e.bound.Origin}, {"h2c-plain", e.h2c, e.bound.Plain}} {
					res, body := feSend(t, via.c, "GET", via.addr, "app.example.com", tc.path, nil)
					if res.StatusCode != 200 || body != "hello" {
						t.Fatalf("%s %s: status %d, body %q", via.name, tc.path, res.StatusCode, body)
					}
					for name, want := range tc.want {
						if got := res.Header[name]; !slices.Equal(got, want) {
							t.Errorf("%s %s: client got %s = %q, want %q", via.name, tc.path, name, got, want)
						}
					}
				}
			}
		})
	}
}

func TestE2EForwardingHeaders(t *testing.T) {
	be := startBackend(t, echo("a"))
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", be)))
	sent := []string{
		"X-Forwarded-For", "203.0.113.7",
		"X-Forwarded-Proto", "https",
		"Cf-Connecting-Ip", "203.0.113.7",
		"X-Real-Ip", "203.0.113.8",
		"Forwarded", "for=203.0.113.9",
		"X-Plain", "p",
	}
	for _, tc := range []struct {
		name string
		c    *http.Client
		addr string
		want map[string]string
	}{
		{"origin (trusted)", e.client, e.bound.Origin, map[string]string{
			"X-Forwarded-For": "203.0.113.7, 127.0.0.1", "X-Forwarded-Proto": "https",
			"Cf-Connecting-Ip": "203.0.113.7", "X-Real-Ip": "203.0.113.8", "Forwarded": "for=203.0.113.9", "X-Plain": "p",
		}},
		{"plain h1 (untrusted)", e.client, e.bound.Plain, map[string]string{
			"X-Forwarded-For": "127.0.0.1", "X-Forwarded-Proto": "http",
			"Cf-Connecting-Ip": "", "X-Real-Ip": "", "Forwarded": "", "X-Plain": "p",
		}},
		{"plain h2c (untrusted)", e.h2c, e.bound.Plain, map[string]string{
			"X-Forwarded-For": "127.0.0.1", "X-Forwarded-Proto": "http",
			"Cf-Connecting-Ip": "", "X-Real-Ip": "", "Forwarded": "", "X-Plain": "p",
		}},
	} {
		res, body := feSend(t, tc.c, "GET", tc.addr, "app.example.com", "/", nil, sent...)
		if res.StatusCode != 200 {
			t.Fatalf("%s: status %d: %s", tc.name, res.StatusCode, body)
		}
		for name, want := range tc.want {
			got := feValues(body, name)
			if want == "" && len(got) != 0 || want != "" && !slices.Equal(got, []string{want}) {
				t.Errorf("%s: backend saw %s = %q, want %q", tc.name, name, got, want)
			}
		}
	}

	// Several X-Forwarded-For fields from a trusted peer keep their order.
	_, body := feSend(t, e.client, "GET", e.bound.Origin, "app.example.com", "/", nil,
		"X-Forwarded-For", "203.0.113.7", "X-Forwarded-For", "198.51.100.1")
	if got := feValues(body, "X-Forwarded-For"); !slices.Equal(got, []string{"203.0.113.7, 198.51.100.1, 127.0.0.1"}) {
		t.Errorf("X-Forwarded-For = %q", got)
	}
	// An X-Forwarded-Proto the proxy does not know is replaced by the
	// listener's scheme.
	_, body = feSend(t, e.client, "GET", e.bound.Origin, "app.example.com", "/", nil, "X-Forwarded-Proto", "gopher")
	if got := feValues(body, "X-Forwarded-Proto"); !slices.Equal(got, []string{"http"}) {
		t.Errorf("X-Forwarded-Proto = %q, want [http]", got)
	}
}

func TestE2EHopByHopRequestHeaders(t *testing.T) {
	be := startBackend(t, echo("a"))
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", be)))
	for _, addr := range []string{e.bound.Origin, e.bound.Plain} {
		res, body := feRaw(t, addr, "GET /hop HTTP/1.1\r\n"+
			"Host: app.example.com\r\n"+
			"Connection: keep-alive, X-Hop1\r\n"+
			"Connection: x-hop2\r\n"+
			"X-Hop1: a\r\n"+
			"X-Hop2: b\r\n"+
			"Keep-Alive: timeout=5\r\n"+
			"Proxy-Authorization: Basic Zm9vOmJhcg==\r\n"+
			"Proxy-Connection: keep-alive\r\n"+
			"Te: gzip\r\n"+
			"Upgrade: foo/1\r\n"+
			"Authorization: Bearer end-to-end\r\n"+
			"X-End: kept\r\n"+
			"\r\n")
		if res.StatusCode != 200 {
			t.Fatalf("status %d: %s", res.StatusCode, body)
		}
		for _, name := range []string{"Connection", "X-Hop1", "X-Hop2", "Keep-Alive", "Proxy-Authorization", "Proxy-Connection", "Te", "Upgrade"} {
			if got := feValues(body, name); len(got) != 0 {
				t.Errorf("via %s: hop-by-hop %s = %q reached the backend", addr, name, got)
			}
		}
		for name, want := range map[string]string{"X-End": "kept", "Authorization": "Bearer end-to-end"} {
			if got := feValues(body, name); !slices.Equal(got, []string{want}) {
				t.Errorf("via %s: %s = %q, want %q", addr, name, got, want)
			}
		}
	}
}

func TestE2EHopByHopResponseHeaders(t *testing.T) {
	be := feRawBackend(t, "HTTP/1.1 200 OK\r\n"+
		"Connection: X-Secret, x-other-secret\r\n"+
		"X-Secret: s\r\n"+
		"X-Other-Secret: s2\r\n"+
		"Keep-Alive: timeout=5\r\n"+
		"Proxy-Authenticate: Basic\r\n"+
		"X-Public: p\r\n"+
		"Content-Length: 2\r\n"+
		"\r\nok")
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", be)))
	for range 2 { // the second goes over a pooled connection
		res, body := e.get("app.example.com", "/")
		if res.StatusCode != 200 || body != "ok" {
			t.Fatalf("status %d, body %q", res.StatusCode, body)
		}
		for _, name := range []string{"X-Secret", "X-Other-Secret", "Keep-Alive", "Proxy-Authenticate"} {
			if v, ok := res.Header[name]; ok {
				t.Errorf("hop-by-hop %s = %q reached the client", name, v)
			}
		}
		for _, v := range res.Header["Connection"] {
			if strings.Contains(strings.ToLower(v), "secret") {
				t.Errorf("the backend's Connection %q reached the client", v)
			}
		}
		if got := res.Header.Get("X-Public"); got != "p" {
			t.Errorf("X-Public = %q", got)
		}
	}
}

// TestE2EResponseConnectionEveryField: a backend may send the Connection
// header as several fields, which RFC 9110 §5.3 makes one list; a header
// named in any of them is hop-by-hop. (It was a bug: only the last
// Connection field was honoured.)
func TestE2EResponseConnectionEveryField(t *testing.T) {
	be := feRawBackend(t, "HTTP/1.1 200 OK\r\n"+
		"Connection: X-First\r\n"+
		"Connection: X-Second\r\n"+
		"X-First: 1\r\n"+
		"X-Second: 2\r\n"+
		"X-Public: p\r\n"+
		"Content-Length: 2\r\n"+
		"\r\nok")
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", be)))
	res, body := e.get("app.example.com", "/")
	if res.StatusCode != 200 || body != "ok" {
		t.Fatalf("status %d, body %q", res.StatusCode, body)
	}
	for _, name := range []string{"X-First", "X-Second"} {
		if v, ok := res.Header[name]; ok {
			t.Errorf("%s = %q, named in the backend's Connection header, reached the client", name, v)
		}
	}
	if got := res.Header.Get("X-Public"); got != "p" {
		t.Errorf("X-Public = %q", got)
	}
}

func TestE2ERequestRedirect(t *testing.T) {
	redirectRule := func(path string, rd proxycfg.Redirect, more ...proxycfg.Filter) proxycfg.Rule {
		return proxycfg.Rule{
			Matches: fePrefix(path),
			Filters: append([]proxycfg.Filter{{Type: proxycfg.FilterRequestRedirect, RequestRedirect: &rd}}, more...),
		}
	}
	full := func(p string) *proxycfg.PathModifier {
		return &proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath, ReplaceFullPath: p}
	}
	prefix := func(p string) *proxycfg.PathModifier {
		return &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: p}
	}
	hits := atomic.Int64{}
	be := startBackend(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	cfg := config([]proxycfg.Route{route("r",
		redirectRule("/keep", proxycfg.Redirect{StatusCode: 302}),
		redirectRule("/to-https", proxycfg.Redirect{StatusCode: 302, Scheme: "https"}),
		redirectRule("/to-http", proxycfg.Redirect{StatusCode: 302, Scheme: "HTTP"}),
		redirectRule("/host", proxycfg.Redirect{StatusCode: 302, Hostname: "other.example.com"}),
		redirectRule("/port", proxycfg.Redirect{StatusCode: 302, Scheme: "https", Port: 8443}),
		redirectRule("/port-only", proxycfg.Redirect{StatusCode: 302, Port: 8080}),
		redirectRule("/port-default", proxycfg.Redirect{StatusCode: 302, Scheme: "http", Port: 80}),
		redirectRule("/full", proxycfg.Redirect{StatusCode: 302, Path: full("/new/place")}),
		redirectRule("/prefix", proxycfg.Redirect{StatusCode: 302, Path: prefix("/moved")}),
		redirectRule("/strip", proxycfg.Redirect{StatusCode: 302, Path: prefix("/")}),
		redirectRule("/all", proxycfg.Redirect{Scheme: "https", Hostname: "new.example.com", Port: 9443, Path: prefix("/v2"), StatusCode: 301}),
		redirectRule("/s301", proxycfg.Redirect{StatusCode: 301}),
		redirectRule("/s302", proxycfg.Redirect{StatusCode: 302}),
		redirectRule("/s303", proxycfg.Redirect{StatusCode: 303}),
		redirectRule("/s307", proxycfg.Redirect{StatusCode: 307}),
		redirectRule("/s308", proxycfg.Redirect{StatusCode: 308}),
		redirectRule("/with-header", proxycfg.Redirect{StatusCode: 302}, feRespMod(proxycfg.HeaderModifier{Set: feHdrs("X-Redirected", "yes")})),
	)}, cluster("a", be))
	e := newTestEnv(t, cfg)

	for _, tc := range []struct {
		path   string
		plain  bool   // send to the untrusted plain listener
		xfp    string // X-Forwarded-Proto the client sends
		host   string
		status int
		loc    string
		header [2]string
	}{
		{path: "/keep/a?q=1", status: 302, loc: "http://app.example.com/keep/a?q=1"},
		{path: "/keep/a?q=1", xfp: "https", status: 302, loc: "https://app.example.com/keep/a?q=1"},
		{path: "/keep/a?q=1", xfp: "https", plain: true, status: 302, loc: "http://app.example.com/keep/a?q=1"},
		{path: "/keep", host: "app.example.com:8080", status: 302, loc: "http://app.example.com/keep"},
		{path: "/to-https/x?a=b&c", status: 302, loc: "https://app.example.com/to-https/x?a=b&c"},
		{path: "/to-http/x", xfp: "https", status: 302, loc: "http://app.example.com/to-http/x"},
		{path: "/host/y?z", status: 302, loc: "http://other.example.com/host/y?z"},
		{path: "/host/y?z", xfp: "https", status: 302, loc: "https://other.example.com/host/y?z"},
		{path: "/port/p", status: 302, loc: "https://app.example.com:8443/port/p"},
		{path: "/port-only/p", xfp: "https", status: 302, loc: "https://app.example.com:8080/port-only/p"},
		{path: "/port-default/p", status: 302, loc: "http://app.example.com/port-default/p"},
		{path: "/full/deep/path?keep=me", status: 302, loc: "http://app.example.com/new/place?keep=me"},
		{path: "/prefix/a/b?x=1", status: 302, loc: "http://app.example.com/moved/a/b?x=1"},
		{path: "/prefix", status: 302, loc: "http://app.example.com/moved"},
		{path: "/strip/a", status: 302, loc: "http://app.example.com/a"},
		{path: "/all/thing?q=%20x", status: 301, loc: "https://new.example.com:9443/v2/thing?q=%20x"},
		{path: "/s301", status: 301, loc: "http://app.example.com/s301"},
		{path: "/s302", status: 302, loc: "http://app.example.com/s302"},
		{path: "/s303?a", status: 303, loc: "http://app.example.com/s303?a"},
		{path: "/s307", status: 307, loc: "http://app.example.com/s307"},
		{path: "/s308", xfp: "https", status: 308, loc: "https://app.example.com/s308"},
		{path: "/with-header", status: 302, loc: "http://app.example.com/with-header", header: [2]string{"X-Redirected", "yes"}},
	} {
		host := tc.host
		if host == "" {
			host = "app.example.com"
		}
		addr := e.bound.Origin
		if tc.plain {
			addr = e.bound.Plain
		}
		var hdr []string
		if tc.xfp != "" {
			hdr = []string{"X-Forwarded-Proto", tc.xfp}
		}
		res, body := feSend(t, e.client, "GET", addr, host, tc.path, nil, hdr...)
		if res.StatusCode != tc.status {
			t.Errorf("%s (xfp %q, plain %v): status %d, want %d: %s", tc.path, tc.xfp, tc.plain, res.StatusCode, tc.status, body)
		}
		if got := res.Header.Get("Location"); got != tc.loc {
			t.Errorf("%s (xfp %q, plain %v): Location %q, want %q", tc.path, tc.xfp, tc.plain, got, tc.loc)
		}
		if tc.header[0] != "" {
			if got := res.Header.Get(tc.header[0]); got != tc.header[1] {
				t.Errorf("%s: %s = %q, want %q", tc.path, tc.header[0], got, tc.header[1])
			}
		}
	}
	// "/prefixed" is not under "/prefix" (PathPrefix matches whole
	// segments), and no other rule matches it.
	if res, _ := e.get("app.example.com", "/prefixed"); res.StatusCode != 404 {
		t.Errorf("/prefixed: status %d, want 404", res.StatusCode)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the backend got %d requests; redirects must be answered by the proxy", n)
	}
}

func TestE2EURLRewrite(t *testing.T) {
	be := startBackend(t, echo("a"))
	rewriteRule := func(matches []proxycfg.Match, rw proxycfg.Rewrite) proxycfg.Rule {
		r := to("a")
		r.Matches = matches
		r.Filters = []proxycfg.Filter{{Type: proxycfg.FilterURLRewrite, URLRewrite: &rw}}
		return r
	}
	multi := []proxycfg.Match{
		{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/one"}},
		{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/two/deep/"}},
		{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/three"}, Method: "POST"},
	}
	cfg := config([]proxycfg.Route{route("r",
		rewriteRule(fePrefix("/host"), proxycfg.Rewrite{Hostname: "internal.svc.local"}),
		rewriteRule(fePrefix("/full"), proxycfg.Rewrite{Path: &proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath, ReplaceFullPath: "/replaced"}}),
		rewriteRule(multi, proxycfg.Rewrite{Path: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/backend"}}),
		rewriteRule(fePrefix("/strip"), proxycfg.Rewrite{Path: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/"}}),
		rewriteRule(fePrefix("/both"), proxycfg.Rewrite{Hostname: "both.example.com", Path: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/b"}}),
	)}, cluster("a", be))
	e := newTestEnv(t, cfg)
	for _, tc := range []struct {
		method, path string
		target, host string
	}{
		{"GET", "/host/x?q=1", "/host/x?q=1", "internal.svc.local"},
		{"GET", "/full/a/b?keep=1&x=%2F", "/replaced?keep=1&x=%2F", "app.example.com"},
		{"GET", "/full", "/replaced", "app.example.com"},
		{"GET", "/one/x?q=1", "/backend/x?q=1", "app.example.com"},
		{"GET", "/one", "/backend", "app.example.com"},
		{"GET", "/two/deep/y?q=2", "/backend/y?q=2", "app.example.com"},
		{"GET", "/two/deep", "/backend", "app.example.com"},
		{"GET", "/two/deep/", "/backend/", "app.example.com"},
		{"POST", "/three/z", "/backend/z", "app.example.com"},
		{"GET", "/strip/a/b?c", "/a/b?c", "app.example.com"},
		{"GET", "/strip", "/", "app.example.com"},
		{"GET", "/both/thing?x", "/b/thing?x", "both.example.com"},
	} {
		res, body := feSend(t, e.client, tc.method, e.bound.Origin, "app.example.com", tc.path, nil)
		if res.StatusCode != 200 {
			t.Errorf("%s %s: status %d: %s", tc.method, tc.path, res.StatusCode, body)
			continue
		}
		if got := echoed(body, "target"); got != tc.target {
			t.Errorf("%s %s: backend target %q, want %q", tc.method, tc.path, got, tc.target)
		}
		if got := echoed(body, "host"); got != tc.host {
			t.Errorf("%s %s: backend Host %q, want %q", tc.method, tc.path, got, tc.host)
		}
	}
	// GET /three matches no rule (the match wants POST).
	if res, _ := e.get("app.example.com", "/three/z"); res.StatusCode != 404 {
		t.Errorf("GET /three/z: status %d, want 404", res.StatusCode)
	}
}

// A URLRewrite on a backend (HTTPRouteBackendURLRewrite) applies to the
// requests sent to that backend only, with the prefix of the match that
// won; its sibling gets the path as sent.
func TestE2EBackendURLRewrite(t *testing.T) {
	a, b := startBackend(t, echo("a")), startBackend(t, echo("b"))
	rw := func(p proxycfg.PathModifier) []proxycfg.Filter {
		return []proxycfg.Filter{{Type: proxycfg.FilterURLRewrite, URLRewrite: &proxycfg.Rewrite{Path: &p}}}
	}
	split := proxycfg.Rule{
		Matches: []proxycfg.Match{
			{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/one"}},
			{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/two/deep"}},
		},
		Backends: []proxycfg.BackendRef{
			{Cluster: "a", Weight: 1, Filters: rw(proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/rewritten"})},
			{Cluster: "b", Weight: 1},
		},
	}
	full := proxycfg.Rule{
		Matches:  fePrefix("/full"),
		Backends: []proxycfg.BackendRef{{Cluster: "a", Weight: 1, Filters: rw(proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath, ReplaceFullPath: "/rewritten-full"})}},
	}
	e := newTestEnv(t, config([]proxycfg.Route{route("r", split, full)}, cluster("a", a), cluster("b", b)))
	seen := map[string]bool{}
	for i := 0; i < 60 && len(seen) < 4; i++ {
		for _, path := range []string{"/one/x?q=1", "/two/deep/y"} {
			res, body := feSend(t, e.client, "GET", e.bound.Origin, "app.example.com", path, nil)
			if res.StatusCode != 200 {
				t.Fatalf("GET %s: status %d: %s", path, res.StatusCode, body)
			}
			backend, target := echoed(body, "backend"), echoed(body, "target")
			want := path
			if backend == "a" {
				want = "/rewritten" + path[strings.Index(path[1:], "/")+1:]
				if strings.HasPrefix(path, "/two/deep") {
					want = "/rewritten/y"
				}
			}
			if target != want {
				t.Errorf("GET %s to %s: backend target %q, want %q", path, backend, target, want)
			}
			seen[backend+path] = true
		}
	}
	if len(seen) < 4 {
		t.Errorf("both backends for both matches not seen: %v", seen)
	}
	if res, body := feSend(t, e.client, "GET", e.bound.Origin, "app.example.com", "/full/a?b", nil); echoed(body, "target") != "/rewritten-full?b" {
		t.Errorf("GET /full/a?b: status %d, target %q", res.StatusCode, echoed(body, "target"))
	}
}

func TestE2ECORS(t *testing.T) {
	var hits atomic.Int64
	be := startBackend(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "https://evil.example")
		h.Set("Access-Control-Expose-Headers", "X-Backend-Own")
		h.Set("Vary", "Accept-Encoding")
		h.Set("X-Exposed", "e")
		io.WriteString(w, "from backend "+r.Method)
	})
	plain := startBackend(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "plain")
	})
	corsRule := func(path, cl string, c proxycfg.CORS) proxycfg.Rule {
		r := to(cl)
		r.Matches = fePrefix(path)
		r.Filters = []proxycfg.Filter{{Type: proxycfg.FilterCORS, CORS: &c}, feRespMod(proxycfg.HeaderModifier{Set: feHdrs("X-Rule", "r")})}
		return r
	}
	strict := proxycfg.CORS{
		AllowOrigins:     []string{"https://app.example.com", "https://*.trusted.example"},
		AllowCredentials: true,
		AllowMethods:     []string{"GET", "POST", "PUT"},
		AllowHeaders:     []string{"X-Custom", "Content-Type"},
		ExposeHeaders:    []string{"X-Exposed"},
		MaxAge:           600,
	}
	cfg := config([]proxycfg.Route{route("r",
		corsRule("/api", "a", strict),
		corsRule("/plain", "p", strict),
		corsRule("/star", "a", proxycfg.CORS{MaxAge: 5, AllowOrigins: []string{"*"}, AllowMethods: []string{"*"}, AllowHeaders: []string{"*"}, ExposeHeaders: []string{"*"}}),
	)}, cluster("a", be), cluster("p", plain))
	e := newTestEnv(t, cfg)

	send := func(method, path string, hdr ...string) (*http.Response, string) {
		t.Helper()
		return feSend(t, e.client, method, e.bound.Origin, "api.example.com", path, nil, hdr...)
	}
	check := func(what string, res *http.Response, want map[string]string) {
		t.Helper()
		for name, w := range want {
			got, ok := res.Header[name]
			switch {
			case w == "" && ok:
				t.Errorf("%s: %s = %q, want none", what, name, got)
			case w != "" && !slices.Equal(got, []string{w}):
				t.Errorf("%s: %s = %q, want %q", what, name, got, w)
			}
		}
	}

	// Preflight from an allowed origin: answered by the proxy.
	before := hits.Load()
	res, body := send("OPTIONS", "/api/items",
		"Origin", "https://app.example.com",
		"Access-Control-Request-Method", "PUT",
		"Access-Control-Request-Headers", "x-custom, content-type")
	if res.StatusCode != 204 || body != "" {
		t.Errorf("preflight: status %d, body %q; want 204 and no body", res.StatusCode, body)
	}
	check("preflight", res, map[string]string{
		"Access-Control-Allow-Origin":      "https://app.example.com",
		"Access-Control-Allow-Credentials": "true",
		"Access-Control-Allow-Methods":     "GET, POST, PUT",
		"Access-Control-Allow-Headers":     "X-Custom, Content-Type",
		"Access-Control-Expose-Headers":    "X-Exposed",
		"Access-Control-Max-Age":           "600",
		"Vary":                             "",
		"X-Rule":                           "r", // the rule's response modifier applies to the proxy's answer
	})
	// A wildcard subdomain origin.
	res, _ = send("OPTIONS", "/api/items", "Origin", "https://a.b.trusted.example", "Access-Control-Request-Method", "GET")
	check("preflight wildcard origin", res, map[string]string{"Access-Control-Allow-Origin": "https://a.b.trusted.example", "Access-Control-Allow-Headers": ""})
	// Preflight from an origin not allowed: 204 with no CORS headers.
	for _, origin := range []string{"https://evil.example", "http://app.example.com", "https://app.example.com:8443", "https://trusted.example", "null"} {
		res, _ = send("OPTIONS", "/api/items", "Origin", origin, "Access-Control-Request-Method", "POST")
		if res.StatusCode != 204 {
			t.Errorf("preflight from %s: status %d, want 204", origin, res.StatusCode)
		}
		check("preflight from "+origin, res, map[string]string{
			"Access-Control-Allow-Origin": "", "Access-Control-Allow-Methods": "",
			"Access-Control-Allow-Credentials": "", "Access-Control-Max-Age": "",
		})
	}
	if n := hits.Load() - before; n != 0 {
		t.Errorf("preflights reached the backend %d times", n)
	}

	// OPTIONS without Access-Control-Request-Method is not a preflight: proxied.
	before = hits.Load()
	res, body = send("OPTIONS", "/api/items", "Origin", "https://app.example.com")
	if res.StatusCode != 200 || body != "from backend OPTIONS" || hits.Load()-before != 1 {
		t.Errorf("plain OPTIONS: status %d, body %q, backend hits %d; want it proxied", res.StatusCode, body, hits.Load()-before)
	}

	// The actual request from an allowed origin: the proxy's CORS headers
	// replace the backend's own.
	before = hits.Load()
	res, body = send("POST", "/api/items", "Origin", "https://app.example.com")
	if res.StatusCode != 200 || body != "from backend POST" || hits.Load()-before != 1 {
		t.Fatalf("actual request: status %d, body %q, hits %d", res.StatusCode, body, hits.Load()-before)
	}
	check("actual request", res, map[string]string{
		"Access-Control-Allow-Origin":      "https://app.example.com",
		"Access-Control-Allow-Credentials": "true",
		"Access-Control-Expose-Headers":    "X-Exposed",
		"Access-Control-Allow-Methods":     "",
		"Access-Control-Max-Age":           "",
		"X-Exposed":                        "e",
	})
	if v := res.Header["Vary"]; !slices.Contains(v, "Origin") || !slices.Contains(v, "Accept-Encoding") {
		t.Errorf("actual request: Vary = %q, want the backend's and Origin", v)
	}

	// The actual request from an origin not allowed (the backend sets no
	// CORS headers of its own): no CORS headers, but Vary: Origin.
	res, body = send("GET", "/plain/x", "Origin", "https://evil.example")
	if res.StatusCode != 200 || body != "plain" {
		t.Fatalf("disallowed actual request: status %d, body %q", res.StatusCode, body)
	}
	check("disallowed actual request", res, map[string]string{
		"Access-Control-Allow-Origin": "", "Access-Control-Allow-Credentials": "", "Access-Control-Expose-Headers": "", "Vary": "Origin",
	})
	// No Origin at all: not a CORS request, still Vary: Origin.
	res, _ = send("GET", "/plain/x")
	check("request without Origin", res, map[string]string{"Access-Control-Allow-Origin": "", "Vary": "Origin"})

	// A lone "*" without credentials: "*" on every response, replacing the
	// backend's value, with no Vary: Origin.
	res, _ = send("GET", "/star", "Origin", "https://anyone.example")
	check("star actual", res, map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": "*"})
	if slices.Contains(res.Header["Vary"], "Origin") {
		t.Errorf("star: Vary %q has Origin", res.Header["Vary"])
	}
	res, _ = send("GET", "/star")
	check("star without Origin", res, map[string]string{"Access-Control-Allow-Origin": "*"})
	before = hits.Load()
	res, _ = send("OPTIONS", "/star", "Origin", "https://anyone.example", "Access-Control-Request-Method", "DELETE",
		"Access-Control-Request-Headers", "X-Whatever")
	if res.StatusCode != 204 || hits.Load() != before {
		t.Errorf("star preflight: status %d, backend hits %d", res.StatusCode, hits.Load()-before)
	}
	check("star preflight", res, map[string]string{
		"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "*",
		"Access-Control-Allow-Headers": "X-Whatever", "Access-Control-Max-Age": "5",
	})
}

func TestE2EWeightedBackends(t *testing.T) {
	var nA, nB, nZ atomic.Int64
	count := func(n *atomic.Int64, name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			io.WriteString(w, name)
		}
	}
	a := startBackend(t, count(&nA, "a"))
	b := startBackend(t, count(&nB, "b"))
	z := startBackend(t, count(&nZ, "z"))
	weighted := func(path string, refs ...proxycfg.BackendRef) proxycfg.Rule {
		return proxycfg.Rule{Matches: fePrefix(path), Backends: refs}
	}
	cfg := config([]proxycfg.Route{route("r",
		weighted("/split", proxycfg.BackendRef{Cluster: "a", Weight: 1}, proxycfg.BackendRef{Cluster: "b", Weight: 3}, proxycfg.BackendRef{Cluster: "z", Weight: 0}),
		weighted("/status", proxycfg.BackendRef{Cluster: "a", Weight: 1}, proxycfg.BackendRef{Status: 500, Weight: 1}),
		weighted("/zero", proxycfg.BackendRef{Cluster: "a", Weight: 0}, proxycfg.BackendRef{Cluster: "b", Weight: 0}),
		weighted("/none"),
		weighted("/only-status", proxycfg.BackendRef{Status: 503, Weight: 5}),
	)}, cluster("a", a), cluster("b", b), cluster("z", z))
	e := newTestEnv(t, cfg)

	const n = 4000
	for i := range n {
		res, body := e.get("app.example.com", "/split")
		if res.StatusCode != 200 || (body != "a" && body != "b") {
			t.Fatalf("request %d: status %d, body %q", i, res.StatusCode, body)
		}
	}
	if got := nA.Load() + nB.Load(); got != n {
		t.Fatalf("backends got %d requests, want %d", got, n)
	}
	if share := float64(nA.Load()) / n; share < 0.15 || share > 0.35 {
		t.Errorf("weight-1 backend got %.1f%% of traffic (a=%d b=%d), want about 25%%", 100*share, nA.Load(), nB.Load())
	}
	if nZ.Load() != 0 {
		t.Errorf("weight-0 backend got %d requests", nZ.Load())
	}

	nA.Store(0)
	statuses := map[int]int{}
	for range 400 {
		res, body := e.get("app.example.com", "/status")
		statuses[res.StatusCode]++
		if res.StatusCode == 500 && !strings.HasPrefix(body, "500 Internal Server Error") {
			t.Fatalf("status ref: body %q", body)
		}
	}
	if statuses[200]+statuses[500] != 400 || statuses[500] < 120 || statuses[500] > 280 {
		t.Errorf("status ref: statuses %v, want about half 500", statuses)
	}
	if int(nA.Load()) != statuses[200] {
		t.Errorf("backend a served %d, but %d answers were 200", nA.Load(), statuses[200])
	}

	before := nA.Load() + nB.Load() + nZ.Load()
	for _, tc := range []struct {
		path   string
		status int
	}{{"/zero", 500}, {"/none", 500}, {"/only-status", 503}} {
		for range 20 {
			if res, body := e.get("app.example.com", tc.path); res.StatusCode != tc.status {
				t.Fatalf("%s: status %d, want %d: %s", tc.path, res.StatusCode, tc.status, body)
			}
		}
	}
	if after := nA.Load() + nB.Load() + nZ.Load(); after != before {
		t.Errorf("rules without weighted backends reached a backend %d times", after-before)
	}
}

func feQuietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestE2EResponseHeaderModifierRemoveContentType: the proxy never invents
// a Content-Type (TestProxyDoesNotInventContentType), and that holds when
// a ResponseHeaderModifier removes the backend's: net/http must not sniff
// one. (It was a bug: the placeholder that stops sniffing was stored
// before the filters ran, so removing Content-Type removed it too, and
// plain text beginning with "<html>" went out as text/html.)
func TestE2EResponseHeaderModifierRemoveContentType(t *testing.T) {
	for _, proto := range []string{proxycfg.ProtoHTTP1, proxycfg.ProtoH2C} {
		t.Run(proto, func(t *testing.T) {
			r := to("a")
			r.Filters = []proxycfg.Filter{feRespMod(proxycfg.HeaderModifier{Remove: []string{"Content-Type"}})}
			e := newTestEnv(t, config([]proxycfg.Route{route("r", r)}, feCluster(t, "a", proto, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				io.WriteString(w, "<html><script>alert('not markup')</script>")
			})))
			res, body := e.get("app.example.com", "/")
			if res.StatusCode != 200 || !strings.HasPrefix(body, "<html>") {
				t.Fatalf("status %d, body %q", res.StatusCode, body)
			}
			if v, ok := res.Header["Content-Type"]; ok {
				t.Errorf("Content-Type %q reached the client after the filter removed it", v)
			}
		})
	}
}

// TestE2ERequestHeaderModifierOnForwardingHeaders: X-Forwarded-For and
// X-Forwarded-Proto are written by the proxy itself; a modifier that sets
// or removes one overrides the proxy's value (docs/proxy.md), over HTTP/1.1
// and HTTP/2 alike. (It was a bug: over HTTP/1.1 the backend got both
// values, over HTTP/2 the filter's was dropped.)
func TestE2ERequestHeaderModifierOnForwardingHeaders(t *testing.T) {
	for _, proto := range []string{proxycfg.ProtoHTTP1, proxycfg.ProtoH2C} {
		t.Run(proto, func(t *testing.T) {
			set := to("a")
			set.Matches = fePrefix("/set")
			set.Filters = []proxycfg.Filter{feReqMod(proxycfg.HeaderModifier{Set: feHdrs("x-forwarded-for", "192.0.2.1", "X-Forwarded-Proto", "https")})}
			rm := to("a")
			rm.Matches = fePrefix("/remove")
			rm.Filters = []proxycfg.Filter{feReqMod(proxycfg.HeaderModifier{Remove: []string{"X-Forwarded-For", "x-forwarded-proto"}})}
			e := newTestEnv(t, config([]proxycfg.Route{route("r", set, rm)}, feCluster(t, "a", proto, echo("a"))))
			for _, via := range []struct {
				name string
				c    *http.Client
				addr string
			}{{"origin", e.client, e.bound.Origin}, {"plain", e.client, e.bound.Plain}} {
				_, body := feSend(t, via.c, "GET", via.addr, "app.example.com", "/set", nil,
					"X-Forwarded-For", "203.0.113.7", "X-Forwarded-Proto", "http")
				for name, want := range map[string]string{"X-Forwarded-For": "192.0.2.1", "X-Forwarded-Proto": "https"} {
					if got := feValues(body, name); !slices.Equal(got, []string{want}) {
						t.Errorf("%s /set: backend saw %s = %q, want [%q]", via.name, name, got, want)
					}
				}
				_, body = feSend(t, via.c, "GET", via.addr, "app.example.com", "/remove", nil,
					"X-Forwarded-For", "203.0.113.7", "X-Forwarded-Proto", "https")
				for _, name := range []string{"X-Forwarded-For", "X-Forwarded-Proto"} {
					if got := feValues(body, name); len(got) != 0 {
						t.Errorf("%s /remove: backend saw %s = %q, want none", via.name, name, got)
					}
				}
			}
		})
	}
}
