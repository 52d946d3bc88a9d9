// Package fuzz holds differential and robustness fuzz targets for the
// compiled router in package matcher. Everything here is test code.
package fuzz

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/tunnelgate/tunnelgate/matcher"
)

// This file is the reference matcher: a plain linear scan over the rules,
// written from the package documentation of matcher (doc.go) and sharing no
// code with it except the exported types and NormalizePath. It is meant to be
// obviously correct, not fast.

// Host classes, best first.
const (
	refHostExact    = 0
	refHostWildcard = 1
	refHostAny      = 2
)

// Path kinds in precedence order, best first (doc.go: Exact, then
// RegularExpression, then PathPrefix).
const (
	refPathExact  = 0
	refPathRegex  = 1
	refPathPrefix = 2
)

// refKey is the full precedence tuple of a matching rule. Smaller wins on
// every field; fields that mean "more is better" are compared reversed in
// refLess.
type refKey struct {
	hostClass  int  // refHostExact < refHostWildcard < refHostAny
	wildLen    int  // length of the wildcard suffix; longer wins
	pathKind   int  // refPathExact < refPathRegex < refPathPrefix
	precedence int  // Rule.Precedence; higher wins
	prefixLen  int  // normalised prefix length, trailing slashes as one; longer wins
	hasMethod  bool // a method beats no method
	nHeaders   int  // header conditions after dedupe; more wins
	nQuery     int  // query conditions after dedupe; more wins
	created    time.Time
	nsName     string // Namespace + "/" + Name, compared as one string
	rule       int
	match      int
	input      int // position in the rule slice
}

// refLess reports whether a has strictly higher precedence than b.
func refLess(a, b refKey) bool {
	if a.hostClass != b.hostClass {
		return a.hostClass < b.hostClass
	}
	if a.wildLen != b.wildLen {
		return a.wildLen > b.wildLen
	}
	if a.pathKind != b.pathKind {
		return a.pathKind < b.pathKind
	}
	if a.prefixLen != b.prefixLen {
		return a.prefixLen > b.prefixLen
	}
	if a.precedence != b.precedence {
		return a.precedence > b.precedence
	}
	if a.hasMethod != b.hasMethod {
		return a.hasMethod
	}
	if a.nHeaders != b.nHeaders {
		return a.nHeaders > b.nHeaders
	}
	if a.nQuery != b.nQuery {
		return a.nQuery > b.nQuery
	}
	if !a.created.Equal(b.created) {
		return a.created.Before(b.created)
	}
	if a.nsName != b.nsName {
		return a.nsName < b.nsName
	}
	if a.rule != b.rule {
		return a.rule < b.rule
	}
	if a.match != b.match {
		return a.match < b.match
	}
	return a.input < b.input
}

// refLowerASCII folds A-Z to a-z and leaves every other byte alone.
func refLowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// refRequestHost drops a port and one trailing dot and folds ASCII case.
func refRequestHost(h string) string {
	if strings.HasPrefix(h, "[") {
		// "[::1]:8080" -> "[::1]"
		if i := strings.IndexByte(h, ']'); i >= 0 {
			h = h[:i+1]
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	h = strings.TrimSuffix(h, ".")
	return refLowerASCII(h)
}

// refHostnames folds and deduplicates a rule's hostnames.
func refHostnames(hs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, h := range hs {
		h = refLowerASCII(h)
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// refHostMatch returns the best (class, wildcard suffix length) with which a
// rule serving hostnames serves the normalised request host.
func refHostMatch(hostnames []string, host string) (class, wildLen int, ok bool) {
	hostnames = refHostnames(hostnames)
	if len(hostnames) == 0 {
		return refHostAny, 0, true
	}
	if len(host) > 253 {
		// Longer than any DNS name: only rules without hostnames serve it.
		return 0, 0, false
	}
	class = refHostAny + 1
	for _, hn := range hostnames {
		if strings.HasPrefix(hn, "*.") {
			suffix := hn[1:] // ".example.com"
			if strings.HasSuffix(host, suffix) && len(host) > len(suffix) {
				if class > refHostWildcard || (class == refHostWildcard && len(suffix) > wildLen) {
					class, wildLen = refHostWildcard, len(suffix)
				}
			}
			continue
		}
		if hn == host {
			class, wildLen = refHostExact, 0
		}
	}
	if class > refHostAny {
		return 0, 0, false
	}
	return class, wildLen, true
}

var refRegexCache sync.Map // expression -> *regexp.Regexp (nil if invalid)

// refFullMatch reports whether the RE2 expression matches all of s.
func refFullMatch(expr, s string) bool {
	v, ok := refRegexCache.Load(expr)
	if !ok {
		re, err := regexp.Compile("^(?:" + expr + ")$")
		if err != nil {
			re = nil
		}
		v, _ = refRegexCache.LoadOrStore(expr, re)
	}
	re := v.(*regexp.Regexp)
	return re != nil && re.MatchString(s)
}

func refValueMatch(m matcher.ValueMatch, s string) bool {
	if m.Regex {
		return refFullMatch(m.Value, s)
	}
	return m.Value == s
}

// refDedupe keeps the first condition per name; fold says whether names
// are case-insensitive.
func refDedupe(ms []matcher.ValueMatch, fold bool) []matcher.ValueMatch {
	var out []matcher.ValueMatch
next:
	for _, m := range ms {
		for _, o := range out {
			if o.Name == m.Name || (fold && refLowerASCII(o.Name) == refLowerASCII(m.Name)) {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}

// refHeaderValue returns the value a header condition is compared with.
func refHeaderValue(r *matcher.Request, name string) (string, bool) {
	if refLowerASCII(name) == "host" {
		return r.Host, true
	}
	vs := r.Header.Values(name) // canonicalises the name
	if len(vs) == 0 {
		return "", false
	}
	return strings.Join(vs, ", "), true
}

// refQueryValue returns the first value of a query parameter.
func refQueryValue(r *matcher.Request, name string) (string, bool) {
	q, _ := url.ParseQuery(r.RawQuery)
	vs := q[name]
	if len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// refPathMatch reports whether a rule's path condition matches the
// (normalised) request path, with its kind and prefix length.
func refPathMatch(p matcher.Path, path string) (kind, prefixLen int, ok bool) {
	switch p.Kind {
	case matcher.PathExact:
		return refPathExact, 0, matcher.NormalizePath(p.Value) == path
	case matcher.PathRegex:
		return refPathRegex, 0, refFullMatch(p.Value, path)
	default: // matcher.PathPrefix
		v := matcher.NormalizePath(p.Value)
		t := strings.TrimRight(v, "/")
		ok = strings.HasPrefix(path, t) && (len(path) == len(t) || path[len(t)] == '/')
		// Precedence length: the normalised value with its trailing
		// slashes counted as one ("/a//" is as long as "/a/").
		prefixLen = len(t)
		if len(t) < len(v) {
			prefixLen++
		}
		return refPathPrefix, prefixLen, ok
	}
}

// refRuleKey decides whether rule i matches r and returns its key.
func refRuleKey[T any](i int, rule *matcher.Rule[T], r *matcher.Request) (refKey, bool) {
	var k refKey
	var ok bool
	k.hostClass, k.wildLen, ok = refHostMatch(rule.Hostnames, refRequestHost(r.Host))
	if !ok {
		return k, false
	}
	k.pathKind, k.prefixLen, ok = refPathMatch(rule.Path, r.Path)
	if !ok {
		return k, false
	}
	if rule.Method != "" && rule.Method != r.Method {
		return k, false
	}
	k.hasMethod = rule.Method != ""
	k.precedence = rule.Precedence
	headers := refDedupe(rule.Headers, true)
	for _, h := range headers {
		v, present := refHeaderValue(r, h.Name)
		if !present || !refValueMatch(h, v) {
			return k, false
		}
	}
	k.nHeaders = len(headers)
	query := refDedupe(rule.Query, false)
	for _, q := range query {
		v, present := refQueryValue(r, q.Name)
		if !present || !refValueMatch(q, v) {
			return k, false
		}
	}
	k.nQuery = len(query)
	k.created = rule.Key.Created
	k.nsName = rule.Key.Namespace + "/" + rule.Key.Name
	k.rule = rule.Key.Rule
	k.match = rule.Key.Match
	k.input = i
	return k, true
}

// refMatch returns the winning rule's Ref and its input index, or ok false.
func refMatch[T any](rules []matcher.Rule[T], r *matcher.Request) (ref T, index int, ok bool) {
	var best refKey
	index = -1
	for i := range rules {
		k, m := refRuleKey(i, &rules[i], r)
		if m && (index < 0 || refLess(k, best)) {
			best, index = k, i
		}
	}
	if index < 0 {
		return ref, -1, false
	}
	return rules[index].Ref, index, true
}

// ---- validation ----

// refIsToken reports whether s is an RFC 9110 token.
func refIsToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// refValidHostname checks a rule hostname: RFC 1123 labels of a-z0-9 and
// '-' (after folding case), 1-63 bytes each, at most 253 bytes, an optional
// leading "*." wildcard label. sure is false for inputs whose fate the brief
// leaves open (labels starting or ending with '-', numeric-looking names,
// lengths at the 253 boundary), so callers can skip them.
func refValidHostname(h string) (valid, sure bool) {
	h = refLowerASCII(h)
	rest := strings.TrimPrefix(h, "*.")
	if rest == "" {
		return false, true
	}
	sure = true
	if len(h) > 250 && len(h) < 256 {
		sure = false
	}
	if len(h) > 253 {
		return false, sure
	}
	allDigits := true
	for _, label := range strings.Split(rest, ".") {
		if len(label) < 1 || len(label) > 63 {
			return false, true
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			switch {
			case 'a' <= c && c <= 'z':
				allDigits = false
			case '0' <= c && c <= '9':
			case c == '-':
				allDigits = false
				if i == 0 || i == len(label)-1 {
					sure = false
				}
			default:
				return false, true
			}
		}
	}
	if allDigits {
		sure = false // "1.2.3.4" must be refused; "123" is unclear
	}
	return true, sure
}

// refValidRegex reports whether expr is RE2 accepted by Go's regexp. An
// expression that compiles alone but not wrapped for a full match (nesting
// limits) or the other way round ("a)|(b") is an open corner: sure is false.
func refValidRegex(expr string) (valid, sure bool) {
	_, err1 := regexp.Compile(expr)
	_, err2 := regexp.Compile("^(?:" + expr + ")$")
	return err1 == nil && err2 == nil, (err1 == nil) == (err2 == nil)
}

// refValidate reports whether Compile should accept rules. sure is false when
// some input falls in a corner the contract leaves open.
func refValidate[T any](rules []matcher.Rule[T]) (valid, sure bool) {
	valid, sure = true, true
	note := func(v, s bool) {
		if !s {
			sure = false
		} else if !v {
			valid = false
		}
	}
	for _, r := range rules {
		for _, h := range r.Hostnames {
			note(refValidHostname(h))
		}
		if len(r.Path.Value) > 1024 || len(matcher.NormalizePath(r.Path.Value)) > 1024 {
			sure = false // the Gateway API allows 1024; the limit is Compile's own
		}
		switch r.Path.Kind {
		case matcher.PathPrefix:
			if !strings.HasPrefix(r.Path.Value, "/") {
				valid = false // "" too: there is no implied path
			}
		case matcher.PathExact:
			if r.Path.Value == "" {
				sure = false
			} else if !strings.HasPrefix(r.Path.Value, "/") {
				valid = false
			}
		case matcher.PathRegex:
			note(refValidRegex(r.Path.Value))
		default:
			valid = false
		}
		if r.Method != "" && !refIsToken(r.Method) {
			valid = false
		}
		// A later condition with the same name is ignored by Match; whether
		// Compile still checks its regex is left open.
		seen := map[string]bool{}
		for _, h := range r.Headers {
			if !refIsToken(h.Name) {
				valid = false
			}
			dup := seen[refLowerASCII(h.Name)]
			seen[refLowerASCII(h.Name)] = true
			if h.Regex {
				v, s := refValidRegex(h.Value)
				note(v, s && !(dup && !v))
			}
		}
		seen = map[string]bool{}
		for _, q := range r.Query {
			if q.Name == "" {
				valid = false
			}
			dup := seen[q.Name]
			seen[q.Name] = true
			if q.Regex {
				v, s := refValidRegex(q.Value)
				note(v, s && !(dup && !v))
			}
		}
	}
	if !valid {
		// An invalid rule makes the set invalid whatever the open corners.
		sure = true
	}
	return valid, sure
}

// refNewRequest builds a Request the way the data plane will: the path goes
// through NormalizePath and header lines are added with canonical keys.
func refNewRequest(host, rawPath, method string, header [][2]string, rawQuery string) *matcher.Request {
	h := http.Header{}
	for _, kv := range header {
		h.Add(kv[0], kv[1])
	}
	return &matcher.Request{
		Host:     host,
		Path:     matcher.NormalizePath(rawPath),
		Method:   method,
		Header:   h,
		RawQuery: rawQuery,
	}
}
