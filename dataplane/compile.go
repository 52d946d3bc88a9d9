package dataplane

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/matcher"
)

// snapshot is a compiled Config: everything a request needs, immutable.
// The proxy swaps whole snapshots atomically; a request loads one at its
// start and finishes on it.
type snapshot struct {
	version string
	// origin serves the origin listener: every Config listener, chosen by
	// hostname, the HTTP ones (origin[0]) apart from the HTTPS ones
	// (origin[1]). ports serves direct listeners: only the listeners of
	// the port they were opened for.
	origin [2]*listenerSet
	ports  map[int]*listenerSet
	// gateways serves the listeners of each Gateway address and port
	// (gateways.go), with the certificates of its HTTPS listeners.
	gateways map[gatewayAddr]*gatewayEndpoint
	// slots are the clusters this config uses, by name.
	slots   map[string]*clusterSlot
	session *SessionCodec
	// rules are every compiled rule, for Proxy.load to give each its
	// metrics (rule.stats).
	rules []*rule
}

// listenerSet picks the listener for a request's host: the exact hostname,
// then the longest wildcard, then a listener without hostname. This is the
// matcher's own host precedence, so it is a matcher table whose rules all
// match every path.
type listenerSet struct {
	pick *matcher.Table[*vhost]
}

// vhost is a group of listeners with the same hostname, merged: their
// routes share one table. Routes of another vhost are never considered,
// even when nothing here matches (listener isolation).
type vhost struct {
	name  string
	table *matcher.Table[*target]
	// certRequired: a merged listener requires a valid client
	// certificate, which only a handshake on its Gateway address checks.
	certRequired bool
}

// target is what a route match resolves to: the rule, plus what depends
// on which of the rule's matches won (ReplacePrefixMatch needs the prefix).
type target struct {
	rule     *rule
	redirect *redirect
	rewrite  *rewrite
}

// rule is a compiled route rule.
type rule struct {
	route string // "namespace/name", for errors and metrics
	kind  proxycfg.RouteKind
	index int
	name  string     // the rule's sectionName, if it has one
	stats *ruleStats // set by Proxy.load once the config is accepted
	// spanNames are the server span names of the common methods, made
	// once when tracing.
	spanNames  map[string]string
	failStatus int
	cors       *cors
	respPlan   *headerPlan
	mirrors    []*mirror
	backends   []backend
	// totalWeight is the sum of backend weights; zero answers 500.
	totalWeight int
	// reqTimeout bounds the exchange up to response headers (retries
	// included); tryTimeout bounds each attempt. Zero is no limit.
	reqTimeout, tryTimeout time.Duration
	retry                  *retryPolicy
	session                *sessionPolicy
	sessionScope           string
	// buffer is the most request body bytes kept for replay (retries) or
	// copies (mirrors); 0 when the rule needs neither.
	buffer int64
}

// backend is a compiled BackendRef. cumWeight is the running sum of
// weights up to and including this one, for weighted choice.
type backend struct {
	cumWeight int
	status    int
	slot      *clusterSlot
	// reqPlan and respPlan combine the rule's and the backend's header
	// modifiers, in that order.
	reqPlan, respPlan *headerPlan
	mirrors           []*mirror
}

// maxReplayBody is how much of a request body is kept so that a retry or
// a mirror can send it again. Larger bodies are streamed once: no retry
// after the body has been sent, no mirror copy.
const maxReplayBody = 64 << 10

// compile validates cfg and builds a snapshot. slotFor returns the stable
// slot for a cluster name; compile does not install cluster states (the
// proxy does that once the whole config has passed).
func compile(cfg *proxycfg.Config, slotFor func(name string) *clusterSlot) (*snapshot, error) {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if cfg.Schema != proxycfg.SchemaVersion {
		return nil, fmt.Errorf("config schema is %q; this proxy reads %q (upgrade the proxy or the controller so they match)", cfg.Schema, proxycfg.SchemaVersion)
	}
	snap := &snapshot{version: cfg.Version, slots: map[string]*clusterSlot{}, ports: map[int]*listenerSet{}}
	if len(cfg.SessionSecret) > 0 {
		snap.session = NewSessionCodec(cfg.SessionSecret)
	}

	for i := range cfg.Clusters {
		c := &cfg.Clusters[i]
		if c.Name == "" {
			fail("clusters[%d]: name is empty", i)
			continue
		}
		if snap.slots[c.Name] != nil {
			fail("cluster %q: defined twice", c.Name)
			continue
		}
		snap.slots[c.Name] = slotFor(c.Name)
	}
	cluster := func(name string) *clusterSlot { return snap.slots[name] }

	listeners := map[string]*proxycfg.Listener{}
	for i := range cfg.Listeners {
		l := &cfg.Listeners[i]
		switch {
		case l.Name == "":
			fail("listeners[%d]: name is empty", i)
		case listeners[l.Name] != nil:
			fail("listener %q: defined twice", l.Name)
		case l.Port < 0 || l.Port > 65535:
			fail("listener %q: port %d out of range", l.Name, l.Port)
		case l.Protocol != "" && l.Protocol != proxycfg.ListenerHTTP && l.Protocol != proxycfg.ListenerHTTPS:
			fail("listener %q: protocol %q is not HTTP or HTTPS", l.Name, l.Protocol)
		default:
			if l.Hostname != "" {
				if err := (&matcher.Rule[int]{Hostnames: []string{l.Hostname}}).Validate(); err != nil {
					fail("listener %q: %v", l.Name, err)
					continue
				}
			}
			listeners[l.Name] = l
		}
	}

	// Compile every rule once; the matcher rules of each listener point at
	// the same targets.
	routesOf := map[string][]matcher.Rule[*target]{}
	for ri := range cfg.Routes {
		r := &cfg.Routes[ri]
		id := r.Namespace + "/" + r.Name
		where := fmt.Sprintf("route %s", id)
		if r.Name == "" {
			fail("routes[%d]: name is empty", ri)
			continue
		}
		if r.Kind != "" && r.Kind != proxycfg.KindHTTP && r.Kind != proxycfg.KindGRPC {
			fail("%s: unknown kind %q", where, r.Kind)
		}
		var mrules []matcher.Rule[*target]
		for i := range r.Rules {
			ru, targets, err := compileRule(r, i, cluster)
			if ru != nil {
				snap.rules = append(snap.rules, ru)
			}
			if err != nil {
				fail("%s rules[%d]: %w", where, i, err)
				continue
			}
			for mi, m := range ruleMatches(&r.Rules[i]) {
				mr, err := matcherRule(r, i, mi, m, targets[mi])
				if err != nil {
					errs = append(errs, err) // it names the route, rule and match
					continue
				}
				mrules = append(mrules, mr)
			}
		}
		for _, ln := range r.Listeners {
			if listeners[ln] == nil {
				fail("%s: listener %q is not defined", where, ln)
				continue
			}
			routesOf[ln] = append(routesOf[ln], mrules...)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	// Group listeners into vhosts: by hostname for the origin listener, by
	// (port, hostname) for direct listeners.
	var err error
	for i, https := range []bool{false, true} {
		if snap.origin[i], err = buildListenerSet(cfg.Listeners, routesOf, func(l *proxycfg.Listener) bool { return (l.Protocol == proxycfg.ListenerHTTPS) == https }); err != nil {
			return nil, err
		}
	}
	ports := map[int]bool{}
	for _, l := range cfg.Listeners {
		ports[l.Port] = true
	}
	for port := range ports {
		if snap.ports[port], err = buildListenerSet(cfg.Listeners, routesOf, func(l *proxycfg.Listener) bool { return l.Port == port }); err != nil {
			return nil, err
		}
	}
	if snap.gateways, err = buildGatewayEndpoints(cfg.Listeners, routesOf); err != nil {
		return nil, err
	}
	return snap, nil
}

// ruleMatches returns a rule's matches, or the implied PathPrefix "/".
func ruleMatches(r *proxycfg.Rule) []proxycfg.Match {
	if len(r.Matches) == 0 {
		return []proxycfg.Match{{}}
	}
	return r.Matches
}

func buildListenerSet(ls []proxycfg.Listener, routesOf map[string][]matcher.Rule[*target], in func(*proxycfg.Listener) bool) (*listenerSet, error) {
	byHost := map[string]*vhost{}
	var order []string
	var rulesOf = map[string][]matcher.Rule[*target]{}
	for i := range ls {
		l := &ls[i]
		if !in(l) {
			continue
		}
		h := strings.ToLower(strings.TrimSuffix(l.Hostname, "."))
		v := byHost[h]
		if v == nil {
			v = &vhost{name: l.Name}
			byHost[h] = v
			order = append(order, h)
		} else {
			v.name += "," + l.Name
		}
		rulesOf[h] = append(rulesOf[h], routesOf[l.Name]...)
		if cv := l.ClientValidation; cv != nil && !cv.AllowInsecureFallback {
			v.certRequired = true
		}
	}
	var picks []matcher.Rule[*vhost]
	for _, h := range order {
		v := byHost[h]
		rules := dedupe(rulesOf[h])
		if len(rules) > 0 {
			t, err := matcher.Compile(rules)
			if err != nil {
				return nil, fmt.Errorf("listener %s: %w", v.name, err)
			}
			v.table = t
		}
		pr := matcher.Rule[*vhost]{Ref: v, Key: matcher.Key{Name: h}}
		if h != "" {
			pr.Hostnames = []string{h}
		}
		picks = append(picks, pr)
	}
	t, err := matcher.Compile(picks)
	if err != nil {
		return nil, err
	}
	return &listenerSet{pick: t}, nil
}

// dedupe drops repeats of a route match, which appear when a route is
// attached to several listeners merged into one vhost.
func dedupe(rules []matcher.Rule[*target]) []matcher.Rule[*target] {
	type id struct {
		t *target
		h string
	}
	seen := map[id]bool{}
	out := rules[:0:0]
	for _, r := range rules {
		k := id{r.Ref, strings.Join(r.Hostnames, ",")}
		if !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	return out
}

func matcherRule(r *proxycfg.Route, ri, mi int, m proxycfg.Match, t *target) (matcher.Rule[*target], error) {
	mr := matcher.Rule[*target]{
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

// compileRule checks and compiles one rule and returns a target per match.
func compileRule(r *proxycfg.Route, i int, cluster func(name string) *clusterSlot) (*rule, []*target, error) {
	src := &r.Rules[i]
	ru := &rule{route: r.Namespace + "/" + r.Name, kind: r.Kind, index: i, name: src.Name, failStatus: src.FailStatus}
	if ru.kind == "" {
		ru.kind = proxycfg.KindHTTP
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
			ru.mirrors = append(ru.mirrors, m)
		case proxycfg.FilterCORS:
			if ru.cors != nil {
				bad("filters[%d]: more than one CORS filter", fi)
			}
			c, err := compileCORS(f.CORS)
			if err != nil {
				bad("filters[%d]: %w", fi, err)
				continue
			}
			ru.cors = c
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
	if ru.respPlan, respErr = compileHeaderPlan(respMods...); respErr != nil {
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
		cb := backend{status: b.Status}
		switch {
		case b.Status != 0 && (b.Status < 400 || b.Status > 599):
			bad("%s: status %d is not a 4xx or 5xx status", where, b.Status)
		case b.Status == 0 && b.Cluster == "":
			bad("%s: needs a cluster or a status", where)
		case b.Status == 0:
			if cb.slot = cluster(b.Cluster); cb.slot == nil {
				bad("%s: cluster %q is not defined", where, b.Cluster)
			}
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
				cb.mirrors = append(cb.mirrors, m)
			default:
				bad("%s.filters[%d]: %s is not supported on a backend; put it on the rule", where, fi, f.Type)
			}
		}
		var err error
		if cb.reqPlan, err = compileHeaderPlan(breq...); err != nil && reqErr == nil {
			bad("%s: request headers: %w", where, err)
		}
		if cb.respPlan, err = compileHeaderPlan(bresp...); err != nil && respErr == nil {
			bad("%s: response headers: %w", where, err)
		}
		if len(cb.mirrors) > 0 {
			ru.buffer = maxReplayBody
		}
		sum += b.Weight
		cb.cumWeight = sum
		ru.backends = append(ru.backends, cb)
	}
	ru.totalWeight = sum
	if t := src.Timeouts; t != nil {
		ru.reqTimeout, ru.tryTimeout = time.Duration(t.Request), time.Duration(t.BackendRequest)
		if ru.reqTimeout > 0 && ru.tryTimeout > ru.reqTimeout {
			bad("timeouts: backendRequest %v exceeds request %v", ru.tryTimeout, ru.reqTimeout)
		}
	}
	if src.Retry != nil {
		rp, err := compileRetry(src.Retry)
		if err != nil {
			bad("retry: %w", err)
		} else {
			ru.retry = rp
			ru.buffer = maxReplayBody
		}
	}
	if len(ru.mirrors) > 0 {
		ru.buffer = maxReplayBody
	}
	if sp := src.SessionPersistence; sp != nil {
		p, err := compileSession(sp)
		if err != nil {
			bad("sessionPersistence: %w", err)
		} else {
			ru.session = p
			ru.sessionScope = ru.route + "#" + strconv.Itoa(i) + "#" + sp.Name
		}
	}

	matches := ruleMatches(src)
	targets := make([]*target, len(matches))
	for mi, m := range matches {
		t := &target{rule: ru}
		prefix := matchedPrefix(m)
		if redirectSpec != nil {
			rd, err := compileRedirect(redirectSpec, prefix)
			if err != nil {
				bad("matches[%d]: RequestRedirect: %w", mi, err)
			}
			t.redirect = rd
		}
		if rewriteSpec != nil {
			rw, err := compileRewrite(rewriteSpec, prefix)
			if err != nil {
				bad("matches[%d]: URLRewrite: %w", mi, err)
			}
			t.rewrite = rw
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

// statusText is the body of an error the proxy answers itself.
func statusText(code int) string { return strconv.Itoa(code) + " " + http.StatusText(code) }

// ValidateRule reports what Load would refuse in rule i of r, taken on its
// own: its matches, filters and settings (cluster names are not checked).
// translate calls it so that one bad rule is dropped and reported on its
// route instead of failing the whole config.
func ValidateRule(r *proxycfg.Route, i int) error {
	anyCluster := func(name string) *clusterSlot { return &clusterSlot{name: name} }
	_, targets, err := compileRule(r, i, anyCluster)
	if err != nil {
		return err
	}
	for mi, m := range ruleMatches(&r.Rules[i]) {
		mr, err := matcherRule(r, i, mi, m, targets[mi])
		if err == nil {
			err = mr.Validate()
		}
		if err != nil {
			return err
		}
	}
	return nil
}
