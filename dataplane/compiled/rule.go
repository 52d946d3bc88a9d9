// This file implements CompileRule and ValidateRule, and the filter kinds table.

package compiled

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/matcher"
)

// Target is what a route match resolves to: the rule, plus what depends
// on which of the rule's matches won (ReplacePrefixMatch needs the prefix).
type Target struct {
	Rule     *Rule
	Redirect *Redirect
	Rewrite  *Rewrite
	// Match is the index of the match among the rule's: a backend's
	// URLRewrite is compiled per match (Backend.Rewrites).
	Match int
}

// BackendRewrite is the URLRewrite of backend b for this target's match,
// or nil.
func (t *Target) BackendRewrite(b *Backend) *Rewrite {
	if b.Rewrites == nil {
		return nil
	}
	return b.Rewrites[t.Match]
}

// Rule is a compiled proxycfg.Rule: everything a request that matched it
// needs, checked and precomputed, and nothing that changes while it is
// served.
type Rule struct {
	Route string // "namespace/name", for errors and metrics
	Kind  proxycfg.RouteKind
	Index int
	Name  string // the rule's sectionName, if it has one
	// ID is the number CompileRule was given: the proxy numbers a
	// config's rules 0, 1, … and keeps what it counts per rule (metrics,
	// span names) in a slice by ID, beside the rule rather than in it.
	ID         int
	FailStatus int
	CORS       *CORS
	RespPlan   *HeaderPlan
	Mirrors    []*Mirror
	Backends   []Backend
	// TotalWeight is the sum of backend weights; zero answers 500.
	TotalWeight int
	// RequestTimeout bounds the exchange up to response headers (retries
	// included); TryTimeout bounds each attempt. Zero is no limit.
	RequestTimeout, TryTimeout time.Duration
	Retry                      *RetryPolicy
	Session                    *SessionPolicy
	SessionScope               string
	// Access, when set, lets through only requests with a Cloudflare
	// Access token it accepts.
	Access *AccessCheck
	// Buffer is the most request body bytes kept for replay (retries) or
	// copies (mirrors); 0 when the rule needs neither.
	Buffer int64
}

// Backend is a compiled BackendRef.
type Backend struct {
	// CumWeight is the running sum of weights up to and including this
	// one, for weighted choice.
	CumWeight int
	// Status, when not 0, is answered instead of forwarding.
	Status int
	// Cluster is the ID of the backend's cluster, as the cluster
	// function given to CompileRule said (the proxy's slot for it: its
	// place in Config.Clusters when compiled whole). NoCluster when
	// Status answers instead.
	Cluster int
	// ReqPlan and RespPlan combine the rule's and the backend's header
	// modifiers, in that order.
	ReqPlan, RespPlan *HeaderPlan
	Mirrors           []*Mirror
	// Rewrites, when the backend has a URLRewrite filter of its own, hold
	// it compiled for each of the rule's matches (ReplacePrefixMatch
	// needs the prefix matched): applied only to requests sent to this
	// backend.
	Rewrites []*Rewrite
}

// MaxReplayBody is how much of a request body is kept so that a retry or
// a mirror can send it again. Larger bodies are streamed once: no retry
// after the body has been sent, no mirror copy.
const MaxReplayBody = 64 << 10

// NoCluster is the cluster ID of a backend without one.
const NoCluster = -1

// MatchKey is the matcher Key of match mi of rule ri of route r: what
// orders it among equals, and names it to matcher.Table.Update.
func MatchKey(r *proxycfg.Route, ri, mi int) matcher.Key {
	return matcher.Key{Created: r.Created, Namespace: r.Namespace, Name: r.Name, Rule: ri, Match: mi}
}

// MatcherRule is match mi of rule ri of route r as the matcher takes it,
// with t as what it answers. The error names the route, rule and match.
func MatcherRule(r *proxycfg.Route, ri, mi int, m proxycfg.Match, t *Target) (matcher.Rule[*Target], error) {
	mr, err := matcherRule(r, ri, mi, m, t)
	if err != nil {
		err = fmt.Errorf("route %s/%s rule %d match %d: %w", r.Namespace, r.Name, ri, mi, err)
	}
	return mr, err
}

// matcherRule is MatcherRule, with an error that does not say where.
func matcherRule(r *proxycfg.Route, ri, mi int, m proxycfg.Match, t *Target) (matcher.Rule[*Target], error) {
	mr := matcher.Rule[*Target]{
		Hostnames:  r.Hostnames,
		Method:     m.Method,
		Precedence: m.Precedence,
		Key:        MatchKey(r, ri, mi),
		Ref:        t,
	}
	if m.Path == nil {
		return mr, errors.New(`path is required (every path: {"type":"PathPrefix","value":"/"})`)
	}
	switch m.Path.Type {
	case proxycfg.PathPrefix:
		mr.Path = matcher.Path{Kind: matcher.PathPrefix, Value: m.Path.Value}
	case proxycfg.PathExact:
		mr.Path = matcher.Path{Kind: matcher.PathExact, Value: m.Path.Value}
	case proxycfg.PathRegex:
		mr.Path = matcher.Path{Kind: matcher.PathRegex, Value: m.Path.Value}
	default:
		return mr, fmt.Errorf("path type %q is not %s, %s or %s", m.Path.Type, proxycfg.PathPrefix, proxycfg.PathExact, proxycfg.PathRegex)
	}
	var err error
	if mr.Headers, err = valueMatches(m.Headers); err != nil {
		return mr, fmt.Errorf("headers: %w", err)
	}
	if mr.Query, err = valueMatches(m.Query); err != nil {
		return mr, fmt.Errorf("query: %w", err)
	}
	return mr, nil
}

func valueMatches(vs []proxycfg.ValueMatch) ([]matcher.ValueMatch, error) {
	if len(vs) == 0 {
		return nil, nil
	}
	out := make([]matcher.ValueMatch, len(vs))
	for i, v := range vs {
		switch v.Type {
		case proxycfg.MatchExact:
		case proxycfg.MatchRegex:
			out[i].Regex = true
		default:
			return nil, fmt.Errorf("%q: type %q is not %s or %s", v.Name, v.Type, proxycfg.MatchExact, proxycfg.MatchRegex)
		}
		out[i].Name, out[i].Value = v.Name, v.Value
	}
	return out, nil
}

// matchedPrefix is the PathPrefix value a match carries, which
// ReplacePrefixMatch replaces; "" for other path types.
func matchedPrefix(m proxycfg.Match) string {
	if m.Path == nil || m.Path.Type != proxycfg.PathPrefix {
		return ""
	}
	return matcher.NormalizePath(m.Path.Value)
}

// CompileRule checks and compiles rule i of r, numbered id, and returns a
// target per match (RuleMatches). cluster gives the ID of a cluster
// name, or false when the config has no such cluster. Every problem is
// reported, joined, each naming its filter or backend.
func CompileRule(r *proxycfg.Route, i, id int, cluster func(name string) (int, bool)) (*Rule, []*Target, error) {
	c := &ruleCompiler{src: &r.Rules[i], cluster: cluster}
	ru, targets := c.compile(r, i, id)
	if len(c.problems) > 0 {
		errs := make([]error, len(c.problems))
		for i, p := range c.problems {
			errs[i] = p
		}
		return nil, nil, errors.Join(errs...)
	}
	return ru, targets, nil
}

// compile compiles rule i of r, numbered id, recording its problems.
func (c *ruleCompiler) compile(r *proxycfg.Route, i, id int) (*Rule, []*Target) {
	ru := c.rule(r, i, id)
	own := c.filters(c.src.Filters, "", false)
	c.ruleFilters(ru, &own)
	c.backends(ru, &own)
	c.settings(ru, i)
	return ru, c.targets(ru, &own)
}

// ruleCompiler is one CompileRule call: the rule's source, how cluster
// names resolve, and the problems found so far.
type ruleCompiler struct {
	src      *proxycfg.Rule
	cluster  func(name string) (int, bool)
	problems []*Problem
	// reqErr and respErr are the rule's own header plans' problems: a
	// backend's plan is reported only when its own filters break it.
	reqErr, respErr error
}

// bad records a problem in field of the rule ("" for the rule as a
// whole), of its match'th match (-1 for none).
func (c *ruleCompiler) bad(field string, match int, format string, a ...any) {
	c.problems = append(c.problems, &Problem{Match: match, Field: field, Msg: fmt.Sprintf(format, a...)})
}

// rule is the compiled rule's identity and fail status.
func (c *ruleCompiler) rule(r *proxycfg.Route, i, id int) *Rule {
	ru := &Rule{Route: r.Namespace + "/" + r.Name, Kind: r.Kind, Index: i, Name: c.src.Name, ID: id, FailStatus: c.src.FailStatus}
	if s := c.src.FailStatus; s != 0 && (s < 400 || s > 599) {
		c.bad("failStatus", -1, "%d is not a 4xx or 5xx status", s)
	}
	return ru
}

// filterSet is what a list of filters asks for, by kind. Header
// modifiers of the same direction fold into one plan later, in order.
type filterSet struct {
	reqMods, respMods []*proxycfg.HeaderModifier
	redirect          *proxycfg.Redirect
	rewrite           *proxycfg.Rewrite
	cors              *CORS
	mirrors           []*Mirror
}

// filterKind is one filter type the proxy runs: the proxycfg.Filter
// field that carries its settings, whether a backend may carry it, and
// what it adds to the filterSet of the list it is in. Where the request
// path runs it is the compiled Rule's business (its plans, CORS,
// mirrors; a target's redirect and rewrite).
type filterKind struct {
	// typ is its Filter.Type, spelt as the Gateway API spells the filter.
	typ string
	// has says whether f carries this kind's settings.
	has func(f *proxycfg.Filter) bool
	// backend says a backendRef's filters may carry it, not only a rule's.
	backend bool
	// add returns set with f compiled into it, and what is wrong with f.
	// Values in and out, so that nothing of a rule's compilation escapes
	// to the heap through the call.
	add func(set filterSet, f *proxycfg.Filter, cluster func(string) (int, bool)) (filterSet, []error)
}

// filterKinds is every filter type the proxy runs. A new filter is a row
// here; TestFilterKindsCoverFilterFields and TestFilterKindsCoverGatewayAPI
// hold the table to proxycfg.Filter's fields and to the Gateway API's
// filter types.
var filterKinds = []filterKind{
	{
		typ:     proxycfg.FilterRequestHeaderModifier,
		has:     func(f *proxycfg.Filter) bool { return f.RequestHeaderModifier != nil },
		backend: true,
		add: func(set filterSet, f *proxycfg.Filter, _ func(string) (int, bool)) (filterSet, []error) {
			set.reqMods = append(set.reqMods, f.RequestHeaderModifier)
			return set, nil
		},
	},
	{
		typ:     proxycfg.FilterResponseHeaderModifier,
		has:     func(f *proxycfg.Filter) bool { return f.ResponseHeaderModifier != nil },
		backend: true,
		add: func(set filterSet, f *proxycfg.Filter, _ func(string) (int, bool)) (filterSet, []error) {
			set.respMods = append(set.respMods, f.ResponseHeaderModifier)
			return set, nil
		},
	},
	{
		typ: proxycfg.FilterRequestRedirect,
		has: func(f *proxycfg.Filter) bool { return f.RequestRedirect != nil },
		add: func(set filterSet, f *proxycfg.Filter, _ func(string) (int, bool)) (filterSet, []error) {
			var errs []error
			if set.redirect != nil {
				errs = append(errs, errors.New("more than one RequestRedirect"))
			}
			set.redirect = f.RequestRedirect
			return set, errs
		},
	},
	{
		typ:     proxycfg.FilterURLRewrite,
		has:     func(f *proxycfg.Filter) bool { return f.URLRewrite != nil },
		backend: true,
		add: func(set filterSet, f *proxycfg.Filter, _ func(string) (int, bool)) (filterSet, []error) {
			var errs []error
			if set.rewrite != nil {
				errs = append(errs, errors.New("more than one URLRewrite"))
			}
			set.rewrite = f.URLRewrite
			return set, errs
		},
	},
	{
		typ:     proxycfg.FilterRequestMirror,
		has:     func(f *proxycfg.Filter) bool { return f.RequestMirror != nil },
		backend: true,
		add: func(set filterSet, f *proxycfg.Filter, cluster func(string) (int, bool)) (filterSet, []error) {
			m, err := compileMirror(f.RequestMirror, cluster)
			if err != nil {
				return set, []error{err}
			}
			set.mirrors = append(set.mirrors, m)
			return set, nil
		},
	},
	{
		typ: proxycfg.FilterCORS,
		has: func(f *proxycfg.Filter) bool { return f.CORS != nil },
		add: func(set filterSet, f *proxycfg.Filter, _ func(string) (int, bool)) (filterSet, []error) {
			var errs []error
			if set.cors != nil {
				errs = append(errs, errors.New("more than one CORS filter"))
			}
			cors, err := compileCORS(f.CORS)
			if err != nil {
				return set, append(errs, err)
			}
			set.cors = cors
			return set, errs
		},
	},
}

// checkFilter returns the kind of f, making sure exactly the field named
// by its Type is set.
func checkFilter(f *proxycfg.Filter) (*filterKind, error) {
	var kind *filterKind
	for i := range filterKinds {
		if filterKinds[i].typ == f.Type {
			kind = &filterKinds[i]
		}
	}
	if kind == nil {
		return nil, fmt.Errorf("unknown filter type %q (translate must fail such a rule closed with failStatus)", f.Type)
	}
	if !kind.has(f) {
		return nil, fmt.Errorf("filter %s has no %s settings", f.Type, f.Type)
	}
	for i := range filterKinds {
		if k := &filterKinds[i]; k != kind && k.has(f) {
			return nil, fmt.Errorf("filter %s also carries %s settings", f.Type, k.typ)
		}
	}
	return kind, nil
}

// filters sorts fs by kind (filterKinds), compiling mirrors and CORS,
// and reports each problem at where ("" for the rule's own filters,
// "backends[i]." for a backend's). A backend takes the kinds
// filterKinds allows it.
func (c *ruleCompiler) filters(fs []proxycfg.Filter, where string, backend bool) filterSet {
	var set filterSet
	for fi := range fs {
		f, at := &fs[fi], filterAt{where, fi}
		kind, err := checkFilter(f)
		switch {
		case err != nil:
			c.badFilter(at, err)
		case backend && !kind.backend:
			c.badFilter(at, fmt.Errorf("%s is not supported on a backend; put it on the rule", f.Type))
		default:
			var errs []error
			set, errs = kind.add(set, f, c.cluster)
			for _, err := range errs {
				c.badFilter(at, err)
			}
		}
	}
	return set
}

// filterAt is where a filter is: in the rule's filters (where "") or a
// backend's ("backends[i]."), at index i.
type filterAt struct {
	where string
	i     int
}

// badFilter records a problem of the filter at.
func (c *ruleCompiler) badFilter(at filterAt, err error) {
	c.bad(at.where+"filters["+strconv.Itoa(at.i)+"]", -1, "%v", err)
}

// ruleFilters gives the rule what its own filters compile to. A redirect
// and a rewrite cannot be combined (the spec forbids it, and it would be
// ambiguous which path wins). The rule's own plans are checked once
// here; its response plan also applies to answers the proxy makes itself
// for the rule (redirects, CORS preflights).
func (c *ruleCompiler) ruleFilters(ru *Rule, own *filterSet) {
	ru.CORS, ru.Mirrors = own.cors, own.mirrors
	if own.redirect != nil && own.rewrite != nil {
		c.bad("", -1, "RequestRedirect and URLRewrite cannot be used together")
	}
	if ru.RespPlan, c.respErr = compileHeaderPlan(own.respMods...); c.respErr != nil {
		c.bad("", -1, "response headers: %v", c.respErr)
	}
	if _, c.reqErr = compileHeaderPlan(own.reqMods...); c.reqErr != nil {
		c.bad("", -1, "request headers: %v", c.reqErr)
	}
}

// backends compiles the backend refs, each with its own filters folded
// after the rule's, and their weights into running sums.
func (c *ruleCompiler) backends(ru *Rule, own *filterSet) {
	sum := 0
	for bi := range c.src.Backends {
		b := &c.src.Backends[bi]
		where := fmt.Sprintf("backends[%d]", bi)
		if b.Weight < 0 || b.Weight > 1_000_000 {
			c.bad(where, -1, "weight %d out of range 0-1000000", b.Weight)
			continue
		}
		cb := c.backend(b, where, own)
		sum += b.Weight
		cb.CumWeight = sum
		ru.Backends = append(ru.Backends, cb)
	}
	ru.TotalWeight = sum
}

// backend compiles one backend ref but its weight.
func (c *ruleCompiler) backend(b *proxycfg.BackendRef, where string, own *filterSet) Backend {
	cb := Backend{Status: b.Status, Cluster: NoCluster}
	switch {
	case b.Status != 0 && (b.Status < 400 || b.Status > 599):
		c.bad(where, -1, "status %d is not a 4xx or 5xx status", b.Status)
	case b.Status == 0 && b.Cluster == "":
		c.bad(where, -1, "needs a cluster or a status")
	case b.Status == 0:
		id, ok := c.cluster(b.Cluster)
		if !ok {
			c.bad(where, -1, "cluster %q is not defined", b.Cluster)
		}
		cb.Cluster = id
	}
	bf := c.filters(b.Filters, where+".", true)
	cb.Mirrors = bf.mirrors
	if bf.rewrite != nil {
		switch {
		case own.rewrite != nil:
			c.bad(where, -1, "a URLRewrite on the rule and one on a backend cannot be used together")
		case own.redirect != nil:
			c.bad(where, -1, "a URLRewrite on a backend and a RequestRedirect on the rule cannot be used together")
		default:
			cb.Rewrites = make([]*Rewrite, len(c.src.Matches))
			for mi, m := range c.src.Matches {
				rw, err := compileRewrite(bf.rewrite, matchedPrefix(m))
				if err != nil {
					c.bad(where, mi, "matches[%d]: URLRewrite: %v", mi, err)
				}
				cb.Rewrites[mi] = rw
			}
		}
	}
	var err error
	if cb.ReqPlan, err = compileHeaderPlan(append(slices.Clone(own.reqMods), bf.reqMods...)...); err != nil && c.reqErr == nil {
		c.bad(where, -1, "request headers: %v", err)
	}
	if cb.RespPlan, err = compileHeaderPlan(append(slices.Clone(own.respMods), bf.respMods...)...); err != nil && c.respErr == nil {
		c.bad(where, -1, "response headers: %v", err)
	}
	return cb
}

// settings compiles timeouts, retries and session persistence, and sizes
// the body kept for replays and copies.
func (c *ruleCompiler) settings(ru *Rule, i int) {
	src := c.src
	if t := src.Timeouts; t != nil {
		ru.RequestTimeout, ru.TryTimeout = time.Duration(t.Request), time.Duration(t.BackendRequest)
		if ru.RequestTimeout > 0 && ru.TryTimeout > ru.RequestTimeout {
			c.bad("timeouts", -1, "backendRequest %v exceeds request %v", ru.TryTimeout, ru.RequestTimeout)
		}
	}
	if src.Retry != nil {
		rp, err := compileRetry(src.Retry)
		if err != nil {
			c.bad("retry", -1, "%v", err)
		} else {
			ru.Retry = rp
		}
	}
	if sp := src.SessionPersistence; sp != nil {
		p, err := compileSession(sp)
		if err != nil {
			c.bad("sessionPersistence", -1, "%v", err)
		} else {
			ru.Session = p
			ru.SessionScope = ru.Route + "#" + strconv.Itoa(i) + "#" + sp.Name
		}
	}
	if src.Access != nil {
		a, err := compileAccess(src.Access)
		if err != nil {
			c.bad("access", -1, "%v", err)
		} else {
			ru.Access = a
			c.identityUntouched(ru)
		}
	}
	if ru.Retry != nil || len(ru.Mirrors) > 0 || slices.ContainsFunc(ru.Backends, func(b Backend) bool { return len(b.Mirrors) > 0 }) {
		ru.Buffer = MaxReplayBody
	}
}

// identityUntouched refuses a header filter that sets or removes one of
// the rule's Access identity headers: only the verified token may.
func (c *ruleCompiler) identityUntouched(ru *Rule) {
	for _, name := range ru.Access.Headers.List() {
		if name == "" {
			continue
		}
		for i := range ru.Backends {
			if touched, _ := ru.Backends[i].ReqPlan.Touches(name); touched {
				c.bad("access", -1, "identity header %s is also set or removed by a request header filter", name)
				break
			}
		}
	}
}

// targets compiles, per match, the redirect or rewrite for the prefix
// that match carries.
func (c *ruleCompiler) targets(ru *Rule, own *filterSet) []*Target {
	matches := c.src.Matches
	if len(matches) == 0 {
		c.bad("matches", -1, `none; a rule for every request says so: [{"path":{"type":"PathPrefix","value":"/"}}]`)
	}
	targets := make([]*Target, len(matches))
	for mi, m := range matches {
		t := &Target{Rule: ru, Match: mi}
		prefix := matchedPrefix(m)
		if own.redirect != nil {
			rd, err := compileRedirect(own.redirect, prefix)
			if err != nil {
				c.bad("matches["+strconv.Itoa(mi)+"]", mi, "RequestRedirect: %v", err)
			}
			t.Redirect = rd
		}
		if own.rewrite != nil {
			rw, err := compileRewrite(own.rewrite, prefix)
			if err != nil {
				c.bad("matches["+strconv.Itoa(mi)+"]", mi, "URLRewrite: %v", err)
			}
			t.Rewrite = rw
		}
		targets[mi] = t
	}
	return targets
}

// ValidateRule reports what the proxy would refuse in rule i of r, taken on its
// own: its matches, filters and settings (cluster names are not checked).
// translate calls it so that one bad rule is dropped and reported on its
// route instead of failing the whole config. The error, when there is
// one, is a *RuleError.
func ValidateRule(r *proxycfg.Route, i int) error {
	anyCluster := func(string) (int, bool) { return 0, true }
	c := &ruleCompiler{src: &r.Rules[i], cluster: anyCluster}
	ru, targets := c.compile(r, i, 0)
	if len(c.problems) == 0 {
		for mi, m := range r.Rules[i].Matches {
			mr, err := matcherRule(r, i, mi, m, targets[mi])
			if err == nil {
				err = mr.Validate()
				// The matcher names the route, rule and match; the
				// problem is what it wraps.
				if u := errors.Unwrap(err); u != nil {
					err = u
				}
			}
			if err != nil {
				c.bad("", mi, "%v", err)
				break
			}
		}
	}
	if len(c.problems) > 0 {
		return &RuleError{Route: ru.Route, Rule: i, Problems: c.problems}
	}
	return nil
}

// RuleError is every problem ValidateRule found in one rule.
type RuleError struct {
	Route    string // "namespace/name"
	Rule     int    // the rule's index in the route
	Problems []*Problem
}

// Error names the route and the rule, then the problems, one a line.
func (e *RuleError) Error() string {
	return "route " + e.Route + " rule " + strconv.Itoa(e.Rule) + ": " + e.Detail()
}

// Detail is the problems, one a line, without the route and rule: what a
// status on the route says of the rule.
func (e *RuleError) Detail() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

// Problem is one thing wrong in a rule: where it is and what.
type Problem struct {
	// Match is the index of the match it is in, or -1 when it is in none.
	Match int
	// Field is where in the rule, spelt as the wire config spells it:
	// "filters[0]", "backends[1].filters[0]", "timeouts", "matches[2]";
	// "" for the rule as a whole, or for a match's conditions, which
	// Match names.
	Field string
	// Msg says what is wrong, without where.
	Msg string
}

// Error is where, then what: "filters[0]: …", "match 2: …".
func (p *Problem) Error() string {
	switch {
	case p.Field != "":
		return p.Field + ": " + p.Msg
	case p.Match >= 0:
		return "match " + strconv.Itoa(p.Match) + ": " + p.Msg
	}
	return p.Msg
}

// Label is the rule's name in metrics, spans and logs: its sectionName,
// or its index in the route.
func (ru *Rule) Label() string {
	if ru.Name != "" {
		return ru.Name
	}
	return strconv.Itoa(ru.Index)
}
