// This file implements Apply when only some routes, listeners or clusters changed.

package dataplane

import (
	"errors"
	"maps"
	"slices"

	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/matcher"
)

// After endpoints, the most common change is a route edited, added or
// deleted, then a listener added, removed or edited (a Gateway's
// listener, with the routes that wait for it). At 5,000 routes,
// compiling every rule and building every table again costs tens of
// milliseconds, so a config that differs from the one served only in
// such routes and listeners (and perhaps in clusters' definitions) is
// applied by compiling those alone. Routes, listeners and clusters are
// told apart by identity (proxycfg.Route.ID, a listener's or cluster's
// name: the contract in proxycfg's package doc), not by position or
// pointer, so one added or deleted does not make every one after it
// look changed:
//
//   - an edited route's rules are compiled again under the rule IDs they
//     had (it keeps its identity, number of rules and their names), and
//     its matches prepared again and filed, in place of the old ones,
//     under the listeners it stays on; taken out of the lists of those
//     it left; and filed, where a whole compile would file them (after
//     those of the route before it), in the lists of those it joined;
//   - an added route's rules get new rule IDs after every other, and its
//     matches are filed where a whole compile would file them: after
//     those of the route before it on each of its listeners;
//   - a deleted route's matches are taken out of its listeners' lists,
//     and its rule IDs left empty (deadRules counts them; past a quarter
//     of the rules the config is compiled whole, which numbers them
//     afresh);
//   - listeners are matched with the served ones by name: when any was
//     added, removed or edited (any field) or they moved in the list,
//     they are checked, and placed on sockets of their own with their
//     TLS configurations, as a whole compile does (refused, to be
//     compiled whole, if a whole compile would report a problem, or if
//     a route kept names a listener removed); a removed listener's list
//     of matches goes, an added one's starts empty, an edited one's
//     stays (routes name listeners by name). Every vhost holding a
//     listener added or edited is built anew (views.go);
//   - only the tables of the vhosts serving the changed routes'
//     listeners are updated, and those of vhosts holding a changed
//     listener built anew; every other table, and every other rule, is
//     the served config's;
//   - clusters whose definition changed get new states in their slots,
//     as for an endpoint change (apply.go).
//
//   - clusters are matched with the served ones by name (their
//     identity): one added gets a slot and an ID after every other, one
//     removed leaves its ID's slot empty (deadClusters counts them), and
//     clusterOf says each cluster's ID from then on. A route kept that
//     names a cluster added or removed is compiled whole (which refuses
//     a config naming a cluster it lacks).
//
// A change to a stream route or to a TCP or TLS listener, or an HTTP
// route joining one, is compiled whole too (touchesStreams): a patch
// keeps the served streamTable (stream.go). So is a cluster that became,
// or stopped being, of protocol tcp.
//
// Everything else (routes reordered, a route's kind or rule names
// changed, two routes, listeners or clusters of one identity, a session
// key or Access team changed, or more than maxEditedRoutes routes and
// listeners, or many clusters, changed) is compiled whole, which also
// reports every problem and numbers rules and clusters afresh. A
// request in flight finishes on the compiled config it started with:
// the patch makes a new one. Sockets of their own open and close after
// a patch that changed listeners, as after a whole load.

// maxEditedRoutes bounds the routes a patch compiles or deletes, with
// the listeners it changes: beyond it, compiling whole costs about the
// same and is simpler.
const maxEditedRoutes = 64

// patchRoutes applies cfg by compiling its changed routes and listeners
// alone, if it is such a config. It reports whether it applied cfg, or
// why cfg is refused (a changed route that does not compile); false and
// nil leave the decision to a whole compile (not such a config). p.mu
// is held.
func (p *Proxy) patchRoutes(cfg *proxycfg.Config) (bool, error) {
	cur, served := p.current.Load(), p.served
	if cur == nil || cfg == served || len(cur.routes) != len(served.Routes) {
		return false, nil
	}
	d, ok := diffRoutes(served, cfg)
	if !ok || touchesStreams(served, cfg, d) {
		return false, nil
	}
	cp, ok := p.patchClusters(cur, served, cfg)
	if !ok {
		p.sweepLocked() // drop transports made for the refused clusters
		return false, nil
	}
	if d.none() && cp.same {
		return false, nil // not a patch (replaceClusters takes what is)
	}
	next, err := p.compileChanged(cur, served, cfg, d, cp)
	if err != nil {
		p.sweepLocked()
		if errors.Is(err, errNotAPatch) {
			return false, nil // compiled whole
		}
		return false, err
	}
	for k, id := range cp.changed {
		next.clusters[id].install(cp.states[k])
	}
	if len(d.added) > 0 || len(d.removed) > 0 {
		p.adoptPatchedRuleStats(next.rules, cur.rules, served, cur, cfg, d)
	}
	for _, s := range cp.fresh {
		p.slots[s.name] = s
	}
	for _, name := range cp.gone {
		delete(p.slots, name)
	}
	p.current.Store(next)
	p.served = cfg
	p.sweepLocked()
	p.stats.ClusterUpdates.Add(int64(len(cp.changed)))
	if g := p.gateways.Load(); g != nil && !d.listeners.same {
		g.sync() // sockets of their own open and close with their listeners
	}
	return true, nil
}

// touchesStreams reports whether d changes a stream route, or a TCP or
// TLS listener, or has an HTTP route join one: the stream side of a
// config (stream.go) is built whole, so such a config is compiled whole.
func touchesStreams(served, cfg *proxycfg.Config, d *routeDiff) bool {
	streamListener := func(c *proxycfg.Config, name string) bool {
		i := slices.IndexFunc(c.Listeners, func(l proxycfg.Listener) bool { return l.Name == name })
		return i >= 0 && isStreamListener(&c.Listeners[i])
	}
	for _, ln := range d.listeners.changed {
		if streamListener(served, ln) || streamListener(cfg, ln) {
			return true
		}
	}
	for _, k := range d.removed {
		if served.Routes[k].Kind.Stream() {
			return true
		}
	}
	for _, i := range slices.Concat(d.edited, d.added) {
		r := &cfg.Routes[i]
		if r.Kind.Stream() || slices.ContainsFunc(r.Listeners, func(ln string) bool { return streamListener(cfg, ln) }) {
			return true
		}
	}
	return false
}

// clusterPatch is how a patch changes the served clusters, matched by
// name (their identity): each of the next config's clusters' ID, the
// states of those new or changed, and the slots new and gone.
type clusterPatch struct {
	same     bool           // the same names in the same order: IDs and slots as served
	clusters []*clusterSlot // by ID
	of       []int          // each cluster's ID, by place; nil: the place
	dead     int
	changed  []int // IDs whose slot gets the state at the same index of states
	states   []*clusterState
	fresh    []*clusterSlot // slots of names new to the proxy
	gone     []string       // names no longer served
}

// maxNewClusters bounds the clusters a patch adds or removes.
const maxNewClusters = 64

// patchClusters matches cfg's clusters with the served ones by name and
// builds the state of each new or changed one. It reports false when one
// is invalid, a name is empty or twice, or too many came or went: a
// whole compile reports or takes those.
func (p *Proxy) patchClusters(cur *compiledConfig, served, cfg *proxycfg.Config) (clusterPatch, bool) {
	if sameClusterNames(served.Clusters, cfg.Clusters) {
		changed, states := p.changedClusters(cfg)
		if changed == nil {
			return clusterPatch{}, false
		}
		for k, i := range changed {
			changed[k] = cur.clusterAt(i)
		}
		return clusterPatch{same: true, clusters: cur.clusters, of: cur.clusterOf, dead: cur.deadClusters, changed: changed, states: states}, true
	}
	at := make(map[string]int, len(served.Clusters))
	for i := range served.Clusters {
		at[served.Clusters[i].Name] = i
	}
	cp := clusterPatch{clusters: slices.Clone(cur.clusters), of: make([]int, len(cfg.Clusters)), dead: cur.deadClusters}
	seen := make([]bool, len(served.Clusters))
	added := map[string]bool{}
	for i := range cfg.Clusters {
		cl := &cfg.Clusters[i]
		k, ok := at[cl.Name]
		switch {
		case cl.Name == "" || added[cl.Name] || (ok && seen[k]):
			return clusterPatch{}, false
		case ok:
			seen[k], cp.of[i] = true, cur.clusterAt(k)
			if cl.Equal(&served.Clusters[k]) {
				continue
			}
			if tcpChanged(&served.Clusters[k], cl) {
				return clusterPatch{}, false
			}
		default:
			if len(cp.fresh) == maxNewClusters {
				return clusterPatch{}, false
			}
			added[cl.Name] = true
			s := &clusterSlot{name: cl.Name}
			cp.of[i] = len(cp.clusters)
			cp.clusters = append(cp.clusters, s)
			cp.fresh = append(cp.fresh, s)
		}
		cs, err := p.transports.state(cl)
		if err != nil {
			return clusterPatch{}, false
		}
		cp.changed, cp.states = append(cp.changed, cp.of[i]), append(cp.states, cs)
	}
	for k := range seen {
		if !seen[k] {
			id := cur.clusterAt(k)
			cp.clusters[id] = nil
			cp.dead++
			cp.gone = append(cp.gone, served.Clusters[k].Name)
		}
	}
	if len(cp.gone) > maxNewClusters || cp.dead > len(cp.clusters)/4 {
		return clusterPatch{}, false // numbered afresh by a whole compile
	}
	return cp, true
}

// sameClusterNames reports whether a and b name the same clusters in the
// same order.
func sameClusterNames(a, b []proxycfg.Cluster) bool {
	return slices.EqualFunc(a, b, func(x, y proxycfg.Cluster) bool { return x.Name == y.Name })
}

// routeDiff is how a config's routes and listeners differ from the
// served config's, by identity.
type routeDiff struct {
	// from is, for each route of the next config, the index of the
	// served route of its identity; -1 for a route added.
	from []int
	// edited and added are indexes in the next config; removed, in the
	// served one. Each is in ascending order. An edited route may have
	// changed listeners too.
	edited, added, removed []int
	listeners              listenerDiff
}

func (d *routeDiff) none() bool {
	return len(d.edited)+len(d.added)+len(d.removed) == 0 && d.listeners.same
}

// listenerDiff is how a config's listeners differ from the served
// config's, by name (their identity).
type listenerDiff struct {
	// same: Equal listeners in the same order, so the served filing's
	// listeners, sockets and TLS configurations stand as they are.
	same bool
	// changed are the names of the listeners added, removed or edited
	// (no longer Equal); a listener only moved in the list is not one.
	changed []string
	// removed are the names of the listeners no longer in the config.
	removed map[string]bool
}

// diffListeners tells how next's listeners differ from served's. It
// reports false when next has a listener without a name or two of one
// name: a whole compile reports those.
func diffListeners(served, next []proxycfg.Listener) (listenerDiff, bool) {
	if len(served) == len(next) && (served == nil) == (next == nil) &&
		slices.EqualFunc(served, next, func(a, b proxycfg.Listener) bool { return a.Equal(&b) }) {
		return listenerDiff{same: true}, true
	}
	at := make(map[string]int, len(served))
	for i := range served {
		at[served[i].Name] = i
	}
	var d listenerDiff
	seen := make(map[string]bool, len(next))
	for i := range next {
		l := &next[i]
		if l.Name == "" || seen[l.Name] {
			return listenerDiff{}, false
		}
		seen[l.Name] = true
		if k, ok := at[l.Name]; !ok || !l.Equal(&served[k]) {
			d.changed = append(d.changed, l.Name)
		}
	}
	for i := range served {
		if name := served[i].Name; !seen[name] {
			d.changed = append(d.changed, name)
			if d.removed == nil {
				d.removed = map[string]bool{}
			}
			d.removed[name] = true
		}
	}
	return d, true
}

// diffRoutes tells how next's routes and listeners differ from served's,
// if next differs from served only in routes edited in place (their
// listeners too), added or deleted, in listeners (see above) and in
// clusters' definitions.
func diffRoutes(served, next *proxycfg.Config) (*routeDiff, bool) {
	if !equalFrameButClustersAndListeners(served, next) {
		return nil, false
	}
	ld, ok := diffListeners(served.Listeners, next.Listeners)
	if !ok {
		return nil, false
	}
	d := &routeDiff{from: make([]int, len(next.Routes)), listeners: ld}
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
		if !slices.EqualFunc(a.Rules, b.Rules, func(x, y proxycfg.Rule) bool { return x.Name == y.Name }) {
			return nil, false
		}
		d.edited = append(d.edited, i)
		if len(d.edited) > maxEditedRoutes {
			return nil, false
		}
	}
	if len(d.edited)+len(d.added)+len(d.removed)+len(d.listeners.changed) > maxEditedRoutes {
		return nil, false
	}
	return d, true
}

// equalFrameButClustersAndListeners reports whether a and b are
// EqualFrame but, at most, in their clusters' names and order
// (patchClusters matches clusters by name) and in their listeners
// (diffListeners matches them by name).
func equalFrameButClustersAndListeners(a, b *proxycfg.Config) bool {
	x, y := *a, *b
	x.Clusters, y.Clusters = nil, nil
	x.Listeners, y.Listeners = nil, nil
	return x.EqualFrame(&y)
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
// none of whose listeners changed or serves a changed route, and
// updating the tables of those whose listeners only serve changed
// routes with those routes' matches.
func (p *Proxy) compileChanged(cur *compiledConfig, served, cfg *proxycfg.Config, d *routeDiff, cp clusterPatch) (*compiledConfig, error) {
	c := &compiler{cfg: cfg, cc: &compiledConfig{accessKeys: cur.accessKeys}, clusterIDs: make(map[string]int, len(cfg.Clusters)), listenersBefore: cur.filed.stats}
	for i := range cfg.Clusters {
		c.clusterIDs[cfg.Clusters[i].Name] = i
		if cp.of != nil {
			c.clusterIDs[cfg.Clusters[i].Name] = cp.of[i]
		}
	}
	if keptNameAny(cfg, d, cp) {
		return nil, errNotAPatch // a kept route's rules would compile otherwise
	}
	next := *cur
	next.version = cfg.Version
	next.clusters, next.clusterOf, next.deadClusters = cp.clusters, cp.of, cp.dead
	next.rules = slices.Clone(cur.rules)
	next.routes = make([]routeCompiled, len(cfg.Routes))
	for i, k := range d.from {
		if k >= 0 {
			next.routes[i] = cur.routes[k]
		}
	}
	changed := map[string]*routesEdit{}
	edit := func(ln string) *routesEdit {
		e := changed[ln]
		if e == nil {
			e = &routesEdit{}
			changed[ln] = e
		}
		return e
	}
	filed, err := patchedFiling(c, cur.filed, cfg, d, p.placement())
	if err != nil {
		return nil, err
	}
	for _, ln := range d.listeners.changed {
		edit(ln).whole = true // every vhost holding it is built anew
	}
	defined := func(ln string) bool {
		return slices.ContainsFunc(filed.listeners, func(l proxycfg.Listener) bool { return l.Name == ln })
	}
	// leave takes a route's served matches out of listener ln's list
	// (which went with ln if ln was removed) and notes their keys, for
	// the tables of ln's vhosts; false when the list does not hold them
	// as served.
	leave := func(ln string, matches []*matcher.Prepared[*compiled.Target], keys []matcher.Key, shared bool) bool {
		if len(matches) > 0 && !d.listeners.removed[ln] {
			list, ok := replaceMatches(filed.routesOf[ln], matches, nil)
			if !ok {
				return false
			}
			filed.routesOf[ln] = list
		}
		e := edit(ln)
		e.remove, e.whole = append(e.remove, keys...), e.whole || shared
		return true
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
		was := served.Routes[d.from[ri]].Listeners
		if !slices.Equal(was, r.Listeners) {
			// Its listeners changed: it leaves some and joins others.
			if hasRepeat(was) || hasRepeat(r.Listeners) {
				return nil, errNotAPatch
			}
			_, sharedNow := matchKeys(cfg, ri)
			shared = shared || sharedNow
		}
		for _, ln := range was {
			if !slices.Contains(r.Listeners, ln) && !leave(ln, old.matches, removed, shared) {
				return nil, errNotAPatch
			}
		}
		for _, ln := range r.Listeners {
			var list []*matcher.Prepared[*compiled.Target]
			ok := true
			switch {
			case slices.Contains(was, ln):
				list, ok = replaceMatches(filed.routesOf[ln], old.matches, matches)
			case !defined(ln):
				return nil, errNotAPatch // a whole compile reports it
			default: // joined: filed where a whole compile files it
				list, ok = insertMatches(filed.routesOf[ln], cfg, next.routes, ri, ln)
			}
			if !ok {
				return nil, errNotAPatch
			}
			filed.routesOf[ln] = list
			e := edit(ln)
			if slices.Contains(was, ln) {
				e.remove = append(e.remove, removed...)
			}
			e.add, e.whole = append(e.add, matches...), e.whole || shared
		}
	}
	for _, k := range d.removed {
		old := cur.routes[k]
		n := len(served.Routes[k].Rules) // a config served compiled every rule
		clear(next.rules[old.firstRule : old.firstRule+n])
		next.deadRules += n
		removed, shared := matchKeys(served, k)
		for _, ln := range served.Routes[k].Listeners {
			if !leave(ln, old.matches, removed, shared) {
				return nil, errNotAPatch
			}
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
			if !defined(ln) {
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
	next.views, next.filed = views, filed
	next.identityNames = identityNamesOf(next.rules)
	return &next, nil
}

// patchedFiling returns the filing the patch starts from: the served
// one's routes by listener, with cfg's listeners. When the listeners
// changed, they are checked, and their sockets of their own and TLS
// configurations made, as a whole compile does (compiler.listeners); a
// problem, or a route kept that names a listener removed, leaves cfg to
// a whole compile, which reports it. A removed listener's routes go.
func patchedFiling(c *compiler, served *filing, cfg *proxycfg.Config, d *routeDiff, place placement) (*filing, error) {
	f := *served
	f.listeners = cfg.Listeners
	f.routesOf = maps.Clone(served.routesOf)
	if d.listeners.same {
		return &f, nil
	}
	c.listeners(place)
	if len(c.errs) > 0 {
		return nil, errNotAPatch
	}
	f.gatewayAt, f.gatewayTLS, f.stats = c.cc.filed.gatewayAt, c.cc.filed.gatewayTLS, c.cc.filed.stats
	if len(d.listeners.removed) == 0 {
		return &f, nil
	}
	for ln := range d.listeners.removed {
		delete(f.routesOf, ln)
	}
	for i := range cfg.Routes {
		for _, ln := range cfg.Routes[i].Listeners {
			if d.listeners.removed[ln] {
				return nil, errNotAPatch
			}
		}
	}
	return &f, nil
}

// hasRepeat reports whether a name is in names twice.
func hasRepeat(names []string) bool {
	for i, n := range names {
		if slices.Contains(names[i+1:], n) {
			return true
		}
	}
	return false
}

// keptNameAny reports whether a route of cfg the patch keeps (neither
// edited nor added) names a cluster that came or went: its compiled
// rules name that cluster as it was (a slot now empty, or no cluster).
func keptNameAny(cfg *proxycfg.Config, d *routeDiff, cp clusterPatch) bool {
	if len(cp.fresh) == 0 && len(cp.gone) == 0 {
		return false
	}
	names := make(map[string]bool, len(cp.fresh)+len(cp.gone))
	for _, s := range cp.fresh {
		names[s.name] = true
	}
	for _, n := range cp.gone {
		names[n] = true
	}
	compiled := make(map[int]bool, len(d.edited)+len(d.added))
	for _, i := range d.edited {
		compiled[i] = true
	}
	for _, i := range d.added {
		compiled[i] = true
	}
	for i := range cfg.Routes {
		if compiled[i] {
			continue
		}
		for j := range cfg.Routes[i].Rules {
			for n := range cfg.Routes[i].Rules[j].Clusters {
				if names[n] {
					return true
				}
			}
		}
	}
	return false
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
			st = p.newRuleStats(key)
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
