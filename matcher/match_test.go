package matcher

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// r builds a rule whose Ref is its label; options adjust it.
func r(label string, opts ...func(*Rule[string])) Rule[string] {
	rule := Rule[string]{
		Path: Path{Kind: PathPrefix, Value: "/"},
		Key:  Key{Created: t0, Namespace: "ns", Name: label},
		Ref:  label,
	}
	for _, o := range opts {
		o(&rule)
	}
	return rule
}

func hosts(h ...string) func(*Rule[string]) { return func(r *Rule[string]) { r.Hostnames = h } }
func exact(p string) func(*Rule[string]) {
	return func(r *Rule[string]) { r.Path = Path{PathExact, p} }
}
func prefix(p string) func(*Rule[string]) {
	return func(r *Rule[string]) { r.Path = Path{PathPrefix, p} }
}
func regex(p string) func(*Rule[string]) {
	return func(r *Rule[string]) { r.Path = Path{PathRegex, p} }
}
func method(m string) func(*Rule[string]) { return func(r *Rule[string]) { r.Method = m } }
func header(name, value string) func(*Rule[string]) {
	return func(r *Rule[string]) { r.Headers = append(r.Headers, ValueMatch{Name: name, Value: value}) }
}
func headerRe(name, value string) func(*Rule[string]) {
	return func(r *Rule[string]) {
		r.Headers = append(r.Headers, ValueMatch{Name: name, Value: value, Regex: true})
	}
}
func query(name, value string) func(*Rule[string]) {
	return func(r *Rule[string]) { r.Query = append(r.Query, ValueMatch{Name: name, Value: value}) }
}
func queryRe(name, value string) func(*Rule[string]) {
	return func(r *Rule[string]) { r.Query = append(r.Query, ValueMatch{Name: name, Value: value, Regex: true}) }
}
func created(d time.Duration) func(*Rule[string]) {
	return func(r *Rule[string]) { r.Key.Created = t0.Add(d) }
}
func named(ns, name string) func(*Rule[string]) {
	return func(r *Rule[string]) { r.Key.Namespace, r.Key.Name = ns, name }
}
func index(rule, match int) func(*Rule[string]) {
	return func(r *Rule[string]) { r.Key.Rule, r.Key.Match = rule, match }
}

// req is a request written as "METHOD host/path?query" plus headers given as
// "Name: value" strings; a repeated name adds a field line.
type req struct {
	line    string
	headers string // "Name: value" lines separated by "\n"
}

func (q req) build() *Request {
	method, target, _ := strings.Cut(q.line, " ")
	i := strings.IndexByte(target, '/')
	if i < 0 {
		i = len(target)
	}
	host, rest := target[:i], target[i:]
	path, raw, _ := strings.Cut(rest, "?")
	h := http.Header{}
	if q.headers != "" {
		for _, kv := range strings.Split(q.headers, "\n") {
			k, v, _ := strings.Cut(kv, ": ")
			h.Add(k, v)
		}
	}
	return &Request{Host: host, Path: NormalizePath(path), Method: method, Header: h, RawQuery: raw}
}

type matchCase struct {
	name  string
	rules []Rule[string]
	want  map[req]string // "" means no match
}

func runMatchCases(t *testing.T, cases []matchCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table, err := Compile(tc.rules)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			for q, want := range tc.want {
				got, ok := table.Match(q.build())
				if !ok {
					got = ""
				}
				if got != want {
					t.Errorf("%s %q: got %q, want %q", q.line, q.headers, got, want)
				}
			}
		})
	}
}

func TestHostRules(t *testing.T) {
	runMatchCases(t, []matchCase{{
		name: "exact beats wildcard beats shorter wildcard beats catch-all",
		rules: []Rule[string]{
			r("any"),
			r("star-com", hosts("*.com")),
			r("star-example", hosts("*.example.com")),
			r("star-a-example", hosts("*.a.example.com")),
			r("exact", hosts("x.a.example.com")),
		},
		want: map[req]string{
			{line: "GET x.a.example.com/"}:   "exact",
			{line: "GET y.a.example.com/"}:   "star-a-example",
			{line: "GET y.x.a.example.com/"}: "star-a-example",
			{line: "GET a.example.com/"}:     "star-example",
			{line: "GET b.example.com/"}:     "star-example",
			{line: "GET example.com/"}:       "star-com",
			{line: "GET example.org/"}:       "any",
			{line: "GET /"}:                  "any",
		},
	}, {
		name: "port, trailing dot and case are ignored",
		rules: []Rule[string]{
			r("exact", hosts("Foo.Example.com")),
			r("wild", hosts("*.bar.com")),
		},
		want: map[req]string{
			{line: "GET foo.example.com:8080/"}:  "exact",
			{line: "GET FOO.EXAMPLE.COM/"}:       "exact",
			{line: "GET foo.example.com./"}:      "exact",
			{line: "GET FOO.example.com.:443/"}:  "exact",
			{line: "GET x.BAR.com/"}:             "wild",
			{line: "GET foo.example.com../"}:     "",
			{line: "GET bar.com/"}:               "",
			{line: "GET .bar.com/"}:              "",
			{line: "GET [::1]:8080/"}:            "",
			{line: "GET foo.example.community/"}: "",
		},
	}, {
		name: "wildcard needs a label in front and matches many",
		rules: []Rule[string]{
			r("wild", hosts("*.example.com")),
		},
		want: map[req]string{
			{line: "GET a.example.com/"}:     "wild",
			{line: "GET a.b.c.example.com/"}: "wild",
			{line: "GET example.com/"}:       "",
			{line: "GET aexample.com/"}:      "",
			{line: "GET a.example.co/"}:      "",
		},
	}, {
		name: "a less specific host is searched when the specific one has no match",
		rules: []Rule[string]{
			r("catch-all"),
			r("wild-v2", hosts("*.example.com"), prefix("/v2")),
			r("api-v1", hosts("api.example.com"), prefix("/v1")),
			r("api-v1-deep", hosts("api.example.com"), prefix("/v1/deep"), header("X", "1")),
		},
		want: map[req]string{
			{line: "GET api.example.com/v1/x"}:                     "api-v1",
			{line: "GET api.example.com/v1/deep"}:                  "api-v1",
			{line: "GET api.example.com/v1/deep", headers: "X: 1"}: "api-v1-deep",
			{line: "GET api.example.com/v2/x"}:                     "wild-v2",
			{line: "GET api.example.com/other"}:                    "catch-all",
			{line: "GET www.example.com/v1"}:                       "catch-all",
		},
	}, {
		name: "host precedence comes before path precedence",
		rules: []Rule[string]{
			r("catch-all-exact", exact("/a/b")),
			r("wild-root", hosts("*.example.com")),
		},
		want: map[req]string{
			{line: "GET x.example.com/a/b"}: "wild-root",
			{line: "GET other.org/a/b"}:     "catch-all-exact",
		},
	}, {
		name: "a rule's most specific hostname decides",
		rules: []Rule[string]{
			r("both", hosts("*.example.com", "x.example.com", "*.example.com"), prefix("/")),
			r("wild", hosts("*.example.com"), prefix("/long/prefix")),
		},
		want: map[req]string{
			// "both" serves x.example.com exactly; exact host beats wildcard.
			{line: "GET x.example.com/long/prefix"}: "both",
			{line: "GET y.example.com/long/prefix"}: "wild",
		},
	}})
}

func TestPathRules(t *testing.T) {
	runMatchCases(t, []matchCase{{
		name: "prefix is element-wise",
		rules: []Rule[string]{
			r("abc", prefix("/abc")),
		},
		want: map[req]string{
			{line: "GET h/abc"}:     "abc",
			{line: "GET h/abc/"}:    "abc",
			{line: "GET h/abc/def"}: "abc",
			{line: "GET h/abc//x"}:  "abc",
			{line: "GET h/abcd"}:    "",
			{line: "GET h/ab"}:      "",
			{line: "GET h/ABC"}:     "",
			{line: "GET h/"}:        "",
		},
	}, {
		name: "trailing slash in a prefix is ignored for matching",
		rules: []Rule[string]{
			r("abc-slash", prefix("/abc/")),
		},
		want: map[req]string{
			{line: "GET h/abc"}:     "abc-slash",
			{line: "GET h/abc/"}:    "abc-slash",
			{line: "GET h/abc/def"}: "abc-slash",
			{line: "GET h/abcd"}:    "",
		},
	}, {
		name: "trailing slash counts once for precedence",
		rules: []Rule[string]{
			r("abc", prefix("/abc")),
			r("abc-slash", prefix("/abc/")),
			r("abc-d", prefix("/abc/d")),
		},
		want: map[req]string{
			{line: "GET h/abc"}:    "abc-slash",
			{line: "GET h/abc/x"}:  "abc-slash",
			{line: "GET h/abc/d"}:  "abc-d",
			{line: "GET h/abc/dd"}: "abc-slash",
		},
	}, {
		name: "exact is byte for byte",
		rules: []Rule[string]{
			r("abc", exact("/abc")),
			r("abc-slash", exact("/abc/")),
		},
		want: map[req]string{
			{line: "GET h/abc"}:  "abc",
			{line: "GET h/abc/"}: "abc-slash",
			{line: "GET h/Abc"}:  "",
			{line: "GET h/abcd"}: "",
			{line: "GET h/ab"}:   "",
		},
	}, {
		name: "root prefix matches everything, root exact only /",
		rules: []Rule[string]{
			r("root-exact", exact("/")),
			r("root-prefix", prefix("/")),
		},
		want: map[req]string{
			{line: "GET h/"}:    "root-exact",
			{line: "GET h"}:     "root-exact", // an empty path is "/"
			{line: "GET h//"}:   "root-exact", // "//" is "/", as backends read it
			{line: "GET h/x/y"}: "root-prefix",
		},
	}, {
		name: "repeated slashes are one, as backends read them",
		rules: []Rule[string]{
			r("a", prefix("/a")),
			r("a-b", prefix("/a/b")),
		},
		want: map[req]string{
			{line: "GET h/a//b"}:   "a-b",
			{line: "GET h//a/b"}:   "a-b",
			{line: "GET h/a///b/"}: "a-b",
			{line: "GET h/a/b"}:    "a-b",
			{line: "GET h/a%2Fb"}:  "", // an escaped slash is data here: one element "a%2Fb"
		},
	}, {
		name: "percent-encoding and dot segments are normalised on both sides",
		rules: []Rule[string]{
			r("user", exact("/%7euser")),
			r("admin", prefix("/admin")),
			r("slash", exact("/a%2fb")),
			r("cafe", exact("/caf%c3%a9")),
		},
		want: map[req]string{
			{line: "GET h/~user"}:               "user",
			{line: "GET h/%7Euser"}:             "user",
			{line: "GET h/%61dmin/x"}:           "admin",
			{line: "GET h/public/../admin"}:     "admin",
			{line: "GET h/public/%2e%2e/admin"}: "admin",
			{line: "GET h/./admin"}:             "admin",
			{line: "GET h/a%2Fb"}:               "slash",
			{line: "GET h/a/b"}:                 "", // an escaped slash is not a separator
			{line: "GET h/caf%C3%A9"}:           "cafe",
		},
	}, {
		name: "regex must match the whole path",
		rules: []Rule[string]{
			r("re", regex("/a.c")),
		},
		want: map[req]string{
			{line: "GET h/abc"}:   "re",
			{line: "GET h/abcd"}:  "",
			{line: "GET h/x/abc"}: "",
		},
	}, {
		name: "regex without a literal prefix sits at the root",
		rules: []Rule[string]{
			r("jpg", regex(`.*\.jpg`)),
			r("api", prefix("/api")),
		},
		want: map[req]string{
			{line: "GET h/api/x.jpg"}: "jpg",
			{line: "GET h/api/x.png"}: "api",
		},
	}, {
		name: "a regex's alternatives are not spliced by its anchors",
		rules: []Rule[string]{
			r("alt", regex("/a|/b")),
		},
		want: map[req]string{
			{line: "GET h/a"}:  "alt",
			{line: "GET h/b"}:  "alt",
			{line: "GET h/ax"}: "",
			{line: "GET h/xb"}: "",
		},
	}})
}

func TestPrecedence(t *testing.T) {
	runMatchCases(t, []matchCase{{
		name: "exact beats regex beats prefix",
		rules: []Rule[string]{
			r("prefix", prefix("/a/b"), method("GET"), header("X", "1"), query("q", "1")),
			r("regex", regex("/a/.*")),
			r("exact", exact("/a/b")),
		},
		want: map[req]string{
			{line: "GET h/a/b?q=1", headers: "X: 1"}:   "exact",
			{line: "GET h/a/b/c?q=1", headers: "X: 1"}: "regex",
			{line: "GET h/a/bc"}:                       "regex",
		},
	}, {
		name: "longest prefix",
		rules: []Rule[string]{
			r("a", prefix("/a")),
			r("a-b-c", prefix("/a/b/c")),
			r("a-b", prefix("/a/b")),
		},
		want: map[req]string{
			{line: "GET h/a/b/c/d"}: "a-b-c",
			{line: "GET h/a/b/x"}:   "a-b",
			{line: "GET h/a/bx"}:    "a",
		},
	}, {
		name: "longest prefix wins over method, headers and query",
		rules: []Rule[string]{
			r("short", prefix("/a"), method("GET"), header("X", "1"), query("q", "1")),
			r("long", prefix("/a/b")),
		},
		want: map[req]string{
			{line: "GET h/a/b?q=1", headers: "X: 1"}: "long",
		},
	}, {
		name: "method beats headers",
		rules: []Rule[string]{
			r("headers", header("X", "1"), header("Y", "2")),
			r("method", method("GET")),
		},
		want: map[req]string{
			{line: "GET h/", headers: "X: 1\nY: 2"}:  "method",
			{line: "POST h/", headers: "X: 1\nY: 2"}: "headers",
			{line: "POST h/"}:                        "",
		},
	}, {
		name: "more headers beat fewer, headers beat query",
		rules: []Rule[string]{
			r("query", query("a", "1"), query("b", "2"), query("c", "3")),
			r("one", header("X", "1")),
			r("two", header("X", "1"), header("Y", "2")),
		},
		want: map[req]string{
			{line: "GET h/?a=1&b=2&c=3", headers: "X: 1\nY: 2"}: "two",
			{line: "GET h/?a=1&b=2&c=3", headers: "X: 1"}:       "one",
			{line: "GET h/?a=1&b=2&c=3"}:                        "query",
		},
	}, {
		name: "more query params beat fewer",
		rules: []Rule[string]{
			r("one", query("a", "1")),
			r("two", query("a", "1"), query("b", "2")),
		},
		want: map[req]string{
			{line: "GET h/?a=1&b=2"}: "two",
			{line: "GET h/?b=2&a=1"}: "two",
			{line: "GET h/?a=1"}:     "one",
		},
	}, {
		name: "duplicate conditions count once",
		rules: []Rule[string]{
			// "dup" lists X twice (the second, "2", is ignored) so it has one
			// header condition, like "plain", and loses on creation time.
			r("dup", header("X", "1"), header("x", "2"), created(time.Second)),
			r("plain", header("Y", "1")),
		},
		want: map[req]string{
			{line: "GET h/", headers: "X: 1\nY: 1"}: "plain",
			{line: "GET h/", headers: "X: 1"}:       "dup",
			{line: "GET h/", headers: "X: 2"}:       "",
		},
	}, {
		name: "oldest route, then namespace/name, then rule, then match",
		rules: []Rule[string]{
			r("newer", created(time.Hour), named("a", "a")),
			r("z", named("ns", "z")),
			r("b-rule1", named("ns", "b"), index(1, 0)),
			r("b-rule0-match1", named("ns", "b"), index(0, 1)),
			r("b-rule0-match0", named("ns", "b"), index(0, 0), exact("/only")),
		},
		want: map[req]string{
			{line: "GET h/only"}: "b-rule0-match0",
			{line: "GET h/x"}:    "b-rule0-match1",
		},
	}, {
		name: "namespace/name compares as one string",
		rules: []Rule[string]{
			// "a-b/c" < "a/z" because '-' sorts before '/'.
			r("a/z", named("a", "z")),
			r("a-b/c", named("a-b", "c")),
		},
		want: map[req]string{
			{line: "GET h/"}: "a-b/c",
		},
	}, {
		name: "full ties keep input order",
		rules: []Rule[string]{
			r("first", named("ns", "same")),
			r("second", named("ns", "same")),
		},
		want: map[req]string{
			{line: "GET h/"}: "first",
		},
	}, {
		name: "regex rules at different depths are ordered by the other criteria",
		rules: []Rule[string]{
			r("deep", regex("/a/b/.*"), created(time.Hour)),
			r("shallow-old", regex("/.*")),
			r("deep-method", regex("/a/b/.*"), method("GET"), created(2*time.Hour)),
		},
		want: map[req]string{
			{line: "GET h/a/b/c"}:  "deep-method",
			{line: "POST h/a/b/c"}: "shallow-old",
			{line: "POST h/x"}:     "shallow-old",
		},
	}, {
		name: "a failing condition falls through to the next candidate",
		rules: []Rule[string]{
			r("exact-hdr", exact("/a"), header("X", "1")),
			r("re-hdr", regex("/a"), header("X", "2")),
			r("deep-hdr", prefix("/a"), header("X", "3")),
			r("root"),
		},
		want: map[req]string{
			{line: "GET h/a", headers: "X: 1"}: "exact-hdr",
			{line: "GET h/a", headers: "X: 2"}: "re-hdr",
			{line: "GET h/a", headers: "X: 3"}: "deep-hdr",
			{line: "GET h/a", headers: "X: 4"}: "root",
		},
	}})
}

func TestConditions(t *testing.T) {
	runMatchCases(t, []matchCase{{
		name: "method is case-sensitive",
		rules: []Rule[string]{
			r("get", method("GET")),
		},
		want: map[req]string{
			{line: "GET h/"}:  "get",
			{line: "get h/"}:  "",
			{line: "HEAD h/"}: "",
		},
	}, {
		name: "header names fold case, values do not",
		rules: []Rule[string]{
			r("hdr", header("x-version", "Two")),
		},
		want: map[req]string{
			{line: "GET h/", headers: "X-Version: Two"}:  "hdr",
			{line: "GET h/", headers: "x-VERSION: Two"}:  "hdr",
			{line: "GET h/", headers: "X-Version: two"}:  "",
			{line: "GET h/", headers: "X-Version: Two "}: "",
			{line: "GET h/"}: "",
		},
	}, {
		name: "repeated header lines are one comma-joined value",
		rules: []Rule[string]{
			r("joined", header("X", "1, 2")),
			r("single", header("X", "1")),
			r("re", headerRe("Y", `[0-9]+(, [0-9]+)*`)),
		},
		want: map[req]string{
			{line: "GET h/", headers: "X: 1\nX: 2"}:  "joined",
			{line: "GET h/", headers: "X: 1, 2"}:     "joined",
			{line: "GET h/", headers: "X: 1"}:        "single",
			{line: "GET h/", headers: "X: 1\nX: 1"}:  "",
			{line: "GET h/", headers: "X: 2\nX: 1"}:  "",
			{line: "GET h/", headers: "Y: 1\nY: 22"}: "re",
			{line: "GET h/", headers: "Y: 1\nY: x"}:  "",
		},
	}, {
		name: "header regex matches the whole value",
		rules: []Rule[string]{
			r("re", headerRe("X", "v[0-9]")),
		},
		want: map[req]string{
			{line: "GET h/", headers: "X: v1"}:  "re",
			{line: "GET h/", headers: "X: v12"}: "",
			{line: "GET h/", headers: "X: av1"}: "",
		},
	}, {
		name: "Host header condition sees the request host",
		rules: []Rule[string]{
			r("host", header("host", "example.com:8080")),
		},
		want: map[req]string{
			{line: "GET example.com:8080/"}: "host",
			{line: "GET example.com/"}:      "",
		},
	}, {
		name: "query names are case-sensitive and the first value counts",
		rules: []Rule[string]{
			r("whale", query("animal", "whale")),
			r("upper", query("ANIMAL", "Whale")),
		},
		want: map[req]string{
			{line: "GET h/?animal=whale"}:                "whale",
			{line: "GET h/?ANIMAL=Whale"}:                "upper",
			{line: "GET h/?animal=Whale"}:                "",
			{line: "GET h/?animal=whale&animal=dolphin"}: "whale",
			{line: "GET h/?animal=dolphin&animal=whale"}: "",
			{line: "GET h/?other=1&animal=whale"}:        "whale",
			{line: "GET h/?animal=whaledolphin"}:         "",
			{line: "GET h/?xanimal=whale"}:               "",
			{line: "GET h/"}:                             "",
		},
	}, {
		name: "query values are decoded as url.ParseQuery does",
		rules: []Rule[string]{
			r("space", query("q", "a b")),
			r("empty", query("e", "")),
			r("enc-name", query("k y", "1")),
			r("re", queryRe("r", "[a-z]+ [0-9]+")),
		},
		want: map[req]string{
			{line: "GET h/?q=a+b"}:       "space",
			{line: "GET h/?q=a%20b"}:     "space",
			{line: "GET h/?q=a b"}:       "space",
			{line: "GET h/?q=a%2"}:       "",
			{line: "GET h/?q=%zz&q=a+b"}: "space", // a bad escape skips the pair
			{line: "GET h/?q=a+b;x=1"}:   "",      // so does a semicolon
			{line: "GET h/?x;y&q=a+b"}:   "space",
			{line: "GET h/?e"}:           "empty",
			{line: "GET h/?e="}:          "empty",
			{line: "GET h/?k+y=1"}:       "enc-name",
			{line: "GET h/?k%20y=1"}:     "enc-name",
			{line: "GET h/?r=abc+12"}:    "re",
			{line: "GET h/?r=abc%2012"}:  "re",
			{line: "GET h/?r=abc12"}:     "",
			{line: "GET h/?&&q=a+b&&"}:   "space",
		},
	}})
}

func TestTooManyQueryParamsMatchNothing(t *testing.T) {
	table, err := Compile([]Rule[string]{r("q", query("a", "1"))})
	if err != nil {
		t.Fatal(err)
	}
	ok := func(raw string) bool {
		_, ok := table.Match(&Request{Path: "/", RawQuery: raw})
		return ok
	}
	if !ok("a=1" + strings.Repeat("&", maxQueryParams-1)) {
		t.Error("a query at the limit should still be parsed")
	}
	if ok("a=1" + strings.Repeat("&", maxQueryParams)) {
		t.Error("a query over the limit should have no parameters, as in net/url")
	}
}

func TestEmptyTable(t *testing.T) {
	table, err := Compile[string](nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := table.Match(&Request{Host: "h", Path: "/"}); ok {
		t.Error("an empty table matched")
	}
	if table.Len() != 0 {
		t.Errorf("Len = %d", table.Len())
	}
}

func TestLongHostReachesOnlyCatchAll(t *testing.T) {
	long := strings.Repeat("a.", 130) + "com" // 263 characters
	table, err := Compile([]Rule[string]{r("any"), r("wild", hosts("*.com"))})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := table.Match(&Request{Host: long, Path: "/"}); got != "any" {
		t.Errorf("got %q, want the catch-all", got)
	}
}
