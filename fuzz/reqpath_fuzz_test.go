package fuzz

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/matcher"
)

// FuzzRequestPath sends any request target through the proxy, whose
// routes send each rule to one backend with the rule's number in a
// header, and checks what the issue of walking around a protected rule
// comes down to: the path the backend gets is the path the router
// matched, and a file server reading that path (decoding it once,
// merging slashes, resolving dot segments, as lighttpd, nginx, Python's
// http.server and Go's FileServer do: test/realbackend) is covered by
// the rule that matched it, and no other. Also: the path forwarded is
// canonical (NormalizePath returns it unchanged), holds no encoded slash
// or dot segment, and routing it again picks the same rule. Listeners
// refuse encoded slashes (the default) or decode them; with Keep the
// rule and the file server may disagree, as docs/access.md says.
func FuzzRequestPath(f *testing.F) {
	for _, s := range []string{
		"/admin/secret.txt", "//admin/secret.txt", "/admin%2Fsecret.txt", "/%2Fadmin/secret.txt", "/admin%5Csecret.txt",
		"/admin\\secret.txt", "/public/../admin/secret.txt", "/%2e%2e/admin", "/public/..%2Fadmin", "/public%2F..%2Fadmin",
		"/%61dmin/x", "/admin;x/secret", "/public/..;/admin", "/%C0%AFadmin", "/admin/secret.txt%00", "/a%20b/c", "/caf%C3%A9/x",
		"/x;y/z", "/.well-known/x", "/admin/secret", "/admin/secret/", "/a/./b/../../admin", "/%252Fadmin", "/admin?x=/../y",
		"/%2e%2E/%2E/admin", "///", "/admin%2f..%2fpublic", "/A%64MIN", "/admin/%2e%2e/%2e%2e/admin/x",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, target string, decode bool) {
		if !strings.HasPrefix(target, "/") {
			return
		}
		env := startPathEnv(t)
		h := env.reject
		if decode {
			h = env.decode
		}
		status, rule, forwarded, ok := env.send(h, target)
		if !ok || status != http.StatusOK {
			return // not a request, or refused: nothing reached a backend
		}
		path, _, _ := strings.Cut(forwarded, "?")
		if n := matcher.NormalizePath(path); n != path {
			t.Fatalf("%q went to the backend as %q, which is not canonical (%q)", target, forwarded, n)
		}
		if strings.Contains(path, "%2F") || strings.Contains(path, "%5C") {
			t.Fatalf("%q went to the backend as %q, which holds an encoded slash", target, forwarded)
		}
		for i, seg := range strings.Split(path, "/")[1:] {
			if seg == "." || seg == ".." || seg == "" && i < strings.Count(path, "/")-1 {
				t.Fatalf("%q went to the backend as %q, which holds an empty or dot segment", target, forwarded)
			}
		}
		if want := refRule(fileServerView(path)); rule != want {
			t.Fatalf("%q was matched by rule %d and went to the backend as %q, which a file server reads as %q, covered by rule %d",
				target, rule, forwarded, fileServerView(path), want)
		}
		if status2, rule2, forwarded2, _ := env.send(h, forwarded); status2 != http.StatusOK || rule2 != rule || forwarded2 != forwarded {
			t.Fatalf("%q went as %q by rule %d; sent again it gets %d, rule %d, %q", target, forwarded, rule, status2, rule2, forwarded2)
		}
	})
}

// pathRules are the route's path prefixes, rule i sending its number;
// rule 0 is an exact match.
var pathRules = []string{"/admin/secret", "/", "/admin", "/admin/x", "/a", "/a b", "/café", "/x;y", "/.well-known"}

// refRule is the rule a request for the decoded path p takes: the exact
// one, else the longest prefix covering p element by element (matcher's
// doc), compared decoded as a file server compares names.
func refRule(p string) int {
	if p == pathRules[0] {
		return 0
	}
	best, bestLen := -1, -1
	for i, v := range pathRules[1:] {
		v = strings.TrimRight(v, "/")
		if (p == v || strings.HasPrefix(p, v+"/") || v == "") && len(v) > bestLen {
			best, bestLen = i+1, len(v)
		}
	}
	return best
}

// fileServerView is the name a file server opens for the escaped path p:
// every escape decoded once (a malformed one kept), then empty and "."
// segments dropped and ".." ones resolved; a trailing slash (a
// directory) is kept.
func fileServerView(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]) {
			b.WriteByte(unhexByte(p[i+1])<<4 | unhexByte(p[i+2]))
			i += 2
			continue
		}
		b.WriteByte(p[i])
	}
	var out []string
	for _, seg := range strings.Split(b.String(), "/") {
		switch seg {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, seg)
		}
	}
	view := "/" + strings.Join(out, "/")
	if len(out) > 0 && strings.HasSuffix(b.String(), "/") {
		view += "/"
	}
	return view
}

// pathEnv is a proxy, started once per fuzz process, whose handlers read
// encoded slashes as Reject or Decode, in front of a backend that answers
// with the rule header and the target it got.
type pathEnv struct {
	reject, decode http.Handler
}

var (
	pathOnce sync.Once
	pathE    *pathEnv
)

func startPathEnv(t testing.TB) *pathEnv {
	pathOnce.Do(func() {
		be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Rule", r.Header.Get("X-Rule"))
			io.WriteString(w, r.RequestURI)
		}))
		var rules []proxycfg.Rule
		for i, v := range pathRules {
			kind := proxycfg.PathPrefix
			if i == 0 {
				kind = proxycfg.PathExact
			}
			rules = append(rules, proxycfg.Rule{
				Matches:  []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: kind, Value: v}}},
				Filters:  []proxycfg.Filter{{Type: proxycfg.FilterRequestHeaderModifier, RequestHeaderModifier: &proxycfg.HeaderModifier{Set: []proxycfg.Header{{Name: "X-Rule", Value: strconv.Itoa(i)}}}}},
				Backends: []proxycfg.BackendRef{{Cluster: "b", Weight: 1}},
			})
		}
		handler := func(slashes string) http.Handler {
			p := dataplane.New(dataplane.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), EncodedSlashes: slashes})
			err := p.Load(&proxycfg.Config{
				Schema: proxycfg.SchemaVersion, Version: "fuzz",
				Listeners: []proxycfg.Listener{{Name: "gw/http", Port: 80, Protocol: proxycfg.ListenerHTTP}},
				Routes: []proxycfg.Route{{Kind: proxycfg.KindHTTP, Namespace: "default", Name: "r",
					Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Listeners: []string{"gw/http"}, Rules: rules}},
				Clusters: []proxycfg.Cluster{{Name: "b", Protocol: proxycfg.ProtoHTTP1, Endpoints: []proxycfg.Endpoint{{Address: be.Listener.Addr().String()}}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			return p.Handler(0, true)
		}
		pathE = &pathEnv{reject: handler(proxycfg.SlashesReject), decode: handler(proxycfg.SlashesDecode)}
	})
	return pathE
}

// send serves GET target through h as a server would have read it from a
// request line (ok false when no server would), and returns the status,
// and for a 200 the rule that matched and the target the backend got.
func (e *pathEnv) send(h http.Handler, target string) (status, rule int, forwarded string, ok bool) {
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + target + " HTTP/1.1\r\nHost: h\r\n\r\n")))
	if err != nil || req.RequestURI != target {
		return 0, 0, "", false
	}
	req.RemoteAddr = "127.0.0.1:1"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	rule, _ = strconv.Atoi(w.Header().Get("X-Rule"))
	return w.Code, rule, w.Body.String(), true
}
