// This file implements Apply when only some routes changed: edited, added or deleted.

package dataplane

import (
	"errors"
	"maps"
	"slices"

	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/matcher"
)

// After endpoints, the most common change is a route edited, added or
// deleted. At 5,000 routes, compiling every rule and building every
// table again costs tens of milliseconds, so a config that differs from
// the one served only in such routes (and perhaps in clusters'
// definitions) is applied by compiling those routes alone. Routes are
// told apart by identity (proxycfg.Route.ID, the contract in proxycfg's
// package doc), not by position, so a route added or deleted does not
// make every route after it look changed:
//
//   - an edited route's rules are compiled again under the rule IDs they
//     had (it keeps its identity, listeners, number of rules and their
//     names), and its matches prepared again and filed, in place of the
//     old ones, under the same listeners;
//   - an added route's rules get new rule IDs after every other, and its
//     matches are filed where a whole compile would file them: after
//     those of the route before it on each of its listeners;
//   - a deleted route's matches are taken out of its listeners' lists,
//     and its rule IDs left empty (deadRules counts them; past a quarter
//     of the rules the config is compiled whole, which numbers them
//     afresh);
//   - only the tables of the vhosts serving those listeners are updated;
//     every other table, and every other rule, is the served config's;
//   - clusters whose definition changed get new states in their slots,
//     as for an endpoint change (apply.go).
//
// Everything else (routes reordered, a route's listeners, kind or rule
// names changed, two routes of one identity, a listener, session key,
// Access team or cluster name changed, or many routes changed) is
// compiled whole, which also reports every problem. Cluster IDs are
// still the clusters' places in Config.Clusters, so a cluster added or
// removed is compiled whole too. A request in flight finishes on the
// compiled config it started with: the patch makes a new one.

// maxEditedRoutes bounds the routes a patch compiles or deletes: beyond
// it, compiling whole costs about the same and is simpler.
const maxEditedRoutes = 64

// patchRoutes applies cfg by compiling its changed routes alone, if it is
// such a config. It reports whether it applied cfg, or why cfg is refused
// (a changed route that does not compile); false and nil leave the
// decision to a whole compile (not such a config). p.mu is held.
func (p *Proxy) patchRoutes(cfg *proxycfg.Config) (bool, error) {
	cur, served := p.current.Load(), p.served
	if cur == nil || cfg == served || len(cur.routes) != len(served.Routes) {
		return false, nil
	}
	d, ok := diffRoutes(served, cfg)
	if !ok || d.none() {
		return false, nil
	}
	changed, states := p.changedClusters(cfg)
	if changed == nil {
		p.sweepLocked() // drop transports made for the refused clusters
		return false, nil
	}
	next, err := p.compileChanged(cur, served, cfg, d)
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
	if len(d.added) > 0 || len(d.removed) > 0 {
		p.adoptPatchedRuleStats(next.rules, cur.rules, served, cur, cfg, d)
	}
	p.current.Store(next)
	p.served = cfg
	p.sweepLocked()
	p.stats.ClusterUpdates.Add(int64(len(changed)))
	return true, nil
}

// routeDiff is how a config's routes differ from the served config's, by
// identity.
type routeDiff struct {
	// from is, for each route of the next config, the index of the
	// served route of its identity; -1 for a route added.
	from []int
	// edited and added are indexes in the next config; removed, in the
	// served one. Each is in ascending order.
	edited, added, removed []int
}

func (d *routeDiff) none() bool { return len(d.edited)+len(d.added)+len(d.removed) == 0 }

// diffRoutes tells how next's routes differ from served's, if next
// differs from served only in routes edited in place, added or deleted
// (see above) and clusters' definitions.
func diffRoutes(served, next *proxycfg.Config) (*routeDiff, bool) {
	if !served.EqualFrame(next) {
		return nil, false
	}
	d := &routeDiff{from: make([]int, len(next.Routes))}
	if !samePlaces(served.Routes, next.Routes) {
		at := make(map[proxycfg.RouteID]int, len(served.Routes))
		for i := range served.Routes {
			at[served.Routes[i].ID()] = i
		}
		if len(at) != len(served.Routes) {
			return nil, false // two routes of one identity
		}
		seen := make([]bool, len(served.Routes))
		last := -1
		for i := range next.Routes {
			k, ok := at[next.Routes[i].ID()]
			switch {
			case !ok:
				d.from[i] = -1
				d.added = append(d.added, i)
				continue
			case seen[k] || k < last:
				return nil, false // a route twice, or routes reordered
			}
			seen[k], last, d.from[i] = true, k, k
		}
		for k := range seen {
			if !seen[k] {
				d.removed = append(d.removed, k)
			}
		}
	} else {
		for i := range d.from {
			d.from[i] = i
		}
	}
	for i, k := range d.from {
		if k < 0 {
			continue
		}
		a, b := &served.Routes[k], &next.Routes[i]
		if a.Equal(b) {
			continue
		}
		if !slices.Equal(a.Listeners, b.Listeners) ||
			!slices.EqualFunc(a.Rules, b.Rules, func(x, y proxycfg.Rule) bool { return x.Name == y.Name }) {
			return nil, false
		}
		d.edited = append(d.edited, i)
		if len(d.edited) > maxEditedRoutes {
			return nil, false
		}
	}
	if len(d.edited)+len(d.added)+len(d.removed) > maxEditedRoutes {
		return nil, false
	}
	return d, true
}

// samePlaces reports whether a and b hold routes of the same identities
// at the same places: the common case, an edit, told without a map.
func samePlaces(a, b []proxycfg.Route) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Kind != b[i].Kind || a[i].Namespace != b[i].Namespace || a[i].Name != b[i].Name {
			return false
		}
	}
	return true
}

// compileChanged returns cur (compiled from served) with the changed
// routes of cfg compiled in place of theirs: their rules, their matches
// under their listeners, and the views built again, keeping every vhost
// none of whose listeners serves a changed route, and updating the
// tables of the others with the changed routes' matches.
func (p *Proxy) compileChanged(cur *compiledConfig, served, cfg *proxycfg.Config, d *routeDiff) (*compiledConfig, error) {
	c := &compiler{cfg: cfg, cc: &compiledConfig{accessKeys: cur.accessKeys}, clusterIDs: make(map[string]int, len(cfg.Clusters))}
	for i := range cfg.Clusters {
		c.clusterIDs[cfg.Clusters[i].Name] = i
	}
	next := *cur
	next.version = cfg.Version
	next.rules = slices.Clone(cur.rules)
	next.routes = make([]routeCompiled, len(cfg.Routes))
	for i, k := range d.from {
		if k >= 0 {
			next.routes[i] = cur.routes[k]
		}
	}
	filed := *cur.filed // its listeners are Equal to cfg's; gatewayAt is keyed by them
	filed.routesOf = maps.Clone(cur.filed.routesOf)
	changed := map[string]*routesEdit{}
	edit := func(ln string) *routesEdit {
		e := changed[ln]
		if e == nil {
			e = &routesEdit{}
			changed[ln] = e
		}
		return e
	}
	var prep matcher.Preparer[*compiled.Target]
	for _, ri := range d.edited {
		r := &cfg.Routes[ri]
		old := cur.routes[d.from[ri]]
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
		removed, shared := matchKeys(served, d.from[ri])
		for _, ln := range r.Listeners {
			list, ok := replaceMatches(filed.routesOf[ln], old.matches, matches)
			if !ok {
				return nil, errNotAPatch
			}
			filed.routesOf[ln] = list
			e := edit(ln)
			e.remove, e.add, e.whole = append(e.remove, removed...), append(e.add, matches...), e.whole || shared
		}
	}
	for _, k := range d.removed {
		old := cur.routes[k]
		n := len(served.Routes[k].Rules) // a config served compiled every rule
		clear(next.rules[old.firstRule : old.firstRule+n])
		next.deadRules += n
		removed, shared := matchKeys(served, k)
		for _, ln := range served.Routes[k].Listeners {
			if len(old.matches) > 0 {
				list, ok := replaceMatches(filed.routesOf[ln], old.matches, nil)
				if !ok {
					return nil, errNotAPatch
				}
				filed.routesOf[ln] = list
			}
			e := edit(ln)
			e.remove, e.whole = append(e.remove, removed...), e.whole || shared
		}
	}
	if next.deadRules > len(next.rules)/4 {
		return nil, errNotAPatch // numbered afresh by a whole compile
	}
	for _, ri := range d.added {
		r := &cfg.Routes[ri]
		first := len(next.rules)
		rules, matches := c.route(r, ri, first, &prep)
		if len(c.errs) > 0 {
			continue
		}
		next.rules = append(next.rules, rules...)
		next.routes[ri] = routeCompiled{firstRule: first, matches: matches}
		_, shared := matchKeys(cfg, ri)
		for _, ln := range r.Listeners {
			if !slices.ContainsFunc(filed.listeners, func(l proxycfg.Listener) bool { return l.Name == ln }) {
				return nil, errNotAPatch // a whole compile reports it
			}
			list, ok := insertMatches(filed.routesOf[ln], cfg, next.routes, ri, ln)
			if !ok {
				return nil, errNotAPatch
			}
			filed.routesOf[ln] = list
			e := edit(ln)
			e.add, e.whole = append(e.add, matches...), e.whole || shared
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

// insertMatches returns list (the matches filed under listener ln) with
// route ri's matches inserted where a whole compile of cfg would file
// them: after those of the nearest route before it on ln. routes are
// cfg's routes compiled, set for every route before ri. list itself is
// not changed.
func insertMatches(list []*matcher.Prepared[*compiled.Target], cfg *proxycfg.Config, routes []routeCompiled, ri int, ln string) ([]*matcher.Prepared[*compiled.Target], bool) {
	at := 0
	for j := ri - 1; j >= 0; j-- {
		if m := routes[j].matches; len(m) > 0 && slices.Contains(cfg.Routes[j].Listeners, ln) {
			k := slices.Index(list, m[len(m)-1])
			if k < 0 {
				return nil, false
			}
			at = k + 1
			break
		}
	}
	return slices.Insert(slices.Clip(list), at, routes[ri].matches...), true
}

// adoptPatchedRuleStats gives the rules of the routes a patch added their
// metrics, as adoptRuleStats gives a whole config's, and drops the series
// of the deleted routes' rules that no rule serves any more. rules are
// the patched config's, old the served one's.
func (p *Proxy) adoptPatchedRuleStats(rules, old []servedRule, served *proxycfg.Config, cur *compiledConfig, cfg *proxycfg.Config, d *routeDiff) {
	gone := map[[2]string]bool{}
	for _, k := range d.removed {
		first := cur.routes[k].firstRule
		for j := range served.Routes[k].Rules {
			gone[[2]string{old[first+j].Route, old[first+j].Label()}] = true
		}
	}
	fresh := rules[len(old):]
	for i := range fresh {
		ru := &fresh[i]
		key := [2]string{ru.Route, ru.Label()}
		delete(gone, key)
		st := p.ruleStats[key]
		if st == nil {
			st = &observe.RuleStats{Route: key[0], Rule: key[1]}
			p.ruleStats[key] = st
		}
		ru.stats = st
		if p.tracer != nil {
			ru.spanNames = spanNamesOf(ru.Route)
		}
	}
	if len(gone) == 0 {
		return
	}
	for i := range rules[:len(old)] { // a series another rule still serves stays
		if rules[i].Rule != nil {
			delete(gone, [2]string{rules[i].Route, rules[i].Label()})
		}
	}
	for key := range gone {
		delete(p.ruleStats, key)
	}
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
