package fuzz

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/matcher"
)

// TestMatcherTable runs the hand-computed cases through the compiled matcher.
func TestMatcherTable(t *testing.T) {
	for _, c := range tableCases {
		rules := c.build()
		tab, err := matcher.Compile(rules)
		if err != nil {
			t.Errorf("%s: Compile: %v", c.name, err)
			continue
		}
		req := c.req.req()
		got, ok := tab.Match(req)
		if !ok {
			got = -1
		}
		if got != c.want {
			t.Errorf("%s: Match picked %d, want %d\nrules:\n%srequest: %s", c.name, got, c.want, dumpRules(rules), dumpRequest(req))
		}
	}
}

// ---- FuzzMatchDifferential ----

// The differential target decodes its input into indices into these small
// alphabets, so that equal hosts, paths and keys (and so ties) are frequent.

var (
	diffRuleHosts = []string{"a.com", "b.a.com", "x.b.a.com", "*.a.com", "*.b.a.com", "*.com", "A.COM", "*.A.COM", "c.com", "B.A.com"}
	diffRulePaths = []string{"/", "/a", "/a/", "/ab", "/a/b", "/a/b/", "/a%2Fb", "/%61", "/a/./b", "/a//", "/a/../b", "/A", "/%7E", "/a%2fb", "/ab/"}
	diffRegexes   = []string{"/a.*", "/a/[a-z]+", ".*", "/(a|b)/.*", "/a|/b/.*", "(?i)/A.*", "/a/?", "/[ab]", "/a%2Fb", "/a/b/", "/a/b", "", "/a(/.*)?", "/ab?"}
	diffMethods   = []string{"", "", "GET", "POST"}
	diffHdrNames  = []string{"X-A", "x-a", "X-B", "Host"}
	diffHdrConds  = []matcher.ValueMatch{
		{Value: "1"}, {Value: "2"}, {Value: "1, 2"}, {Value: "[0-9]+", Regex: true}, {Value: ".*", Regex: true},
		{Value: "a.com"}, {Value: `(?i)a\.com(:[0-9]+)?`, Regex: true}, {Value: "1|2", Regex: true},
	}
	diffQueryNames = []string{"a", "A", "b"}
	diffQueryConds = []matcher.ValueMatch{
		{Value: "1"}, {Value: "2"}, {Value: "1 2"}, {Value: "[0-9]+", Regex: true}, {Value: ".*", Regex: true},
		{Value: ""}, {Value: "1|2", Regex: true}, {Value: "1 [0-9]", Regex: true},
	}
	diffTimes = []time.Time{t0, t1, t2, t1East}
	// Condition counts, weighted towards few so that rules still match.
	diffCondCounts = []int{0, 0, 0, 0, 1, 1, 2, 3}
	diffNSNames    = [][2]string{{"a", "z"}, {"a-b", "c"}, {"a", "b"}, {"b", "a"}, {"a-b", "a"}}

	diffReqHosts = []string{"a.com", "A.COM", "a.com.", "a.com:8080", "A.com.:443", "b.a.com", "x.b.a.com", "y.x.b.a.com",
		"B.A.COM.", "com", "c.com", "[::1]:8080", "a.com..", ".a.com", "xa.com", "b.a.com:1",
		host253, strings.ToUpper(host253) + ".:80", "x" + host253}
	diffReqPaths = []string{"/", "/a", "/a/", "/ab", "/a/b", "/a/b/", "/a%2Fb", "/a%2fb", "/%61", "/a/./b", "/a/../b", "/A",
		"/a/b/c", "/b/x", "/~", "/%7e", "", "/a//", "/abc", "/a/bb", "/ab/", "/a/b/../c", "/b"}
	diffReqMethods  = []string{"GET", "GET", "POST", "get", "PUT", ""}
	diffReqHdrNames = []string{"X-A", "x-a", "X-B", "Host", "X-C"}
	diffReqHdrVals  = []string{"1", "1", "2", "1, 2", "", "a.com", "12"}
	diffReqQueries  = []string{"", "a=1", "a=2", "a=1&a=2", "a=1+2", "a=%31", "b&a=1", "a;b=1&a=2", "A=1", "a=1%202",
		"a=%zz&a=1", "b=2&a=1", "a", "a=", "a=1&b=2&A=1", "b=1;a=1", "a=1&b=1", "b=2&a=2&A=1"}
)

// Limits of the decoded spec.
const (
	diffMaxRules    = 24
	diffMaxHosts    = 3
	diffMaxRequests = 4
	diffMaxLines    = 4
)

// Path kinds as the generator numbers them.
const (
	genPrefix = iota
	genExact
	genRegex
	genDefault // matcher.EveryPath, what a match without a path becomes
	genKinds
)

// genRule and genReq are a decoded fuzz input: indices into the alphabets.
type genRule struct {
	Hosts          []int
	Kind, PathIdx  int
	Method         int
	Headers, Query [][2]int // name index, condition index
	Created, NS    int
	Rule, Match    int
}

type genReq struct {
	Host, Path, Method int
	Lines              [][2]int // header name index, value index
	Query              int
}

type genSpec struct {
	Rules []genRule
	Reqs  []genReq
}

// byteSrc hands out small numbers from the fuzz input, 0 when it runs out.
type byteSrc struct {
	b []byte
	i int
}

func (s *byteSrc) n(k int) int {
	if s.i >= len(s.b) {
		return 0
	}
	v := int(s.b[s.i])
	s.i++
	return v % k
}

func decodeSpec(data []byte) genSpec {
	s := &byteSrc{b: data}
	var g genSpec
	nr := s.n(diffMaxRules + 1)
	for range nr {
		var r genRule
		for range s.n(diffMaxHosts + 1) {
			r.Hosts = append(r.Hosts, s.n(len(diffRuleHosts)))
		}
		r.Kind = s.n(genKinds)
		switch r.Kind {
		case genPrefix, genExact:
			r.PathIdx = s.n(len(diffRulePaths))
		case genRegex:
			r.PathIdx = s.n(len(diffRegexes))
		}
		r.Method = s.n(len(diffMethods))
		for range diffCondCounts[s.n(len(diffCondCounts))] {
			r.Headers = append(r.Headers, [2]int{s.n(len(diffHdrNames)), s.n(len(diffHdrConds))})
		}
		for range diffCondCounts[s.n(len(diffCondCounts))] {
			r.Query = append(r.Query, [2]int{s.n(len(diffQueryNames)), s.n(len(diffQueryConds))})
		}
		r.Created = s.n(len(diffTimes))
		r.NS = s.n(len(diffNSNames))
		r.Rule = s.n(2)
		r.Match = s.n(2)
		g.Rules = append(g.Rules, r)
	}
	nq := 1 + s.n(diffMaxRequests)
	for range nq {
		var q genReq
		q.Host = s.n(len(diffReqHosts))
		q.Path = s.n(len(diffReqPaths))
		q.Method = s.n(len(diffReqMethods))
		for range s.n(diffMaxLines + 1) {
			q.Lines = append(q.Lines, [2]int{s.n(len(diffReqHdrNames)), s.n(len(diffReqHdrVals))})
		}
		q.Query = s.n(len(diffReqQueries))
		g.Reqs = append(g.Reqs, q)
	}
	return g
}

// encodeSpec is the inverse of decodeSpec, for building seed inputs.
func encodeSpec(g genSpec) []byte {
	var b []byte
	put := func(v int) { b = append(b, byte(v)) }
	put(len(g.Rules))
	for _, r := range g.Rules {
		put(len(r.Hosts))
		for _, h := range r.Hosts {
			put(h)
		}
		put(r.Kind)
		if r.Kind == genPrefix || r.Kind == genExact || r.Kind == genRegex {
			put(r.PathIdx)
		}
		put(r.Method)
		put(condCountIndex(len(r.Headers)))
		for _, h := range r.Headers {
			put(h[0])
			put(h[1])
		}
		put(condCountIndex(len(r.Query)))
		for _, q := range r.Query {
			put(q[0])
			put(q[1])
		}
		put(r.Created)
		put(r.NS)
		put(r.Rule)
		put(r.Match)
	}
	put(len(g.Reqs) - 1)
	for _, q := range g.Reqs {
		put(q.Host)
		put(q.Path)
		put(q.Method)
		put(len(q.Lines))
		for _, l := range q.Lines {
			put(l[0])
			put(l[1])
		}
		put(q.Query)
	}
	return b
}

func condCountIndex(n int) int {
	for i, c := range diffCondCounts {
		if c == n {
			return i
		}
	}
	panic(fmt.Sprintf("no encoding for %d conditions", n))
}

func (g genSpec) rules() []matcher.Rule[int] {
	rules := make([]matcher.Rule[int], len(g.Rules))
	for i, gr := range g.Rules {
		r := &rules[i]
		for _, h := range gr.Hosts {
			r.Hostnames = append(r.Hostnames, diffRuleHosts[h])
		}
		switch gr.Kind {
		case genDefault:
			r.Path = matcher.EveryPath
		case genPrefix:
			r.Path = matcher.Path{Kind: matcher.PathPrefix, Value: diffRulePaths[gr.PathIdx]}
		case genExact:
			r.Path = matcher.Path{Kind: matcher.PathExact, Value: diffRulePaths[gr.PathIdx]}
		case genRegex:
			r.Path = matcher.Path{Kind: matcher.PathRegex, Value: diffRegexes[gr.PathIdx]}
		}
		r.Method = diffMethods[gr.Method]
		// Precedence is derived from fields already decoded, so the corpus
		// keeps its meaning; most rules keep the HTTPRoute value 0.
		if p := (gr.Created + 2*gr.NS + gr.PathIdx) % 4; p < 3 {
			r.Precedence = p
		}
		for _, h := range gr.Headers {
			c := diffHdrConds[h[1]]
			c.Name = diffHdrNames[h[0]]
			r.Headers = append(r.Headers, c)
		}
		for _, q := range gr.Query {
			c := diffQueryConds[q[1]]
			c.Name = diffQueryNames[q[0]]
			r.Query = append(r.Query, c)
		}
		ns := diffNSNames[gr.NS]
		r.Key = matcher.Key{Created: diffTimes[gr.Created], Namespace: ns[0], Name: ns[1], Rule: gr.Rule, Match: gr.Match}
		r.Ref = i
	}
	return rules
}

func (q genReq) request() *matcher.Request {
	var lines [][2]string
	for _, l := range q.Lines {
		lines = append(lines, [2]string{diffReqHdrNames[l[0]], diffReqHdrVals[l[1]]})
	}
	return refNewRequest(diffReqHosts[q.Host], diffReqPaths[q.Path], diffReqMethods[q.Method], lines, diffReqQueries[q.Query])
}

// explain renders the reference's view of one rule for a request.
func explain(rules []matcher.Rule[int], i int, req *matcher.Request) string {
	if i < 0 || i >= len(rules) {
		return "(none)"
	}
	k, ok := refRuleKey(i, &rules[i], req)
	if !ok {
		return fmt.Sprintf("rule %d does not match per the reference", i)
	}
	return fmt.Sprintf("rule %d key %+v", i, k)
}

// dumpRulesFor is dumpRules with the rules that match req marked "*".
func dumpRulesFor(rules []matcher.Rule[int], req *matcher.Request) string {
	lines := strings.SplitAfter(dumpRules(rules), "\n")
	for i := range rules {
		if _, ok := refRuleKey(i, &rules[i], req); ok {
			lines[i] = "*" + lines[i][1:]
		}
	}
	return strings.Join(lines, "")
}

// checkAgainstReference compares the compiled table with the reference on
// one request and reports a readable failure.
func checkAgainstReference(t *testing.T, tab *matcher.Table[int], rules []matcher.Rule[int], req *matcher.Request) {
	t.Helper()
	got, ok := tab.Match(req)
	_, want, wantOK := refMatch(rules, req)
	if !ok {
		got = -1
	}
	if ok != wantOK || got != want {
		t.Fatalf("compiled matcher picked %d, reference picked %d\nrules (* = matches per the reference):\n%srequest: %s\ncompiled: %s\nreference: %s",
			got, want, dumpRulesFor(rules, req), dumpRequest(req), explain(rules, got, req), explain(rules, want, req))
	}
}

func FuzzMatchDifferential(f *testing.F) {
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := decodeSpec(data)
		rules := g.rules()
		tab, err := matcher.Compile(rules)
		if err != nil {
			t.Fatalf("Compile rejected a valid rule set: %v\nrules:\n%s", err, dumpRules(rules))
		}
		for _, q := range g.Reqs {
			checkAgainstReference(t, tab, rules, q.request())
		}
	})
}

func TestSpecRoundTrip(t *testing.T) {
	g := genSpec{
		Rules: []genRule{
			{Hosts: []int{1, 3}, Kind: genRegex, PathIdx: 4, Method: 2, Headers: [][2]int{{1, 3}}, Query: [][2]int{{2, 5}, {0, 1}}, Created: 3, NS: 4, Rule: 1, Match: 1},
			{Kind: genDefault},
		},
		Reqs: []genReq{{Host: 11, Path: 6, Method: 4, Lines: [][2]int{{3, 4}}, Query: 15}, {}},
	}
	got := decodeSpec(encodeSpec(g))
	if fmt.Sprint(got) != fmt.Sprint(g) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, g)
	}
}

// ---- FuzzCompile ----

// Interesting strings for FuzzCompile; the input picks one of these or
// takes raw bytes.
var compileStrings = []string{
	"", "/", "a.com", "*.a.com", "*", "*.", "*.*.com", "a..com", "a.com.", ".a.com", "A.COM", "-a.com", "a-.com",
	"1.2.3.4", "::1", "[::1]", "a.com:80", "xn--bcher-kva.example", "a_b.com", strings.Repeat("a", 63) + ".com",
	strings.Repeat("a", 64) + ".com", strings.Repeat("a.", 126) + "a", strings.Repeat("a.", 127) + "a",
	"/a", "/a/", "a", "/a%2Fb", "/%zz", "/a/../..", "/../a", "/a\x00b", "/\xff", "(", ")", "[a-", "a)|(b", ".*",
	"(?i)/A", "^/a$", "/a|/b", `\Q/a\E.*`, "/a{2,1000}", "(?P<n>/a)", "x-a", "X A", "GET", "get", "G\x7fT", "Host",
	"h:o", "1, 2",
}

func (s *byteSrc) str() string {
	if s.i >= len(s.b) {
		return ""
	}
	c := s.b[s.i]
	s.i++
	if c < 0x80 {
		return compileStrings[int(c)%len(compileStrings)]
	}
	n := int(c & 0x7f)
	if n > len(s.b)-s.i {
		n = len(s.b) - s.i
	}
	out := string(s.b[s.i : s.i+n])
	s.i += n
	return out
}

func decodeCompileRules(data []byte) []matcher.Rule[int] {
	s := &byteSrc{b: data}
	var rules []matcher.Rule[int]
	for i := range s.n(9) {
		var r matcher.Rule[int]
		for range s.n(4) {
			r.Hostnames = append(r.Hostnames, s.str())
		}
		r.Path.Kind = matcher.PathKind(s.n(5)) // 3 and 4 are unknown kinds
		r.Path.Value = s.str()
		if s.n(2) == 1 {
			r.Method = s.str()
		}
		for range s.n(3) {
			r.Headers = append(r.Headers, matcher.ValueMatch{Name: s.str(), Value: s.str(), Regex: s.n(2) == 1})
		}
		for range s.n(3) {
			r.Query = append(r.Query, matcher.ValueMatch{Name: s.str(), Value: s.str(), Regex: s.n(2) == 1})
		}
		r.Key = matcher.Key{Created: diffTimes[s.n(len(diffTimes))], Namespace: s.str(), Name: s.str(), Rule: s.n(3) - 1, Match: s.n(3)}
		r.Ref = i
		rules = append(rules, r)
	}
	return rules
}

// derivedRequests builds requests aimed at the rules: their hosts (with a
// label in front of wildcards, a port, a trailing dot, upper case), their
// path values and the literal prefixes of their regexes, their header and
// query conditions with exact values.
func derivedRequests(rules []matcher.Rule[int]) []*matcher.Request {
	var reqs []*matcher.Request
	for i, r := range rules {
		host := "other.example"
		if len(r.Hostnames) > 0 {
			host = r.Hostnames[i%len(r.Hostnames)]
			if rest, ok := strings.CutPrefix(host, "*."); ok {
				host = "x." + rest
			}
		}
		path := r.Path.Value
		if r.Path.Kind == matcher.PathRegex {
			if re, err := regexp.Compile(r.Path.Value); err == nil {
				path, _ = re.LiteralPrefix()
			}
		}
		h := http.Header{}
		hostHeader := host
		for _, c := range r.Headers {
			if strings.EqualFold(c.Name, "Host") {
				hostHeader = c.Value
				continue
			}
			h.Add(c.Name, c.Value)
		}
		q := url.Values{}
		for _, c := range r.Query {
			q.Add(c.Name, c.Value)
		}
		reqs = append(reqs,
			&matcher.Request{Host: host, Path: matcher.NormalizePath(path), Method: r.Method, Header: h, RawQuery: q.Encode()},
			&matcher.Request{Host: strings.ToUpper(host) + ".:8080", Path: matcher.NormalizePath(path + "/x"), Method: "GET", Header: h, RawQuery: q.Encode()},
			&matcher.Request{Host: hostHeader, Path: matcher.NormalizePath(path), Method: r.Method, Header: h},
		)
	}
	reqs = append(reqs, &matcher.Request{Host: "a.com", Path: "/", Method: "GET"})
	if len(rules) > 0 {
		// A path far deeper than any trie key (keys are bounded).
		r := rules[0]
		long := matcher.NormalizePath(r.Path.Value + strings.Repeat("/a", 40000))
		reqs = append(reqs, &matcher.Request{Host: "a.com", Path: long, Method: r.Method})
	}
	return reqs
}

func FuzzCompile(f *testing.F) {
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		rules := decodeCompileRules(data)
		tab, err := matcher.Compile(rules)
		valid, sure := refValidate(rules)
		if sure && valid != (err == nil) {
			t.Fatalf("Compile error %v, but the reference says valid=%v\nrules:\n%s", err, valid, dumpRules(rules))
		}
		if err != nil {
			if tab != nil {
				t.Fatalf("Compile returned a table with an error")
			}
			checkErrorNamesRule(t, err, rules)
			return
		}
		for _, req := range derivedRequests(rules) {
			// An empty Host is left open (absent or empty?): no comparison.
			if sure && req.Host != "" {
				checkAgainstReference(t, tab, rules, req)
			} else {
				tab.Match(req) // must not panic
			}
		}
	})
}

// checkErrorNamesRule requires the error to name at least one rule the
// reference finds invalid by "{namespace}/{name}".
func checkErrorNamesRule(t *testing.T, err error, rules []matcher.Rule[int]) {
	t.Helper()
	msg := err.Error()
	found := false
	for _, r := range rules {
		if v, sure := refValidate([]matcher.Rule[int]{r}); v || !sure {
			continue
		}
		found = true
		if r.Key.Namespace == "" && r.Key.Name == "" {
			return // nothing to name it by
		}
		if strings.Contains(msg, r.Key.Namespace+"/"+r.Key.Name) {
			return
		}
	}
	if !found {
		return // no rule is invalid for certain on its own
	}
	t.Fatalf("Compile error does not name an invalid rule by namespace/name: %v\nrules:\n%s", err, dumpRules(rules))
}
