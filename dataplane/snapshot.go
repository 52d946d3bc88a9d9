package dataplane

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
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
	// clusters are the slots of the clusters this config uses, indexed
	// by cluster ID: their place in Config.Clusters.
	clusters []*clusterSlot
	session  *SessionCodec
	// rules are every compiled rule with what the proxy keeps beside it,
	// indexed by rule ID.
	rules []servedRule
}

// servedRule is a compiled rule with what this proxy keeps beside it: its
// metrics, and its span names when tracing (Proxy.adoptRuleStats).
type servedRule struct {
	*compiled.Rule
	stats *observe.RuleStats
	// spanNames are the server span names of the common methods, made
	// once when tracing.
	spanNames map[string]string
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
	table *matcher.Table[*compiled.Target]
	// certRequired: a merged listener requires a valid client
	// certificate, which only a handshake on its Gateway address checks.
	certRequired bool
}

// compile validates cfg and builds a snapshot. slotFor returns the stable
// slot for a cluster name; compile does not install cluster states (the
// proxy does that once the whole config has passed).
func compile(cfg *proxycfg.Config, slotFor func(name string) *clusterSlot) (*snapshot, error) {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if cfg.Schema != proxycfg.SchemaVersion {
		return nil, fmt.Errorf("config schema is %q; this proxy reads %q (upgrade the proxy or the controller so they match)", cfg.Schema, proxycfg.SchemaVersion)
	}
	snap := &snapshot{version: cfg.Version, ports: map[int]*listenerSet{}}
	if len(cfg.SessionSecret) > 0 {
		snap.session = NewSessionCodec(cfg.SessionSecret)
	}

	clusterIDs := make(map[string]int, len(cfg.Clusters))
	snap.clusters = make([]*clusterSlot, len(cfg.Clusters))
	for i := range cfg.Clusters {
		c := &cfg.Clusters[i]
		if c.Name == "" {
			fail("clusters[%d]: name is empty", i)
			continue
		}
		if _, dup := clusterIDs[c.Name]; dup {
			fail("cluster %q: defined twice", c.Name)
			continue
		}
		clusterIDs[c.Name] = i
		snap.clusters[i] = slotFor(c.Name)
	}
	cluster := func(name string) (int, bool) { id, ok := clusterIDs[name]; return id, ok }

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
	routesOf := map[string][]matcher.Rule[*compiled.Target]{}
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
		var mrules []matcher.Rule[*compiled.Target]
		for i := range r.Rules {
			ru, targets, err := compiled.CompileRule(r, i, len(snap.rules), cluster)
			if ru != nil {
				snap.rules = append(snap.rules, servedRule{Rule: ru})
			}
			if err != nil {
				fail("%s rules[%d]: %w", where, i, err)
				continue
			}
			for mi, m := range compiled.RuleMatches(&r.Rules[i]) {
				mr, err := compiled.MatcherRule(r, i, mi, m, targets[mi])
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

func buildListenerSet(ls []proxycfg.Listener, routesOf map[string][]matcher.Rule[*compiled.Target], in func(*proxycfg.Listener) bool) (*listenerSet, error) {
	byHost := map[string]*vhost{}
	var order []string
	var rulesOf = map[string][]matcher.Rule[*compiled.Target]{}
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
func dedupe(rules []matcher.Rule[*compiled.Target]) []matcher.Rule[*compiled.Target] {
	type id struct {
		t *compiled.Target
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

// statusText is the body of an error the proxy answers itself.
func statusText(code int) string { return strconv.Itoa(code) + " " + http.StatusText(code) }
