// This file implements CompileRule and ValidateRule.

package compiled

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
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
	// Cluster is the ID of the backend's cluster: its place in
	// Config.Clusters, as the cluster function given to CompileRule
	// said. NoCluster when Status answers instead.
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
// with t as what it answers.
func MatcherRule(r *proxycfg.Route, ri, mi int, m proxycfg.Match, t *Target) (matcher.Rule[*Target], error) {
	mr := matcher.Rule[*Target]{
		Hostnames:  r.Hostnames,
		Method:     m.Method,
		Precedence: m.Precedence,
		Key:        MatchKey(r, ri, mi),
		Ref:        t,
	}
	where := func(err error) error {
		return fmt.Errorf("route %s/%s rule %d match %d: %w", r.Namespace, r.Name, ri, mi, err)
	}
	if m.Path == nil {
		return mr, where(errors.New(`path is required (every path: {"type":"PathPrefix","value":"/"})`))
	}
	switch m.Path.Type {
	case proxycfg.PathPrefix:
		mr.Path = matcher.Path{Kind: matcher.PathPrefix, Value: m.Path.Value}
	case proxycfg.PathExact:
		mr.Path = matcher.Path{Kind: matcher.PathExact, Value: m.Path.Value}
	case proxycfg.PathRegex:
		mr.Path = matcher.Path{Kind: matcher.PathRegex, Value: m.Path.Value}
	default:
		return mr, where(fmt.Errorf("path type %q is not %s, %s or %s", m.Path.Type, proxycfg.PathPrefix, proxycfg.PathExact, proxycfg.PathRegex))
	}
	var err error
	if mr.Headers, err = valueMatches(m.Headers); err != nil {
		return mr, where(fmt.Errorf("headers: %w", err))
	}
	if mr.Query, err = valueMatches(m.Query); err != nil {
		return mr, where(fmt.Errorf("query: %w", err))
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
	ru := c.rule(r, i, id)
	own := c.filters(c.src.Filters, "", false)
	c.ruleFilters(ru, &own)
	c.backends(ru, &own)
	c.settings(ru, i)
	targets := c.targets(ru, &own)
	if len(c.errs) > 0 {
		return nil, nil, errors.Join(c.errs...)
	}
	return ru, targets, nil
}

// ruleCompiler is one CompileRule call: the rule's source, how cluster
// names resolve, and the problems found so far.
type ruleCompiler struct {
	src     *proxycfg.Rule
	cluster func(name string) (int, bool)
	errs    []error
	// reqErr and respErr are the rule's own header plans' problems: a
	// backend's plan is reported only when its own filters break it.
	reqErr, respErr error
}

func (c *ruleCompiler) bad(format string, a ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, a...))
}

// rule is the compiled rule's identity and fail status.
func (c *ruleCompiler) rule(r *proxycfg.Route, i, id int) *Rule {
	ru := &Rule{Route: r.Namespace + "/" + r.Name, Kind: r.Kind, Index: i, Name: c.src.Name, ID: id, FailStatus: c.src.FailStatus}
	if s := c.src.FailStatus; s != 0 && (s < 400 || s > 599) {
		c.bad("failStatus %d is not a 4xx or 5xx status", s)
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

// filters sorts fs by kind, compiling mirrors and CORS, and reports each
// problem prefixed with where ("" for the rule's own filters,
// "backends[i]." for a backend's). A backend takes header modifiers,
// mirrors and a URLRewrite.
func (c *ruleCompiler) filters(fs []proxycfg.Filter, where string, backend bool) filterSet {
	var set filterSet
	for fi := range fs {
		f := &fs[fi]
		if err := checkFilter(f); err != nil {
			c.bad("%sfilters[%d]: %w", where, fi, err)
			continue
		}
		switch {
		case f.Type == proxycfg.FilterRequestHeaderModifier:
			set.reqMods = append(set.reqMods, f.RequestHeaderModifier)
		case f.Type == proxycfg.FilterResponseHeaderModifier:
			set.respMods = append(set.respMods, f.ResponseHeaderModifier)
		case f.Type == proxycfg.FilterRequestMirror:
			m, err := compileMirror(f.RequestMirror, c.cluster)
			if err != nil {
				c.bad("%sfilters[%d]: %w", where, fi, err)
				continue
			}
			set.mirrors = append(set.mirrors, m)
		case backend && f.Type == proxycfg.FilterURLRewrite:
			if set.rewrite != nil {
				c.bad("%sfilters[%d]: more than one URLRewrite", where, fi)
			}
			set.rewrite = f.URLRewrite
		case backend:
			c.bad("%sfilters[%d]: %s is not supported on a backend; put it on the rule", where, fi, f.Type)
		case f.Type == proxycfg.FilterRequestRedirect:
			if set.redirect != nil {
				c.bad("filters[%d]: more than one RequestRedirect", fi)
			}
			set.redirect = f.RequestRedirect
		case f.Type == proxycfg.FilterURLRewrite:
			if set.rewrite != nil {
				c.bad("filters[%d]: more than one URLRewrite", fi)
			}
			set.rewrite = f.URLRewrite
		case f.Type == proxycfg.FilterCORS:
			if set.cors != nil {
				c.bad("filters[%d]: more than one CORS filter", fi)
			}
			cors, err := compileCORS(f.CORS)
			if err != nil {
				c.bad("filters[%d]: %w", fi, err)
				continue
			}
			set.cors = cors
		}
	}
	return set
}

// ruleFilters gives the rule what its own filters compile to. A redirect
// and a rewrite cannot be combined (the spec forbids it, and it would be
// ambiguous which path wins). The rule's own plans are checked once
// here; its response plan also applies to answers the proxy makes itself
// for the rule (redirects, CORS preflights).
func (c *ruleCompiler) ruleFilters(ru *Rule, own *filterSet) {
	ru.CORS, ru.Mirrors = own.cors, own.mirrors
	if own.redirect != nil && own.rewrite != nil {
		c.bad("RequestRedirect and URLRewrite cannot be used together")
	}
	if ru.RespPlan, c.respErr = compileHeaderPlan(own.respMods...); c.respErr != nil {
		c.bad("response headers: %w", c.respErr)
	}
	if _, c.reqErr = compileHeaderPlan(own.reqMods...); c.reqErr != nil {
		c.bad("request headers: %w", c.reqErr)
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
			c.bad("%s: weight %d out of range 0-1000000", where, b.Weight)
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
		c.bad("%s: status %d is not a 4xx or 5xx status", where, b.Status)
	case b.Status == 0 && b.Cluster == "":
		c.bad("%s: needs a cluster or a status", where)
	case b.Status == 0:
		id, ok := c.cluster(b.Cluster)
		if !ok {
			c.bad("%s: cluster %q is not defined", where, b.Cluster)
		}
		cb.Cluster = id
	}
	bf := c.filters(b.Filters, where+".", true)
	cb.Mirrors = bf.mirrors
	if bf.rewrite != nil {
		switch {
		case own.rewrite != nil:
			c.bad("%s: a URLRewrite on the rule and one on a backend cannot be used together", where)
		case own.redirect != nil:
			c.bad("%s: a URLRewrite on a backend and a RequestRedirect on the rule cannot be used together", where)
		default:
			cb.Rewrites = make([]*Rewrite, len(c.src.Matches))
			for mi, m := range c.src.Matches {
				rw, err := compileRewrite(bf.rewrite, matchedPrefix(m))
				if err != nil {
					c.bad("%s: matches[%d]: URLRewrite: %w", where, mi, err)
				}
				cb.Rewrites[mi] = rw
			}
		}
	}
	var err error
	if cb.ReqPlan, err = compileHeaderPlan(append(slices.Clone(own.reqMods), bf.reqMods...)...); err != nil && c.reqErr == nil {
		c.bad("%s: request headers: %w", where, err)
	}
	if cb.RespPlan, err = compileHeaderPlan(append(slices.Clone(own.respMods), bf.respMods...)...); err != nil && c.respErr == nil {
		c.bad("%s: response headers: %w", where, err)
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
			c.bad("timeouts: backendRequest %v exceeds request %v", ru.TryTimeout, ru.RequestTimeout)
		}
	}
	if src.Retry != nil {
		rp, err := compileRetry(src.Retry)
		if err != nil {
			c.bad("retry: %w", err)
		} else {
			ru.Retry = rp
		}
	}
	if sp := src.SessionPersistence; sp != nil {
		p, err := compileSession(sp)
		if err != nil {
			c.bad("sessionPersistence: %w", err)
		} else {
			ru.Session = p
			ru.SessionScope = ru.Route + "#" + strconv.Itoa(i) + "#" + sp.Name
		}
	}
	if src.Access != nil {
		a, err := compileAccess(src.Access)
		if err != nil {
			c.bad("access: %w", err)
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
				c.bad("access: identity header %s is also set or removed by a request header filter", name)
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
		c.bad(`matches: none; a rule for every request says so: [{"path":{"type":"PathPrefix","value":"/"}}]`)
	}
	targets := make([]*Target, len(matches))
	for mi, m := range matches {
		t := &Target{Rule: ru, Match: mi}
		prefix := matchedPrefix(m)
		if own.redirect != nil {
			rd, err := compileRedirect(own.redirect, prefix)
			if err != nil {
				c.bad("matches[%d]: RequestRedirect: %w", mi, err)
			}
			t.Redirect = rd
		}
		if own.rewrite != nil {
			rw, err := compileRewrite(own.rewrite, prefix)
			if err != nil {
				c.bad("matches[%d]: URLRewrite: %w", mi, err)
			}
			t.Rewrite = rw
		}
		targets[mi] = t
	}
	return targets
}

// checkFilter makes sure exactly the field named by Type is set.
func checkFilter(f *proxycfg.Filter) error {
	set := map[string]bool{
		proxycfg.FilterRequestHeaderModifier:  f.RequestHeaderModifier != nil,
		proxycfg.FilterResponseHeaderModifier: f.ResponseHeaderModifier != nil,
		proxycfg.FilterRequestRedirect:        f.RequestRedirect != nil,
		proxycfg.FilterURLRewrite:             f.URLRewrite != nil,
		proxycfg.FilterRequestMirror:          f.RequestMirror != nil,
		proxycfg.FilterCORS:                   f.CORS != nil,
	}
	has, known := set[f.Type]
	if !known {
		return fmt.Errorf("unknown filter type %q (translate must fail such a rule closed with failStatus)", f.Type)
	}
	if !has {
		return fmt.Errorf("filter %s has no %s settings", f.Type, f.Type)
	}
	for name, ok := range set {
		if ok && name != f.Type {
			return fmt.Errorf("filter %s also carries %s settings", f.Type, name)
		}
	}
	return nil
}

// ValidateRule reports what the proxy would refuse in rule i of r, taken on its
// own: its matches, filters and settings (cluster names are not checked).
// translate calls it so that one bad rule is dropped and reported on its
// route instead of failing the whole config.
func ValidateRule(r *proxycfg.Route, i int) error {
	anyCluster := func(string) (int, bool) { return 0, true }
	_, targets, err := CompileRule(r, i, 0, anyCluster)
	if err != nil {
		return err
	}
	for mi, m := range r.Rules[i].Matches {
		mr, err := MatcherRule(r, i, mi, m, targets[mi])
		if err == nil {
			err = mr.Validate()
		}
		if err != nil {
			return err // it names the route, rule and match
		}
	}
	return nil
}

// Label is the rule's name in metrics, spans and logs: its sectionName,
// or its index in the route.
func (ru *Rule) Label() string {
	if ru.Name != "" {
		return ru.Name
	}
	return strconv.Itoa(ru.Index)
}
