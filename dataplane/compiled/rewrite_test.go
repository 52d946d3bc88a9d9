package compiled

import (
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

func TestReplacePrefix(t *testing.T) {
	cases := []struct {
		path, prefix, repl, want string
	}{
		// The table of HTTPPathModifier.ReplacePrefixMatch.
		{"/foo/bar", "/foo", "/xyz", "/xyz/bar"},
		{"/foo/bar", "/foo", "/xyz/", "/xyz/bar"},
		{"/foo/bar", "/foo/", "/xyz", "/xyz/bar"},
		{"/foo/bar", "/foo/", "/xyz/", "/xyz/bar"},
		{"/foo", "/foo", "/xyz", "/xyz"},
		{"/foo/", "/foo", "/xyz", "/xyz/"},
		{"/foo/bar", "/foo", "", "/bar"},
		{"/foo/", "/foo", "", "/"},
		{"/foo", "/foo", "", "/"},
		{"/foo/", "/foo", "/", "/"},
		{"/foo", "/foo", "/", "/"},
		// The same with a trailing slash on prefix and replacement.
		{"/foo", "/foo/", "/xyz/", "/xyz"},
		{"/foo/", "/foo/", "/xyz/", "/xyz/"},
		{"/foo/bar", "/foo", "/", "/bar"},
		{"/foo/bar/baz", "/foo/", "/", "/bar/baz"},
		// Conformance: httproute-rewrite-path.
		{"/prefix/one/two", "/prefix/one", "/one", "/one/two"},
		{"/strip-prefix/three", "/strip-prefix", "/", "/three"},
		{"/strip-prefix", "/strip-prefix", "/", "/"},
		{"/prefix/rewrite-path-and-modify-headers/one", "/prefix/rewrite-path-and-modify-headers", "/prefix", "/prefix/one"},
		// Conformance: httproute-redirect-path.
		{"/original-prefix/lemon", "/original-prefix", "/replacement-prefix", "/replacement-prefix/lemon"},
		{"/path-and-host", "/path-and-host", "/replacement-prefix", "/replacement-prefix"},
		// Prefix "/" matches everything; nothing is removed.
		{"/", "/", "/xyz", "/xyz/"},
		{"/a/b", "/", "/xyz", "/xyz/a/b"},
		{"/a/b", "/", "/", "/a/b"},
		{"/a/b", "/", "", "/a/b"},
		// Several trailing slashes count as one.
		{"/foo/bar", "/foo//", "/xyz//", "/xyz/bar"},
		// Repeated slashes in the rest are the request's and stay.
		{"/foo//bar", "/foo", "/xyz", "/xyz//bar"},
		{"/foo//bar", "/foo", "/", "//bar"},
		// Multi-element prefixes and replacements.
		{"/a/b/c/d", "/a/b", "/x/y/z", "/x/y/z/c/d"},
		{"/a/b/c", "/a/b/c", "/x", "/x"},
		// Replacement equal to the prefix: the path is unchanged.
		{"/foo/bar", "/foo", "/foo/", "/foo/bar"},
		// Element-wise: "/foobar" is not under "/foo"; left alone.
		{"/foobar", "/foo", "/xyz", "/foobar"},
		{"/fo", "/foo", "/xyz", "/fo"},
		{"/bar", "/foo", "/xyz", "/bar"},
		// Case matters in paths.
		{"/FOO/bar", "/foo", "/xyz", "/FOO/bar"},
		// Escapes are bytes like any other.
		{"/a%2Fb/c", "/a%2Fb", "/x", "/x/c"},
		// Never empty, even for an empty path.
		{"", "/", "", "/"},
	}
	for _, c := range cases {
		got := replacePrefix(c.path, c.prefix, c.repl)
		if got != c.want {
			t.Errorf("replacePrefix(%q, %q, %q) = %q, want %q", c.path, c.prefix, c.repl, got, c.want)
		}
		if got == "" || got[0] != '/' {
			t.Errorf("replacePrefix(%q, %q, %q) = %q does not begin with /", c.path, c.prefix, c.repl, got)
		}
	}
}

func TestCompilePathEdit(t *testing.T) {
	cases := []struct {
		name    string
		pm      *proxycfg.PathModifier
		prefix  string
		path    string
		want    string
		wantErr string
	}{
		{name: "nil keeps", pm: nil, path: "/a/b", want: "/a/b"},
		{name: "full", pm: &proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath, ReplaceFullPath: "/one"}, prefix: "/full/one", path: "/full/one/two", want: "/one"},
		{name: "full without match prefix", pm: &proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath, ReplaceFullPath: "/x"}, path: "/anything", want: "/x"},
		{name: "full root", pm: &proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath, ReplaceFullPath: "/"}, path: "/a", want: "/"},
		{name: "full escapes", pm: &proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath, ReplaceFullPath: "/a b?c#d%zz%41é"}, path: "/x", want: "/a%20b%3Fc%23d%25zz%41%C3%A9"},
		{name: "full keeps sub-delims", pm: &proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath, ReplaceFullPath: "/a:b@c!$&'()*+,;=-._~"}, path: "/x", want: "/a:b@c!$&'()*+,;=-._~"},
		{name: "prefix", pm: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/xyz/"}, prefix: "/foo/", path: "/foo/bar", want: "/xyz/bar"},
		{name: "prefix empty replacement", pm: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath}, prefix: "/foo", path: "/foo", want: "/"},
		{name: "prefix escapes", pm: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/a b/"}, prefix: "/foo", path: "/foo/c", want: "/a%20b/c"},

		{name: "full relative", pm: &proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath, ReplaceFullPath: "one"}, wantErr: "must begin with"},
		{name: "full empty", pm: &proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath}, wantErr: "must begin with"},
		{name: "full with prefix field", pm: &proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath, ReplaceFullPath: "/a", ReplacePrefixMatch: "/b"}, wantErr: "replacePrefixMatch is set"},
		{name: "prefix with full field", pm: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplaceFullPath: "/a"}, prefix: "/p", wantErr: "replaceFullPath is set"},
		{name: "prefix without PathPrefix match", pm: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/x"}, wantErr: "needs a PathPrefix match"},
		{name: "prefix relative match", pm: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/x"}, prefix: "foo", wantErr: "matched prefix"},
		{name: "prefix relative replacement", pm: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "x"}, prefix: "/foo", wantErr: "must be empty or begin"},
		{name: "no type", pm: &proxycfg.PathModifier{ReplaceFullPath: "/a"}, wantErr: "type is required"},
		{name: "unknown type", pm: &proxycfg.PathModifier{Type: "ReplaceRegex"}, wantErr: "unsupported type"},
	}
	for _, c := range cases {
		pe, err := compilePathEdit(c.pm, c.prefix)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: err = %v, want one containing %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: unexpected error %v", c.name, err)
			continue
		}
		if got := pe.apply(c.path); got != c.want {
			t.Errorf("%s: apply(%q) = %q, want %q", c.name, c.path, got, c.want)
		}
	}
}

func TestEscapePathValueKeepsClean(t *testing.T) {
	s := "/a/b%2Fc"
	if got := escapePathValue(s); got != s {
		t.Fatalf("escapePathValue(%q) = %q", s, got)
	}
	if got := escapePathValue("/%"); got != "/%25" {
		t.Fatalf("escapePathValue(/%%) = %q", got)
	}
	if got := escapePathValue("/%4"); got != "/%254" {
		t.Fatalf("escapePathValue(/%%4) = %q", got)
	}
}

func TestIsPreciseHostname(t *testing.T) {
	good := []string{"example.org", "a", "a-b.c", "one.example.org", "EXAMPLE.org", "1.2.3.4", "x" + strings.Repeat(".abcdefghi", 24)}
	bad := []string{"", "example.org:8080", "*.example.org", "-a.com", "a-.com", "a..com", ".a.com", "a.com.", "a_b.com", "a b", "[::1]", "::1", "é.com",
		strings.Repeat("a", 64) + ".com", "x" + strings.Repeat(".abcdefghi", 26)}
	for _, h := range good {
		if !isPreciseHostname(h) {
			t.Errorf("isPreciseHostname(%q) = false, want true", h)
		}
	}
	for _, h := range bad {
		if isPreciseHostname(h) {
			t.Errorf("isPreciseHostname(%q) = true, want false", h)
		}
	}
}

func TestRewrite(t *testing.T) {
	cases := []struct {
		name             string
		r                proxycfg.Rewrite
		prefix           string
		path, host       string
		wantPath, wantHs string
		wantErr          string
	}{
		// Conformance: httproute-rewrite-host.
		{name: "host one", r: proxycfg.Rewrite{Hostname: "one.example.org"}, prefix: "/one", path: "/one", host: "rewrite.example", wantPath: "/one", wantHs: "one.example.org"},
		{name: "host two", r: proxycfg.Rewrite{Hostname: "example.org"}, prefix: "/", path: "/two", host: "rewrite.example", wantPath: "/two", wantHs: "example.org"},
		{name: "host keeps path", r: proxycfg.Rewrite{Hostname: "test.example.org"}, prefix: "/rewrite-host-and-modify-headers", path: "/rewrite-host-and-modify-headers", host: "rewrite.example:8080", wantPath: "/rewrite-host-and-modify-headers", wantHs: "test.example.org"},
		// Conformance: httproute-rewrite-path.
		{name: "prefix", r: proxycfg.Rewrite{Path: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/one"}}, prefix: "/prefix/one", path: "/prefix/one/two", host: "h", wantPath: "/one/two", wantHs: "h"},
		{name: "strip", r: proxycfg.Rewrite{Path: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/"}}, prefix: "/strip-prefix", path: "/strip-prefix/three", host: "h", wantPath: "/three", wantHs: "h"},
		{name: "strip all", r: proxycfg.Rewrite{Path: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/"}}, prefix: "/strip-prefix", path: "/strip-prefix", host: "h", wantPath: "/", wantHs: "h"},
		{name: "full", r: proxycfg.Rewrite{Path: &proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath, ReplaceFullPath: "/one"}}, prefix: "/full/one", path: "/full/one/two", host: "h", wantPath: "/one", wantHs: "h"},
		{name: "full test", r: proxycfg.Rewrite{Path: &proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath, ReplaceFullPath: "/test"}}, prefix: "/full/rewrite-path-and-modify-headers", path: "/full/rewrite-path-and-modify-headers/test", host: "h", wantPath: "/test", wantHs: "h"},
		{name: "both", r: proxycfg.Rewrite{Hostname: "b.example", Path: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/v2"}}, prefix: "/v1", path: "/v1/x", host: "a.example", wantPath: "/v2/x", wantHs: "b.example"},
		{name: "empty filter", r: proxycfg.Rewrite{}, prefix: "/", path: "/x", host: "h:1", wantPath: "/x", wantHs: "h:1"},

		{name: "host with port", r: proxycfg.Rewrite{Hostname: "example.org:80"}, wantErr: "not a DNS name"},
		{name: "wildcard host", r: proxycfg.Rewrite{Hostname: "*.example.org"}, wantErr: "not a DNS name"},
		{name: "prefix on exact match", r: proxycfg.Rewrite{Path: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/x"}}, prefix: "", wantErr: "needs a PathPrefix match"},
		{name: "relative full path", r: proxycfg.Rewrite{Path: &proxycfg.PathModifier{Type: proxycfg.ReplaceFullPath, ReplaceFullPath: "x"}}, wantErr: "must begin with"},
	}
	for _, c := range cases {
		rw, err := compileRewrite(&c.r, c.prefix)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: err = %v, want one containing %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: unexpected error %v", c.name, err)
			continue
		}
		p, h := rw.Apply(c.path, c.host)
		if p != c.wantPath || h != c.wantHs {
			t.Errorf("%s: apply(%q, %q) = %q, %q; want %q, %q", c.name, c.path, c.host, p, h, c.wantPath, c.wantHs)
		}
	}
	if _, err := compileRewrite(nil, "/"); err == nil {
		t.Error("compileRewrite(nil) succeeded")
	}
}

// A backend's URLRewrite is compiled for each of the rule's matches, and
// cannot stand beside the rule's own URLRewrite or RequestRedirect (which
// would decide the path first, or never reach the backend).
func TestCompileBackendRewrite(t *testing.T) {
	cluster := func(string) (int, bool) { return 0, true }
	rw := &proxycfg.Rewrite{Path: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/b"}}
	backendRW := []proxycfg.Filter{{Type: proxycfg.FilterURLRewrite, URLRewrite: rw}}
	rule := proxycfg.Rule{
		Matches: []proxycfg.Match{
			{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/one"}},
			{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/two"}},
		},
		Backends: []proxycfg.BackendRef{{Cluster: "a", Weight: 1, Filters: backendRW}, {Cluster: "b", Weight: 1}},
	}
	r := &proxycfg.Route{Kind: proxycfg.KindHTTP, Namespace: "ns", Name: "r", Rules: []proxycfg.Rule{rule}}
	ru, targets, err := CompileRule(r, 0, 0, cluster)
	if err != nil {
		t.Fatal(err)
	}
	for mi, tg := range targets {
		got := tg.BackendRewrite(&ru.Backends[0])
		if got == nil {
			t.Fatalf("match %d: no rewrite for the backend that has one", mi)
		}
		if path, _ := got.Apply([]string{"/one/x", "/two/x"}[mi], "h"); path != "/b/x" {
			t.Errorf("match %d: rewritten to %q, want /b/x", mi, path)
		}
		if tg.BackendRewrite(&ru.Backends[1]) != nil {
			t.Errorf("match %d: the backend without a rewrite has one", mi)
		}
	}
	for _, tc := range []struct {
		own  proxycfg.Filter
		want string
	}{
		{proxycfg.Filter{Type: proxycfg.FilterURLRewrite, URLRewrite: rw}, "URLRewrite on the rule and one on a backend"},
		{proxycfg.Filter{Type: proxycfg.FilterRequestRedirect, RequestRedirect: &proxycfg.Redirect{StatusCode: 302, Scheme: "https"}}, "RequestRedirect on the rule"},
	} {
		bad := rule
		bad.Filters = []proxycfg.Filter{tc.own}
		r.Rules = []proxycfg.Rule{bad}
		if _, _, err := CompileRule(r, 0, 0, cluster); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("rule filter %s with a backend URLRewrite: %v, want an error saying %q", tc.own.Type, err, tc.want)
		}
	}
}
