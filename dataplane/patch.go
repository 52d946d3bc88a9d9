// This file implements Apply when only some routes changed.

package dataplane

import (
	"errors"
	"maps"
	"slices"

	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/matcher"
)

// After endpoints, the most common change is a route edited: a filter, a
// match, a backend's weight. At 5,000 routes, compiling every rule and
// building every table again costs tens of milliseconds, so a config that
// differs from the one served only in routes edited in place (and perhaps
// in clusters' definitions) is applied by compiling those routes alone:
//
//   - their rules are compiled again under the rule IDs they had (a
//     route keeps its place and its number of rules), and their matches
//     prepared again and filed, in place of the old ones, under the
//     same listeners;
//   - only the tables of the vhosts serving those listeners are built
//     again; every other table, and every other rule, is the served
//     config's;
//   - clusters whose definition changed get new states in their slots,
//     as for an endpoint change (apply.go).
//
// Everything else (a route added, removed or moved, its listeners, name,
// kind or rule names changed, a listener, session key, Access team or
// cluster name changed, or many routes edited) is compiled whole, which
// also reports every problem. A request in flight finishes on the
// compiled config it started with: the patch makes a new one.

// maxEditedRoutes bounds the routes a patch compiles: beyond it, compiling
// whole costs about the same and is simpler.
const maxEditedRoutes = 64

// patchRoutes applies cfg by compiling its edited routes alone, if it is
// such a config. It reports whether it applied cfg, or why cfg is refused
// (an edited route that does not compile); false and nil leave the
// decision to a whole compile (not such a config). p.mu is held.
func (p *Proxy) patchRoutes(cfg *proxycfg.Config) (bool, error) {
	cur, served := p.current.Load(), p.served
	if cur == nil || cfg == served || len(cur.routes) != len(served.Routes) {
		return false, nil
	}
	edited, ok := editedRoutes(served, cfg)
	if !ok || len(edited) == 0 {
		return false, nil
	}
	changed, states := p.changedClusters(cfg)
	if changed == nil {
		p.sweepLocked() // drop transports made for the refused clusters
		return false, nil
	}
	next, err := p.compileEdited(cur, served, cfg, edited)
	if err != nil {
		p.sweepLocked()
		if errors.Is(err, errNotAPatch) {
			return false, nil // compiled whole
		}
		return false, err
	}
	for k, i := range changed {
		next.clusters[i].install(states[k])
	}
	p.current.Store(next)
	p.served = cfg
	p.sweepLocked()
	p.stats.ClusterUpdates.Add(int64(len(changed)))
	return true, nil
}

// editedRoutes returns the indexes of the routes of next that differ from
// served's, if next differs from served only in routes edited in place
// (see above) and clusters' definitions.
func editedRoutes(served, next *proxycfg.Config) ([]int, bool) {
	if len(next.Routes) != len(served.Routes) || !served.EqualFrame(next) {
		return nil, false
	}
	var edited []int
	for i := range next.Routes {
		a, b := &served.Routes[i], &next.Routes[i]
		if a.Equal(b) {
			continue
		}
		if len(edited) == maxEditedRoutes || a.Kind != b.Kind || a.Namespace != b.Namespace || a.Name != b.Name ||
			!slices.Equal(a.Listeners, b.Listeners) ||
			!slices.EqualFunc(a.Rules, b.Rules, func(x, y proxycfg.Rule) bool { return x.Name == y.Name }) {
			return nil, false
		}
		edited = append(edited, i)
	}
	return edited, true
}

// compileEdited returns cur (compiled from served) with the edited routes
// of cfg compiled in place of theirs: their rules, their matches under
// their listeners, and the views built again, keeping every vhost none of
// whose listeners serves an edited route, and updating the tables of the
// others with the edited routes' matches.
func (p *Proxy) compileEdited(cur *compiledConfig, served, cfg *proxycfg.Config, edited []int) (*compiledConfig, error) {
	c := &compiler{cfg: cfg, cc: &compiledConfig{accessKeys: cur.accessKeys}, clusterIDs: make(map[string]int, len(cfg.Clusters))}
	for i := range cfg.Clusters {
		c.clusterIDs[cfg.Clusters[i].Name] = i
	}
	next := *cur
	next.version = cfg.Version
	next.rules = slices.Clone(cur.rules)
	next.routes = slices.Clone(cur.routes)
	filed := *cur.filed // its listeners are Equal to cfg's; gatewayAt is keyed by them
	filed.routesOf = maps.Clone(cur.filed.routesOf)
	changed := map[string]*routesEdit{}
	var prep matcher.Preparer[*compiled.Target]
	for _, ri := range edited {
		r := &cfg.Routes[ri]
		old := cur.routes[ri]
		rules, matches := c.route(r, ri, old.firstRule, &prep)
		if len(c.errs) > 0 {
			continue
		}
		for j := range rules {
			if rules[j].Label() != cur.rules[old.firstRule+j].Label() {
				return nil, errNotAPatch // its metrics series would change name: compile whole
			}
			rules[j].stats, rules[j].spanNames = cur.rules[old.firstRule+j].stats, cur.rules[old.firstRule+j].spanNames
		}
		copy(next.rules[old.firstRule:], rules)
		next.routes[ri] = routeCompiled{firstRule: old.firstRule, matches: matches}
		removed, shared := matchKeys(served, ri)
		for _, ln := range r.Listeners {
			list, ok := replaceMatches(filed.routesOf[ln], old.matches, matches)
			if !ok {
				return nil, errNotAPatch
			}
			filed.routesOf[ln] = list
			e := changed[ln]
			if e == nil {
				e = &routesEdit{}
				changed[ln] = e
			}
			e.remove, e.add, e.whole = append(e.remove, removed...), append(e.add, matches...), e.whole || shared
		}
	}
	if err := errors.Join(c.errs...); err != nil {
		return nil, err
	}
	views, err := filed.rebuild(p.views, keep{prev: cur.views, changed: changed})
	if err != nil {
		return nil, err
	}
	next.views, next.filed = views, &filed
	next.identityNames = identityNamesOf(next.rules)
	return &next, nil
}

// matchKeys are the matcher keys of route ri of cfg's matches, and
// whether another route has the same namespace and name (an HTTPRoute and
// a GRPCRoute), whose matches may have the same keys: removing one's would
// remove the other's, so its tables are built anew.
func matchKeys(cfg *proxycfg.Config, ri int) (keys []matcher.Key, shared bool) {
	r := &cfg.Routes[ri]
	for i := range r.Rules {
		for mi := range r.Rules[i].Matches {
			keys = append(keys, compiled.MatchKey(r, i, mi))
		}
	}
	for j := range cfg.Routes {
		if j != ri && cfg.Routes[j].Namespace == r.Namespace && cfg.Routes[j].Name == r.Name {
			return keys, true
		}
	}
	return keys, false
}

// errNotAPatch says a config that looked like a patch is not one after
// all; Apply compiles it whole.
var errNotAPatch = errors.New("not a patch")

// replaceMatches returns list with the run of old (a route's matches,
// filed together) replaced by now, where a whole compile would file now;
// list itself is not changed. It fails when it cannot tell where that is:
// old is empty, or not found once as a run.
func replaceMatches(list, old, now []*matcher.Prepared[*compiled.Target]) ([]*matcher.Prepared[*compiled.Target], bool) {
	if len(old) == 0 {
		return nil, false
	}
	at := slices.Index(list, old[0])
	if at < 0 || len(list)-at < len(old) || !slices.Equal(list[at:at+len(old)], old) || slices.Index(list[at+1:], old[0]) >= 0 {
		return nil, false
	}
	out := make([]*matcher.Prepared[*compiled.Target], 0, len(list)-len(old)+len(now))
	out = append(out, list[:at]...)
	out = append(out, now...)
	return append(out, list[at+len(old):]...), true
}
