// This file implements Compile and the Preparer.

package matcher

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
)

// maxPathLen bounds a path value (after normalisation) and so the depth of
// a path trie. The Gateway API allows 1024 characters.
const maxPathLen = 4096

// Compile builds an immutable Table from rules. It checks every rule and
// reports all problems at once, each naming its rule; on error no Table is
// returned, so a caller keeps serving its previous one. It is Prepare on
// each rule, then Build.
func Compile[T any](rules []Rule[T]) (*Table[T], error) {
	var p Preparer[T]
	prepared := make([]*Prepared[T], 0, len(rules))
	var errs []error
	for i := range rules {
		pr, err := p.Prepare(&rules[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		prepared = append(prepared, pr)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return Build(prepared)
}

// Validate reports the problems Compile would find in r, so a caller can
// reject one route (and say why on its status) instead of a whole table.
func (r *Rule[T]) Validate() error {
	var p Preparer[T]
	_, err := p.Prepare(r)
	return err
}

// Prepared is a rule checked and compiled (its regexes, its canonical
// hostnames, its rank criteria), ready to be filed into tables. One
// Prepared may go into any number of tables: a proxy files a route's
// match into every listener that serves it, and compiles it once.
type Prepared[T any] struct {
	cand  candidate[T] // its rank is set in each table's own copy
	order order
	place placement
	id    keyID // its Key, by which Update removes it
}

// Preparer prepares rules one at a time, sharing with each the work done
// for the rules before: the canonical hostnames of a route with several
// matches, the route's name, a regular expression used again. The zero
// value is ready to use; a Preparer is not safe for concurrent use.
type Preparer[T any] struct {
	seen *reuse
	n    int // rules prepared, to name a rule without a Key in errors
}

// Prepare checks r and compiles it. The error names the rule and lists
// every problem found in it.
func (p *Preparer[T]) Prepare(r *Rule[T]) (*Prepared[T], error) {
	if p.seen == nil {
		p.seen = newReuse()
	}
	p.n++
	c, o, place, err := prepare(r, p.n-1, p.seen)
	if err != nil {
		return nil, err
	}
	return &Prepared[T]{cand: *c, order: o, place: place, id: idOf(&r.Key)}, nil
}

// reuse remembers what consecutive rules share, so that a Preparer does
// not validate, copy or compile it again for each: the matches of one
// route share its hostnames and its name, and routes often repeat a regex.
type reuse struct {
	rawHosts []string // the Hostnames of the previous rule
	hosts    []string // their canonical form
	ns, name string   // the previous rule's route
	nsName   string
	regexes  map[string]*regexp.Regexp // compiled whole-match expressions
	catchAll []string                  // the hostnames of a rule without any
}

func newReuse() *reuse {
	return &reuse{regexes: map[string]*regexp.Regexp{}, catchAll: []string{""}}
}

// hostnames returns the distinct canonical hostnames of raw ("" for none).
// Hostnames equal to the previous rule's (the common case: the next match
// of the same route) are not checked again.
func (u *reuse) hostnames(raw []string) ([]string, []error) {
	if len(raw) == 0 {
		return u.catchAll, nil
	}
	if u.rawHosts != nil && slices.Equal(raw, u.rawHosts) {
		return u.hosts, nil
	}
	var errs []error
	hosts := make([]string, 0, len(raw))
	for _, h := range raw {
		canon, err := canonicalHostname(h)
		if err != nil {
			errs = append(errs, err)
		} else if !slices.Contains(hosts, canon) {
			hosts = append(hosts, canon)
		}
	}
	if errs == nil {
		u.rawHosts, u.hosts = raw, hosts
	}
	return hosts, errs
}

// routeName returns "{namespace}/{name}".
func (u *reuse) routeName(k *Key) string {
	if k.Namespace != u.ns || k.Name != u.name || u.nsName == "" {
		u.ns, u.name, u.nsName = k.Namespace, k.Name, k.Namespace+"/"+k.Name
	}
	return u.nsName
}

// regex compiles expr to match whole values, once per Preparer.
func (u *reuse) regex(expr string) (*regexp.Regexp, error) {
	if re, ok := u.regexes[expr]; ok {
		return re, nil
	}
	re, err := compileWhole(expr)
	if err == nil {
		u.regexes[expr] = re
	}
	return re, err
}

// valueRegex compiles a header or query condition's expression, or returns
// nil for an exact one.
func (u *reuse) valueRegex(m ValueMatch) (*regexp.Regexp, error) {
	if !m.Regex {
		return nil, nil
	}
	return u.regex(m.Value)
}

// placement says where a rule is filed: under which host entries (distinct
// lower-case hostnames, "" for none), at which path trie key, in which list.
type placement struct {
	hostnames []string
	kind      PathKind
	key       string
}

// prepare validates r and compiles it: its candidate (what Match checks), its
// order (what ranks it) and its placement.
func prepare[T any](r *Rule[T], input int, seen *reuse) (*candidate[T], order, placement, error) {
	hostnames, errs := seen.hostnames(r.Hostnames)
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}

	c := &candidate[T]{ref: r.Ref}
	cond := conditions{method: r.Method}
	o := order{
		precedence: r.Precedence,
		method:     r.Method != "",
		created:    r.Key.Created,
		nsName:     seen.routeName(&r.Key),
		rule:       r.Key.Rule,
		match:      r.Key.Match,
	}
	if r.Method != "" && !isToken(r.Method) {
		fail("method %q is not a valid HTTP method token", r.Method)
	}

	place := placement{hostnames: hostnames, kind: r.Path.Kind}
	if len(r.Path.Value) > maxPathLen {
		fail("path value is %d bytes long, more than the limit of %d", len(r.Path.Value), maxPathLen)
	}
	switch p := r.Path; p.Kind {
	case PathExact, PathPrefix:
		value := p.Value
		if !strings.HasPrefix(value, "/") {
			fail("%s path %q must start with \"/\"", p.Kind, p.Value)
			break
		}
		norm := NormalizePath(value)
		if len(norm) > maxPathLen {
			fail("path value is %d bytes long once normalised, more than the limit of %d", len(norm), maxPathLen)
			break
		}
		place.key = norm
		if p.Kind == PathPrefix {
			// Trailing slashes are ignored for matching and count once for
			// precedence, so "/abc/" outranks "/abc" but never "/abc/d".
			place.key = strings.TrimRight(norm, "/")
			o.prefixLen = len(place.key)
			if len(place.key) < len(norm) {
				o.prefixLen++
			}
		}
	case PathRegex:
		re, err := seen.regex(p.Value)
		if err != nil {
			fail("path regular expression: %w", err)
			break
		}
		cond.path = re
		// File the rule under its literal prefix. regexp keeps those short
		// (only one-pass programs, under 1000 instructions, report one), but
		// the trie's 16-bit lengths should not rest on that: cut it to
		// maxPathLen, which is safe since any prefix of it still starts
		// every path the expression matches.
		lit, _ := re.LiteralPrefix()
		place.key = lit[:min(len(lit), maxPathLen)]
	default:
		fail("unknown path match kind %d", p.Kind)
	}

	for _, h := range r.Headers {
		if !isToken(h.Name) {
			fail("header name %q is not a valid token", h.Name)
			continue
		}
		key := http.CanonicalHeaderKey(h.Name)
		if slices.ContainsFunc(cond.header, func(c headerCond) bool { return c.key == key }) {
			continue // only the first condition per name counts
		}
		re, err := seen.valueRegex(h)
		if err != nil {
			fail("header %s regular expression: %w", h.Name, err)
			continue
		}
		cond.header = append(cond.header, headerCond{key: key, host: key == "Host", value: h.Value, re: re})
	}

	for _, q := range r.Query {
		if q.Name == "" {
			fail("query parameter name must not be empty")
			continue
		}
		if slices.ContainsFunc(cond.query, func(c queryCond) bool { return c.name == q.Name }) {
			continue
		}
		re, err := seen.valueRegex(q)
		if err != nil {
			fail("query parameter %s regular expression: %w", q.Name, err)
			continue
		}
		cond.query = append(cond.query, queryCond{name: q.Name, value: q.Value, re: re})
	}

	if len(errs) > 0 {
		return nil, order{}, placement{}, fmt.Errorf("%s: %w", describe(r, input), errors.Join(errs...))
	}
	o.headers, o.queries = len(cond.header), len(cond.query)
	if cond.method != "" || cond.path != nil || o.headers+o.queries > 0 {
		more := cond // only rules with conditions pay for them
		c.more = &more
	}
	return c, o, place, nil
}

// compileWhole compiles an RE2 expression that must match a whole value.
// The expression is parsed alone first, so wrapping it cannot change its
// meaning (an unbalanced "a)|(b" is refused, not spliced).
func compileWhole(expr string) (*regexp.Regexp, error) {
	if _, err := syntax.Parse(expr, syntax.Perl); err != nil {
		return nil, err
	}
	return regexp.Compile("^(?:" + expr + ")$")
}

// describe names a rule the way a user finds it: its route and position.
func describe[T any](r *Rule[T], input int) string {
	if r.Key.Namespace == "" && r.Key.Name == "" {
		return fmt.Sprintf("rule #%d", input)
	}
	return fmt.Sprintf("route %s/%s rule %d match %d", r.Key.Namespace, r.Key.Name, r.Key.Rule, r.Key.Match)
}

// isToken reports whether s is an RFC 9110 §5.6.2 token, the syntax of
// header names and methods.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}
