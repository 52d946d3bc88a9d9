package fuzz

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/matcher"
)

// Hand-computed cases, one or more per precedence rule and per condition in
// doc.go. TestReferenceTable checks the reference matcher against them;
// TestMatcherTable (matcher_fuzz_test.go) checks the compiled matcher.

var (
	t0 = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 = time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	t2 = time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)
	// t1 seen from another zone: the same instant, so it ties with t1.
	t1East = t1.In(time.FixedZone("east", 2*3600))
)

// host253 is a 253-byte name under a.com, the longest a DNS name can be.
var host253 = strings.Repeat("x.", 123) + "b.a.com"

// rb builds a Rule[int]; R() is a catch-all: every host, every path.
type rb struct{ r matcher.Rule[int] }

func R() rb {
	return rb{matcher.Rule[int]{Path: matcher.EveryPath, Key: matcher.Key{Created: t0, Namespace: "ns", Name: "r"}}}
}

func (b rb) H(hosts ...string) rb {
	b.r.Hostnames = append(append([]string(nil), b.r.Hostnames...), hosts...)
	return b
}
func (b rb) Prefix(v string) rb {
	b.r.Path = matcher.Path{Kind: matcher.PathPrefix, Value: v}
	return b
}
func (b rb) Exact(v string) rb {
	b.r.Path = matcher.Path{Kind: matcher.PathExact, Value: v}
	return b
}
func (b rb) Regex(v string) rb {
	b.r.Path = matcher.Path{Kind: matcher.PathRegex, Value: v}
	return b
}
func (b rb) M(method string) rb { b.r.Method = method; return b }
func (b rb) Hdr(name, value string) rb {
	b.r.Headers = append(append([]matcher.ValueMatch(nil), b.r.Headers...), matcher.ValueMatch{Name: name, Value: value})
	return b
}
func (b rb) HdrRe(name, expr string) rb {
	b.r.Headers = append(append([]matcher.ValueMatch(nil), b.r.Headers...), matcher.ValueMatch{Name: name, Value: expr, Regex: true})
	return b
}
func (b rb) Q(name, value string) rb {
	b.r.Query = append(append([]matcher.ValueMatch(nil), b.r.Query...), matcher.ValueMatch{Name: name, Value: value})
	return b
}
func (b rb) QRe(name, expr string) rb {
	b.r.Query = append(append([]matcher.ValueMatch(nil), b.r.Query...), matcher.ValueMatch{Name: name, Value: expr, Regex: true})
	return b
}
func (b rb) K(created time.Time, ns, name string, rule, match int) rb {
	b.r.Key = matcher.Key{Created: created, Namespace: ns, Name: name, Rule: rule, Match: match}
	return b
}
func (b rb) At(created time.Time) rb { b.r.Key.Created = created; return b }

// qb builds a request; the raw path goes through NormalizePath.
type qb struct {
	host, path, method, query string
	header                    [][2]string
}

func Q(host, path string) qb { return qb{host: host, path: path, method: "GET"} }

func (q qb) M(method string) qb { q.method = method; return q }
func (q qb) Hdr(name, value string) qb {
	q.header = append(append([][2]string(nil), q.header...), [2]string{name, value})
	return q
}
func (q qb) Query(raw string) qb { q.query = raw; return q }
func (q qb) req() *matcher.Request {
	return refNewRequest(q.host, q.path, q.method, q.header, q.query)
}

type tableCase struct {
	name  string
	rules []rb
	req   qb
	want  int // index of the winning rule, -1 for no match
}

func (c tableCase) build() []matcher.Rule[int] {
	rules := make([]matcher.Rule[int], len(c.rules))
	for i, b := range c.rules {
		rules[i] = b.r
		rules[i].Ref = i
	}
	return rules
}

func rs(b ...rb) []rb { return b }

var tableCases = []tableCase{
	// 1. Host.
	{"exact host beats wildcard with better path",
		rs(R().H("*.a.com").Exact("/x").M("GET"), R().H("b.a.com")), Q("b.a.com", "/x"), 1},
	{"longer wildcard beats shorter",
		rs(R().H("*.com").Exact("/x").M("GET"), R().H("*.a.com")), Q("b.a.com", "/x"), 1},
	{"wildcard beats catch-all",
		rs(R().Exact("/x").M("GET"), R().H("*.a.com")), Q("b.a.com", "/x"), 1},
	{"exact host beats catch-all",
		rs(R().Exact("/x").M("GET"), R().H("b.a.com")), Q("b.a.com", "/x"), 1},
	{"exact host beats wildcard and catch-all",
		rs(R(), R().H("*.a.com"), R().H("b.a.com"), R().H("*.b.a.com")), Q("b.a.com", "/"), 2},
	{"falls back to catch-all when host rule misses",
		rs(R().H("a.com").Prefix("/v1"), R().Prefix("/")), Q("a.com", "/other"), 1},
	{"host rule wins when it matches",
		rs(R().H("a.com").Prefix("/v1"), R().Prefix("/")), Q("a.com", "/v1/x"), 0},
	{"falls back from exact to wildcard",
		rs(R().H("b.a.com").Prefix("/v1"), R().H("*.a.com").Prefix("/v2"), R().H("*.com")), Q("b.a.com", "/v2"), 1},
	{"falls back from longer wildcard to shorter",
		rs(R().H("*.b.a.com").Prefix("/v1"), R().H("*.a.com").Prefix("/v2"), R()), Q("x.b.a.com", "/v2"), 1},
	{"wildcard needs a label in front",
		rs(R().H("*.a.com")), Q("a.com", "/"), -1},
	{"wildcard needs a character in front",
		rs(R().H("*.a.com")), Q(".a.com", "/"), -1},
	{"wildcard spans several labels",
		rs(R().H("*.a.com")), Q("x.b.a.com", "/"), 0},
	{"xa.com is not under *.a.com",
		rs(R().H("*.a.com").M("GET"), R().H("*.com")), Q("xa.com", "/"), 1},
	{"*.com serves a.com",
		rs(R().H("*.com")), Q("a.com", "/"), 0},
	{"port, trailing dot and case of the request host",
		rs(R().H("a.com")), Q("A.COM.:8443", "/"), 0},
	{"hostname case folded",
		rs(R().H("A.COM")), Q("a.com", "/"), 0},
	{"wildcard hostname case folded",
		rs(R().H("*.A.Com")), Q("B.a.COM", "/"), 0},
	{"only one trailing dot dropped",
		rs(R().H("a.com"), R().H("*.com")), Q("a.com..", "/"), -1},
	{"IPv6 literal with port is no hostname",
		rs(R().H("a.com"), R().H("*.com")), Q("[::1]:8080", "/"), -1},
	{"a rule's best hostname counts",
		rs(R().H("*.com", "b.a.com").Exact("/x"), R().H("*.a.com").Exact("/x").M("GET")), Q("b.a.com", "/x"), 0},
	{"duplicate hostnames are harmless",
		rs(R().H("a.com", "A.COM", "a.com")), Q("a.com", "/"), 0},
	{"a 253-byte host reaches a wildcard",
		rs(R().H("*.a.com"), R()), Q(host253, "/"), 0},
	{"a 253-byte host with a trailing dot and port reaches a wildcard",
		rs(R().H("*.a.com"), R()), Q(strings.ToUpper(host253)+".:8080", "/"), 0},
	{"a 254-byte host reaches only rules without hostnames",
		rs(R().H("*.a.com").M("GET"), R()), Q("x"+host253, "/"), 1},
	{"a 254-byte host matches no wildcard",
		rs(R().H("*.a.com"), R().H("*.com")), Q("x"+host253, "/"), -1},
	{"other hosts are not served",
		rs(R().H("a.com"), R().H("*.b.com")), Q("c.com", "/"), -1},

	// 2. Path kind.
	{"exact beats regex and prefix",
		rs(R().Prefix("/a"), R().Regex("/a.*"), R().Exact("/a/b")), Q("h", "/a/b"), 2},
	{"regex beats prefix",
		rs(R().Prefix("/a"), R().Regex("/a.*"), R().Exact("/a/b")), Q("h", "/a/c"), 1},
	{"regex beats a longer prefix",
		rs(R().Prefix("/a/b/c"), R().Regex("/.*")), Q("h", "/a/b/c"), 1},
	{"host beats path kind",
		rs(R().Exact("/a"), R().H("*.h").Prefix("/")), Q("x.h", "/a"), 1},
	{"path kind beats method",
		rs(R().Prefix("/a").M("GET"), R().Regex("/a")), Q("h", "/a"), 1},
	{"regex full match",
		rs(R().Regex("/a.c")), Q("h", "/abcd"), -1},
	{"regex full match hits",
		rs(R().Regex("/a.c")), Q("h", "/abc"), 0},
	{"regex alternation is wrapped whole",
		rs(R().Regex("/a|/b")), Q("h", "/bx"), -1},
	{"regex alternation second branch",
		rs(R().Regex("/a|/b")), Q("h", "/b"), 0},
	{"regex sees the normalised path",
		rs(R().Regex("/a/b")), Q("h", "/a/./%62"), 0},
	{"regex sees escaped slash",
		rs(R().Regex("/a%2Fb"), R().Regex("/a/b")), Q("h", "/a%2fb"), 0},
	{"case-insensitive regex",
		rs(R().Regex("(?i)/A.*")), Q("h", "/a/b"), 0},
	{"regexes tie on kind, then method",
		rs(R().Regex("/a/b"), R().Regex("/a/.*").M("GET")), Q("h", "/a/b"), 1},

	// 3. Prefix length.
	{"longer prefix wins",
		rs(R().Prefix("/a"), R().Prefix("/a/b")), Q("h", "/a/b/c"), 1},
	{"trailing slash counts for length",
		rs(R().Prefix("/a"), R().Prefix("/a/")), Q("h", "/a/b"), 1},
	{"trailing slash counts for length, reversed",
		rs(R().Prefix("/a/"), R().Prefix("/a")), Q("h", "/a/b"), 0},
	{"length is measured after normalising",
		rs(R().Prefix("/a/%62"), R().Prefix("/a/b/")), Q("h", "/a/b/c"), 1},
	{"several trailing slashes count as one",
		rs(R().Prefix("/a//").At(t1), R().Prefix("/a/").At(t0)), Q("h", "/a/b"), 1},
	{"several trailing slashes count as one, reversed",
		rs(R().Prefix("/a/").At(t1), R().Prefix("/a///").At(t0)), Q("h", "/a/b"), 1},
	{"trailing slashes do not make a prefix longer than the next element",
		rs(R().Prefix("/a///"), R().Prefix("/a/b")), Q("h", "/a/b"), 1},
	{"prefix needs an element boundary",
		rs(R().Prefix("/abc")), Q("h", "/abcd"), -1},
	{"prefix matches itself",
		rs(R().Prefix("/abc")), Q("h", "/abc"), 0},
	{"prefix matches with trailing slash",
		rs(R().Prefix("/abc")), Q("h", "/abc/"), 0},
	{"prefix with slash matches without",
		rs(R().Prefix("/abc/")), Q("h", "/abc"), 0},
	{"prefix with slash does not match longer element",
		rs(R().Prefix("/abc/")), Q("h", "/abcd"), -1},
	{"prefix with several trailing slashes",
		rs(R().Prefix("/a//")), Q("h", "/a/x"), 0},
	{"prefix value normalised",
		rs(R().Prefix("/%61/")), Q("h", "/a/x"), 0},
	{"prefix dot segments removed",
		rs(R().Prefix("/x/../a")), Q("h", "/a"), 0},
	{"escaped slash is no separator",
		rs(R().Prefix("/a")), Q("h", "/a%2Fb"), -1},
	{"prefix is case-sensitive",
		rs(R().Prefix("/A")), Q("h", "/a"), -1},
	{"default path is prefix /",
		rs(R().At(t1), R().Prefix("/").At(t0)), Q("h", "/anything"), 1},
	{"default path ties with prefix /",
		rs(R(), R().Prefix("/")), Q("h", "/anything"), 0},
	{"prefix / beats nothing but loses to /a",
		rs(R().Prefix("/"), R().Prefix("/a")), Q("h", "/a"), 1},
	{"exact value normalised",
		rs(R().Exact("/%7euser")), Q("h", "/~user"), 0},
	{"exact value dot segments",
		rs(R().Exact("/a/./b")), Q("h", "/a/b"), 0},
	{"exact escaped slash case",
		rs(R().Exact("/a%2fb")), Q("h", "/a%2Fb"), 0},
	{"exact is whole path",
		rs(R().Exact("/a")), Q("h", "/a/"), -1},

	// 4. Method.
	{"method beats no method",
		rs(R().Prefix("/a"), R().Prefix("/a").M("GET")), Q("h", "/a"), 1},
	{"longer prefix beats method",
		rs(R().Prefix("/a/b"), R().Prefix("/a").M("GET")), Q("h", "/a/b"), 0},
	{"method is case-sensitive",
		rs(R().M("GET")), Q("h", "/").M("get"), -1},
	{"other method does not match",
		rs(R().M("POST"), R()), Q("h", "/"), 1},

	// 5. Headers, then query.
	{"more headers win",
		rs(R().Hdr("X-A", "1"), R().Hdr("X-A", "1").Hdr("X-B", "2")), Q("h", "/").Hdr("X-A", "1").Hdr("X-B", "2"), 1},
	{"method beats more headers",
		rs(R().M("GET"), R().Hdr("X-A", "1").Hdr("X-B", "2")), Q("h", "/").Hdr("X-A", "1").Hdr("X-B", "2"), 0},
	{"duplicate header names count once",
		rs(R().Hdr("X-A", "1").Hdr("x-a", "1").At(t1), R().Hdr("X-B", "2").At(t0)), Q("h", "/").Hdr("X-A", "1").Hdr("X-B", "2"), 1},
	{"only the first duplicate header counts",
		rs(R().Hdr("X-A", "1").Hdr("x-a", "2")), Q("h", "/").Hdr("X-A", "1"), 0},
	{"later duplicate header is not checked",
		rs(R().Hdr("X-A", "2").Hdr("x-a", "1")), Q("h", "/").Hdr("X-A", "1"), -1},
	{"header names are case-insensitive",
		rs(R().Hdr("x-a", "1")), Q("h", "/").Hdr("X-A", "1"), 0},
	{"repeated header lines are joined",
		rs(R().Hdr("X-A", "1, 2")), Q("h", "/").Hdr("X-A", "1").Hdr("x-a", "2"), 0},
	{"regex sees the joined value",
		rs(R().HdrRe("X-A", "[0-9]+")), Q("h", "/").Hdr("X-A", "1").Hdr("X-A", "2"), -1},
	{"absent header never matches",
		rs(R().HdrRe("X-B", ".*")), Q("h", "/").Hdr("X-A", "1"), -1},
	{"empty header value is present",
		rs(R().HdrRe("X-B", ".*")), Q("h", "/").Hdr("X-B", ""), 0},
	{"header regex full match",
		rs(R().HdrRe("X-A", "[0-9]")), Q("h", "/").Hdr("X-A", "12"), -1},
	{"header value case-sensitive",
		rs(R().Hdr("X-A", "a")), Q("h", "/").Hdr("X-A", "A"), -1},
	{"Host condition sees the request Host verbatim",
		rs(R().Hdr("host", "A.COM:8080")), Q("A.COM:8080", "/"), 0},
	{"Host condition is not normalised",
		rs(R().Hdr("Host", "A.COM:8080")), Q("a.com", "/"), -1},
	{"Host condition ignores a Host header line",
		rs(R().Hdr("Host", "x")), Q("a.com", "/").Hdr("Host", "x"), -1},
	{"Host condition with regex",
		rs(R().HdrRe("HOST", `a\.com(:[0-9]+)?`)), Q("a.com:80", "/"), 0},
	{"more query conditions win",
		rs(R().Q("a", "1"), R().Q("a", "1").Q("b", "2")), Q("h", "/").Query("a=1&b=2"), 1},
	{"more headers beat more query",
		rs(R().Hdr("X-A", "1"), R().Q("a", "1").Q("b", "2")), Q("h", "/").Hdr("X-A", "1").Query("a=1&b=2"), 0},
	{"query names are case-sensitive and count apart",
		rs(R().Q("a", "1").Q("A", "1").At(t1), R().Q("a", "1").At(t0)), Q("h", "/").Query("a=1&A=1"), 0},
	{"query name case must match",
		rs(R().Q("a", "1")), Q("h", "/").Query("A=1"), -1},
	{"duplicate query names count once",
		rs(R().Q("a", "1").Q("a", "2").At(t1), R().Q("b", "2").At(t0)), Q("h", "/").Query("a=1&b=2"), 1},
	{"only the first duplicate query counts",
		rs(R().Q("a", "1").Q("a", "2")), Q("h", "/").Query("a=1"), 0},
	{"first query value",
		rs(R().Q("a", "1")), Q("h", "/").Query("a=1&a=2"), 0},
	{"not the second query value",
		rs(R().Q("a", "2")), Q("h", "/").Query("a=1&a=2"), -1},
	{"plus is a space",
		rs(R().Q("a", "1 2")), Q("h", "/").Query("a=1+2"), 0},
	{"escaped space",
		rs(R().Q("a", "1 2")), Q("h", "/").Query("a=1%202"), 0},
	{"escapes decoded",
		rs(R().Q("a", "1")), Q("h", "/").Query("a=%31"), 0},
	{"pair with semicolon skipped",
		rs(R().Q("a", "2")), Q("h", "/").Query("a;b=1&a=2"), 0},
	{"semicolon is no separator",
		rs(R().Q("b", "1")), Q("h", "/").Query("a;b=1&a=2"), -1},
	{"pair with bad escape skipped",
		rs(R().Q("a", "1")), Q("h", "/").Query("a=%zz&a=1"), 0},
	{"bare name has empty value",
		rs(R().Q("b", "")), Q("h", "/").Query("b&a=1"), 0},
	{"absent query never matches",
		rs(R().QRe("b", ".*")), Q("h", "/").Query("a=1"), -1},
	{"query regex full match",
		rs(R().QRe("a", "[0-9]")), Q("h", "/").Query("a=12"), -1},
	{"query regex alternation",
		rs(R().QRe("a", "1|2")), Q("h", "/").Query("a=2"), 0},
	{"query regex on decoded value",
		rs(R().QRe("a", "1 [0-9]")), Q("h", "/").Query("a=1+2"), 0},
	{"query count beats age",
		rs(R().At(t0), R().Q("a", "1").At(t2)), Q("h", "/").Query("a=1"), 1},

	// 6. Key.
	{"older route wins",
		rs(R().At(t2), R().At(t1)), Q("h", "/"), 1},
	{"same instant in another zone ties",
		rs(R().K(t1, "b", "x", 0, 0), R().K(t1East, "a", "x", 0, 0)), Q("h", "/"), 1},
	{"age beats name",
		rs(R().K(t1, "a", "a", 0, 0), R().K(t0, "z", "z", 0, 0)), Q("h", "/"), 1},
	{"namespace/name is one string",
		rs(R().K(t0, "a", "z", 0, 0), R().K(t0, "a-b", "c", 0, 0)), Q("h", "/"), 1},
	{"namespace/name is one string, reversed",
		rs(R().K(t0, "a-b", "c", 0, 0), R().K(t0, "a", "z", 0, 0)), Q("h", "/"), 0},
	{"name beats rule index",
		rs(R().K(t0, "a", "b", 0, 0), R().K(t0, "a", "a", 1, 1)), Q("h", "/"), 1},
	{"rule index",
		rs(R().K(t0, "a", "b", 1, 0), R().K(t0, "a", "b", 0, 1)), Q("h", "/"), 1},
	{"match index",
		rs(R().K(t0, "a", "b", 0, 1), R().K(t0, "a", "b", 0, 0)), Q("h", "/"), 1},
	{"input order",
		rs(R().K(t0, "a", "b", 0, 0), R().K(t0, "a", "b", 0, 0)), Q("h", "/"), 0},
	{"zero time is oldest",
		rs(R().At(t0), R().At(time.Time{})), Q("h", "/"), 1},

	// Nothing.
	{"no rules", nil, Q("h", "/"), -1},
	{"nothing matches",
		rs(R().Exact("/a"), R().H("b.com"), R().M("POST")), Q("a.com", "/b"), -1},
}

func dumpRules[T any](rules []matcher.Rule[T]) string {
	var b strings.Builder
	for i, r := range rules {
		fmt.Fprintf(&b, "  [%d] hosts=%+q path=%s %+q method=%+q headers=%s query=%s key={%s %+q rule=%d match=%d} ref=%v\n",
			i, r.Hostnames, r.Path.Kind, r.Path.Value, r.Method, dumpVM(r.Headers), dumpVM(r.Query),
			r.Key.Created.Format(time.RFC3339), r.Key.Namespace+"/"+r.Key.Name, r.Key.Rule, r.Key.Match, r.Ref)
	}
	return b.String()
}

func dumpVM(ms []matcher.ValueMatch) string {
	var parts []string
	for _, m := range ms {
		op := "="
		if m.Regex {
			op = "~"
		}
		parts = append(parts, fmt.Sprintf("%+q%s%+q", m.Name, op, m.Value))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func dumpRequest(r *matcher.Request) string {
	return fmt.Sprintf("host=%+q path=%+q method=%+q header=%+q rawquery=%+q", r.Host, r.Path, r.Method, r.Header, r.RawQuery)
}

func TestReferenceTable(t *testing.T) {
	for _, c := range tableCases {
		rules := c.build()
		req := c.req.req()
		_, got, _ := refMatch(rules, req)
		if got != c.want {
			t.Errorf("%s: reference picked %d, want %d\nrules:\n%srequest: %s", c.name, got, c.want, dumpRules(rules), dumpRequest(req))
		}
	}
}

func TestReferenceRequestHost(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a.com", "a.com"},
		{"A.COM", "a.com"},
		{"a.com.", "a.com"},
		{"a.com..", "a.com."},
		{"a.com:8080", "a.com"},
		{"A.Com.:443", "a.com"},
		{"[::1]:8080", "[::1]"},
		{"[::1]", "[::1]"},
		{"\u212a.com", "\u212a.com"}, // Kelvin sign: no Unicode folding
	} {
		if got := refRequestHost(c.in); got != c.want {
			t.Errorf("refRequestHost(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestReferenceValidate(t *testing.T) {
	for _, c := range []struct {
		name  string
		rule  rb
		valid bool
	}{
		{"plain", R().H("a.com", "*.a.com", "A.COM").Prefix("/a").M("GET").Hdr("X-A", "1").Q("a", "1"), true},
		{"default path", R(), true},
		{"wildcard alone", R().H("*"), false},
		{"inner wildcard", R().H("a.*.com"), false},
		{"double wildcard", R().H("*.*.com"), false},
		{"empty hostname", R().H(""), false},
		{"empty label", R().H("a..com"), false},
		{"trailing dot", R().H("a.com."), false},
		{"underscore", R().H("a_b.com"), false},
		{"long label", R().H(strings.Repeat("a", 64) + ".com"), false},
		{"long name", R().H(strings.Repeat("a.", 127) + "com"), false},
		{"port", R().H("a.com:80"), false},
		{"ipv6", R().H("::1"), false},
		{"relative prefix", R().Prefix("a"), false},
		{"relative exact", R().Exact("a"), false},
		{"bad path regex", R().Regex("("), false},
		{"bad header regex", R().HdrRe("X-A", "["), false},
		{"bad query regex", R().QRe("a", "[a-"), false},
		{"empty header name", R().Hdr("", "1"), false},
		{"header name with space", R().Hdr("X A", "1"), false},
		{"header name with colon", R().Hdr("X:A", "1"), false},
		{"empty query name", R().Q("", "1"), false},
		{"method with space", R().M("GE T"), false},
		{"unknown kind", rb{matcher.Rule[int]{Path: matcher.Path{Kind: 9, Value: "/"}}}, false},
	} {
		v, sure := refValidate([]matcher.Rule[int]{c.rule.r})
		if !sure || v != c.valid {
			t.Errorf("%s: refValidate = %v (sure %v), want %v", c.name, v, sure, c.valid)
		}
	}
}
