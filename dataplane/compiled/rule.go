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
}

// MaxReplayBody is how much of a request body is kept so that a retry or
// a mirror can send it again. Larger bodies are streamed once: no retry
// after the body has been sent, no mirror copy.
const MaxReplayBody = 64 << 10

// NoCluster is the cluster ID of a backend without one.
const NoCluster = -1

// RuleMatches returns a rule's matches, or the implied PathPrefix "/".
func RuleMatches(r *proxycfg.Rule) []proxycfg.Match {
	if len(r.Matches) == 0 {
		return []proxycfg.Match{{}}
	}
	return r.Matches
}

func MatcherRule(r *proxycfg.Route, ri, mi int, m proxycfg.Match, t *Target) (matcher.Rule[*Target], error) {
	mr := matcher.Rule[*Target]{
		Hostnames:  r.Hostnames,
		Method:     m.Method,
		Precedence: m.Precedence,
		Key:        matcher.Key{Created: r.Created, Namespace: r.Namespace, Name: r.Name, Rule: ri, Match: mi},
		Ref:        t,
	}
	where := func(err error) error {
		return fmt.Errorf("route %s/%s rule %d match %d: %w", r.Namespace, r.Name, ri, mi, err)
	}
	if m.Path != nil {
		switch m.Path.Type {
		case proxycfg.PathPrefix, "":
			mr.Path = matcher.Path{Kind: matcher.PathPrefix, Value: m.Path.Value}
		case proxycfg.PathExact:
			mr.Path = matcher.Path{Kind: matcher.PathExact, Value: m.Path.Value}
		case proxycfg.PathRegex:
			mr.Path = matcher.Path{Kind: matcher.PathRegex, Value: m.Path.Value}
		default:
			return mr, where(fmt.Errorf("unknown path match type %q", m.Path.Type))
		}
	}
	var err error
	if mr.Headers, err = valueMatches(m.Headers); err != nil {
		return mr, where(fmt.Errorf("headers: %w", err))
	}
	if mr.Query, err = valueMatches(m.Query); err != nil {
		return mr, where(fmt.Errorf("query: %w", err))
	}
	return mr, mr.Validate()
}

func valueMatches(vs []proxycfg.ValueMatch) ([]matcher.ValueMatch, error) {
	if len(vs) == 0 {
		return nil, nil
	}
	out := make([]matcher.ValueMatch, len(vs))
	for i, v := range vs {
		switch v.Type {
		case proxycfg.MatchExact, "":
		case proxycfg.MatchRegex:
			out[i].Regex = true
		default:
			return nil, fmt.Errorf("%q: unknown match type %q", v.Name, v.Type)
		}
		out[i].Name, out[i].Value = v.Name, v.Value
	}
	return out, nil
}

// matchedPrefix is the PathPrefix value a match carries, which
// ReplacePrefixMatch replaces; "" for other path types.
func matchedPrefix(m proxycfg.Match) string {
	if m.Path == nil {
		return "/"
	}
	if m.Path.Type == proxycfg.PathPrefix || m.Path.Type == "" {
		if m.Path.Value == "" {
			return "/"
		}
		return matcher.NormalizePath(m.Path.Value)
	}
	return ""
}

// CompileRule checks and compiles rule i of r, numbered id, and returns a
// target per match (RuleMatches). cluster gives the ID of a cluster
// name, or false when the config has no such cluster. Every problem is
// reported, joined, each naming its filter or backend.
func CompileRule(r *proxycfg.Route, i, id int, cluster func(name string) (int, bool)) (*Rule, []*Target, error) {
	src := &r.Rules[i]
	ru := &Rule{Route: r.Namespace + "/" + r.Name, Kind: r.Kind, Index: i, Name: src.Name, ID: id, FailStatus: src.FailStatus}
	if ru.Kind == "" {
		ru.Kind = proxycfg.KindHTTP
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if s := src.FailStatus; s != 0 && (s < 400 || s > 599) {
		bad("failStatus %d is not a 4xx or 5xx status", s)
	}

	// Rule filters. Header modifiers of the same direction fold into one
	// plan; a redirect and a rewrite cannot be combined (the spec forbids
	// it, and it would be ambiguous which path wins).
	var reqMods, respMods []*proxycfg.HeaderModifier
	var redirectSpec *proxycfg.Redirect
	var rewriteSpec *proxycfg.Rewrite
	for fi := range src.Filters {
		f := &src.Filters[fi]
		if err := checkFilter(f); err != nil {
			bad("filters[%d]: %w", fi, err)
			continue
		}
		switch f.Type {
		case proxycfg.FilterRequestHeaderModifier:
			reqMods = append(reqMods, f.RequestHeaderModifier)
		case proxycfg.FilterResponseHeaderModifier:
			respMods = append(respMods, f.ResponseHeaderModifier)
		case proxycfg.FilterRequestRedirect:
			if redirectSpec != nil {
				bad("filters[%d]: more than one RequestRedirect", fi)
			}
			redirectSpec = f.RequestRedirect
		case proxycfg.FilterURLRewrite:
			if rewriteSpec != nil {
				bad("filters[%d]: more than one URLRewrite", fi)
			}
			rewriteSpec = f.URLRewrite
		case proxycfg.FilterRequestMirror:
			m, err := compileMirror(f.RequestMirror, cluster)
			if err != nil {
				bad("filters[%d]: %w", fi, err)
				continue
			}
			ru.Mirrors = append(ru.Mirrors, m)
		case proxycfg.FilterCORS:
			if ru.CORS != nil {
				bad("filters[%d]: more than one CORS filter", fi)
			}
			c, err := compileCORS(f.CORS)
			if err != nil {
				bad("filters[%d]: %w", fi, err)
				continue
			}
			ru.CORS = c
		}
	}
	if redirectSpec != nil && rewriteSpec != nil {
		bad("RequestRedirect and URLRewrite cannot be used together")
	}

	// The rule's own plans are checked once here; a backend's plan is
	// reported only when its own filters break it. The response plan also
	// applies to answers the proxy makes itself for the rule (redirects,
	// CORS preflights).
	var reqErr, respErr error
	if ru.RespPlan, respErr = compileHeaderPlan(respMods...); respErr != nil {
		bad("response headers: %w", respErr)
	}
	if _, reqErr = compileHeaderPlan(reqMods...); reqErr != nil {
		bad("request headers: %w", reqErr)
	}

	// Backends, each with its own filters folded after the rule's.
	sum := 0
	for bi := range src.Backends {
		b := &src.Backends[bi]
		where := fmt.Sprintf("backends[%d]", bi)
		if b.Weight < 0 || b.Weight > 1_000_000 {
			bad("%s: weight %d out of range 0-1000000", where, b.Weight)
			continue
		}
		cb := Backend{Status: b.Status, Cluster: NoCluster}
		switch {
		case b.Status != 0 && (b.Status < 400 || b.Status > 599):
			bad("%s: status %d is not a 4xx or 5xx status", where, b.Status)
		case b.Status == 0 && b.Cluster == "":
			bad("%s: needs a cluster or a status", where)
		case b.Status == 0:
			id, ok := cluster(b.Cluster)
			if !ok {
				bad("%s: cluster %q is not defined", where, b.Cluster)
			}
			cb.Cluster = id
		}
		breq, bresp := slices.Clone(reqMods), slices.Clone(respMods)
		for fi := range b.Filters {
			f := &b.Filters[fi]
			if err := checkFilter(f); err != nil {
				bad("%s.filters[%d]: %w", where, fi, err)
				continue
			}
			switch f.Type {
			case proxycfg.FilterRequestHeaderModifier:
				breq = append(breq, f.RequestHeaderModifier)
			case proxycfg.FilterResponseHeaderModifier:
				bresp = append(bresp, f.ResponseHeaderModifier)
			case proxycfg.FilterRequestMirror:
				m, err := compileMirror(f.RequestMirror, cluster)
				if err != nil {
					bad("%s.filters[%d]: %w", where, fi, err)
					continue
				}
				cb.Mirrors = append(cb.Mirrors, m)
			default:
				bad("%s.filters[%d]: %s is not supported on a backend; put it on the rule", where, fi, f.Type)
			}
		}
		var err error
		if cb.ReqPlan, err = compileHeaderPlan(breq...); err != nil && reqErr == nil {
			bad("%s: request headers: %w", where, err)
		}
		if cb.RespPlan, err = compileHeaderPlan(bresp...); err != nil && respErr == nil {
			bad("%s: response headers: %w", where, err)
		}
		if len(cb.Mirrors) > 0 {
			ru.Buffer = MaxReplayBody
		}
		sum += b.Weight
		cb.CumWeight = sum
		ru.Backends = append(ru.Backends, cb)
	}
	ru.TotalWeight = sum
	if t := src.Timeouts; t != nil {
		ru.RequestTimeout, ru.TryTimeout = time.Duration(t.Request), time.Duration(t.BackendRequest)
		if ru.RequestTimeout > 0 && ru.TryTimeout > ru.RequestTimeout {
			bad("timeouts: backendRequest %v exceeds request %v", ru.TryTimeout, ru.RequestTimeout)
		}
	}
	if src.Retry != nil {
		rp, err := compileRetry(src.Retry)
		if err != nil {
			bad("retry: %w", err)
		} else {
			ru.Retry = rp
			ru.Buffer = MaxReplayBody
		}
	}
	if len(ru.Mirrors) > 0 {
		ru.Buffer = MaxReplayBody
	}
	if sp := src.SessionPersistence; sp != nil {
		p, err := compileSession(sp)
		if err != nil {
			bad("sessionPersistence: %w", err)
		} else {
			ru.Session = p
			ru.SessionScope = ru.Route + "#" + strconv.Itoa(i) + "#" + sp.Name
		}
	}

	matches := RuleMatches(src)
	targets := make([]*Target, len(matches))
	for mi, m := range matches {
		t := &Target{Rule: ru}
		prefix := matchedPrefix(m)
		if redirectSpec != nil {
			rd, err := compileRedirect(redirectSpec, prefix)
			if err != nil {
				bad("matches[%d]: RequestRedirect: %w", mi, err)
			}
			t.Redirect = rd
		}
		if rewriteSpec != nil {
			rw, err := compileRewrite(rewriteSpec, prefix)
			if err != nil {
				bad("matches[%d]: URLRewrite: %w", mi, err)
			}
			t.Rewrite = rw
		}
		targets[mi] = t
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return ru, targets, nil
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
	for mi, m := range RuleMatches(&r.Rules[i]) {
		mr, err := MatcherRule(r, i, mi, m, targets[mi])
		if err == nil {
			err = mr.Validate()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// label is the rule's name in metrics, spans and logs: its sectionName,
// or its index in the route.
func (ru *Rule) Label() string {
	if ru.Name != "" {
		return ru.Name
	}
	return strconv.Itoa(ru.Index)
}
