package matcher

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestCompileRejectsBadRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule Rule[string]
		want []string // substrings of the error
	}{
		{"bad path regex", r("x", named("team", "web"), index(2, 1), regex("/a(")),
			[]string{"route team/web rule 2 match 1", "path regular expression", "missing closing )"}},
		{"bad header regex", r("x", headerRe("X-A", "[")), []string{"header X-A regular expression"}},
		{"bad query regex", r("x", queryRe("q", "*")), []string{"query parameter q regular expression"}},
		{"unbalanced regex cannot escape its anchors", r("x", regex("/a)|(/b")), []string{"unexpected )"}},
		{"hostname with underscore", r("x", hosts("a_b.com")), []string{`hostname "a_b.com"`}},
		{"wildcard not first", r("x", hosts("a.*.com")), []string{`hostname "a.*.com"`}},
		{"bare wildcard", r("x", hosts("*")), []string{`hostname "*"`}},
		{"non-ASCII letter that folds to ASCII", r("x", hosts("\u212a.com")), []string{`hostname "\u212a.com"`}},
		{"IP address", r("x", hosts("10.0.0.1")), []string{"IP addresses are not allowed"}},
		{"empty label", r("x", hosts("a..com")), []string{`hostname "a..com"`}},
		{"label too long", r("x", hosts(strings.Repeat("a", 64)+".com")), []string{"1 to 63"}},
		{"hostname with port", r("x", hosts("a.com:80")), []string{`hostname "a.com:80"`}},
		{"trailing dot", r("x", hosts("a.com.")), []string{`hostname "a.com."`}},
		{"relative exact path", r("x", exact("a")), []string{`Exact path "a" must start with "/"`}},
		{"relative prefix", r("x", prefix("abc")), []string{`PathPrefix path "abc"`}},
		{"no path: callers write EveryPath", r("x", func(r *Rule[string]) { r.Path = Path{} }), []string{`PathPrefix path "" must start with "/"`}},
		{"bad header name", r("x", header("X A", "1")), []string{`header name "X A"`}},
		{"empty header name", r("x", header("", "1")), []string{`header name ""`}},
		{"empty query name", r("x", query("", "1")), []string{"query parameter name must not be empty"}},
		{"bad method", r("x", method("GET POST")), []string{`method "GET POST"`}},
		{"path too long", r("x", prefix("/"+strings.Repeat("a", maxPathLen))), []string{"more than the limit of 4096"}},
		{"path too long once normalised", r("x", exact("/"+strings.Repeat("é", 1500))), []string{"once normalised"}},
		{"unknown path kind", r("x", func(r *Rule[string]) { r.Path.Kind = 9 }), []string{"unknown path match kind 9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table, err := Compile([]Rule[string]{r("good"), tc.rule})
			if err == nil || table != nil {
				t.Fatalf("Compile accepted the rule (table %v)", table)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if verr := tc.rule.Validate(); verr == nil {
				t.Error("Validate accepted the rule Compile rejected")
			}
		})
	}
}

func TestCompileReportsEveryProblem(t *testing.T) {
	_, err := Compile([]Rule[string]{
		r("a", named("ns", "one"), regex("(")),
		r("b"),
		r("c", named("ns", "two"), hosts("-bad.com"), header("", "x")),
	})
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{"route ns/one", "route ns/two", `hostname "-bad.com"`, `header name ""`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

func TestCompileAcceptsSpecShapes(t *testing.T) {
	rules := []Rule[string]{
		r("every-path"),
		r("upper-host", hosts("API.Example.COM")),
		r("wild", hosts("*.example.com")),
		r("digits", hosts("1.2.3")), // not an IP: three labels
		r("dup-hosts", hosts("a.com", "A.com", "a.com")),
		r("method", method("PURGE")),
		r("header", header("X_Under-score", "v")),
	}
	for i := range rules {
		if err := rules[i].Validate(); err != nil {
			t.Errorf("%s: %v", rules[i].Ref, err)
		}
	}
	if _, err := Compile(rules); err != nil {
		t.Fatal(err)
	}
}

func TestCompileRejectsTooManyRulesOnOnePath(t *testing.T) {
	rules := make([]Rule[string], maxListLen+1)
	for i := range rules {
		rules[i] = r("same", hosts("a.example.com"), exact("/x"), index(i, 0))
	}
	if _, err := Compile(rules); err == nil || !strings.Contains(err.Error(), "more than the limit of 65535") {
		t.Fatalf("Compile error = %v, want the per-path limit", err)
	}
	if _, err := Compile(rules[:maxListLen]); err != nil {
		t.Fatalf("Compile at the limit: %v", err)
	}
}

// A prepared rule is filed into several tables, each ranking it among its
// own rules: what one table decides must not leak into another.
func TestPreparedRuleInSeveralTables(t *testing.T) {
	var p Preparer[string]
	prep := func(rule Rule[string]) *Prepared[string] {
		t.Helper()
		pr, err := p.Prepare(&rule)
		if err != nil {
			t.Fatal(err)
		}
		return pr
	}
	plain := prep(r("plain", prefix("/a")))
	withHeader := prep(r("with-header", prefix("/a"), header("X-V", "1")))
	newer := prep(r("newer", prefix("/a"), func(r *Rule[string]) { r.Key.Created = t0.Add(time.Hour) }))

	first, err := Build([]*Prepared[string]{plain, withHeader})
	if err != nil {
		t.Fatal(err)
	}
	second, err := Build([]*Prepared[string]{newer, plain})
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"X-V": {"1"}}
	for _, tc := range []struct {
		table *Table[string]
		req   *Request
		want  string
	}{
		{first, &Request{Host: "h", Path: "/a", Header: h}, "with-header"},
		{first, &Request{Host: "h", Path: "/a"}, "plain"},
		{second, &Request{Host: "h", Path: "/a", Header: h}, "plain"},
		{second, &Request{Host: "h", Path: "/a"}, "plain"},
	} {
		if got, _ := tc.table.Match(tc.req); got != tc.want {
			t.Errorf("Match(%s, %v) = %q, want %q", tc.req.Path, tc.req.Header, got, tc.want)
		}
	}
	if first.Len() != 2 || second.Len() != 2 {
		t.Errorf("Len = %d, %d; want 2, 2", first.Len(), second.Len())
	}
}
