// This file implements a patched translation: only what changed is
// translated again.

package translate

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// The most common change in a cluster is a pod coming or going: one
// EndpointSlice replaced. Translating 5,000 routes again for it, even from
// memos, is thousands of map lookups and a full diff. So the Cache keeps
// the whole last translation (lastRun), and when the only objects that
// changed since are backends (Services, EndpointSlices, ExternalBackends)
// and routes (HTTPRoutes, GRPCRoutes) edited without changing how they
// attach, added or deleted (routepatch.go), patch translates again just
// those routes and the routes that resolved through those backends, on
// the last translation's working state (Gateways, listeners,
// attachments), and copies everything else: a route added is attached
// and translated alone and its data-plane routes, clusters, statuses,
// attachedRoutes counts and public hostnames put where a full
// translation puts them; a route deleted has its own taken out. The
// result is exactly what a full translation would give; wherever that is
// not certain (any other object added, deleted or replaced, a route's
// shape or attachment counts changing under an edit, a route added or
// deleted that meets another in a conflict or a hostname claim, an
// AccessPolicy, a LoadBalancingPolicy, a DNSPolicy or a Gateway's own data plane, a
// BackendTLSPolicy involved, the clock needed by a route not added)
// patch gives up and Cache.Translate does the full translation.

// lastRun is a full or patched translation, kept for the next one.
type lastRun struct {
	t      *translator // its working state, read-only once kept
	out    *Output
	slots  []routeSlot
	slotOf slotIndex // route key → index in slots
	byName map[routeName]int
	// clocked counts the slots whose translation took the clock (routes
	// added without a status of their own): the next patch must translate
	// each again, or give up.
	clocked int
	// hostUses counts, by public hostname, the routes that publish it
	// (hostUse); made at the first route added or deleted.
	hostUses map[string][]hostUse

	// The keys of the backend objects it was made from, to tell what
	// changed.
	services  keySet
	slices    keySet
	externals keySet
	addresses []gwv1.GatewayStatusAddress

	// patchable is false when a repeat of the translation could differ
	// from it (a condition took the clock, an event was told) or when its
	// input named two backends alike.
	patchable bool
}

// routeSlot is one route of a translation: its object and the key it had
// then, its working state, its translation (nil when no parent is ours),
// and where its data-plane routes start in the config.
type routeSlot struct {
	obj   any
	key   objKey
	info  *routeInfo
	memo  *routeMemo
	first int
	// clocked: a route added by a patch whose statuses took the clock.
	clocked bool
}

func newLastRun(t *translator, slots []routeSlot, slotOf slotIndex) *lastRun {
	s := &t.in.Snapshot
	l := &lastRun{t: t, out: t.out, slots: slots, slotOf: slotOf, addresses: t.in.Addresses,
		services:  setOf(s.Services),
		slices:    setOf(s.EndpointSlices),
		externals: setOf(s.ExternalBackends),
	}
	ix := t.look.ix
	l.patchable = t.clockUses == 0 && len(t.out.Events) == 0 &&
		len(l.services) == len(s.Services) && len(ix.services) == len(s.Services) &&
		len(l.externals) == len(s.ExternalBackends) && len(ix.external) == len(s.ExternalBackends) &&
		len(l.slices) == len(s.EndpointSlices)
	// The translator is kept for its graph; its output-building state is
	// not needed, and a patch builds its own.
	t.backends, t.clusters, t.clusterIdx = nil, nil, nil
	return l
}

// setOf is the set of the objects' keys; smaller than objs when two
// share a UID.
func setOf[P metav1.Object](objs []P) keySet {
	m := make(keySet, len(objs))
	for _, o := range objs {
		m.add(keyOf(o))
	}
	return m
}

// backendChange is one backend object that is new or replaced since the
// last translation, with the version it replaced (nil if added).
type backendChange struct {
	kind     string
	obj, old any
}

// patch returns the translation of in made by patching the last one, or
// nil when only a full translation will do.
func (c *Cache) patch(in *Input) *Output {
	l := c.last
	if !c.mayPatch(in) {
		return nil
	}
	rc, ok := l.routeChanges(in)
	if !ok || !l.clockedCovered(&rc) {
		return nil
	}
	edits := rc.edits
	changes, ok := l.backendChanges(in)
	if !ok {
		return nil
	}
	affected := l.affected(changes, edits)
	if len(affected)+len(rc.adds)+len(rc.deletes) > len(l.slots)/4+1 {
		return nil // a full translation costs about the same, and is simpler
	}
	if len(rc.adds)+len(rc.deletes) > 0 && !l.routeSetPatchable() {
		return nil
	}

	// From here on the last translation's index and graph describe in; if
	// the patch still gives up, the full translation builds its own, and
	// the memos it reuses are checked against that.
	l.t.look.ix.apply(changes)
	l.setsApply(changes)
	l.replaceRoutes(edits)

	t := l.patchTranslator(in)
	memos := make([]*routeMemo, len(affected)) // on the stack when few
	objs := l.routeObjects(affected, edits)
	if !t.retranslate(l, affected, objs, memos) {
		return nil
	}
	op, ok := l.patchOutput(affected, memos)
	if !ok {
		return nil
	}
	c.keepPatch(t, op.out, affected, memos, edits)
	added, ok := c.patchRouteSet(t, op, &rc)
	if !ok {
		return nil
	}
	c.countPatch(affected, &rc, added)
	return op.out
}

// mayPatch reports whether in may be a patch of the last translation:
// one that can be repeated, made in the same epoch, with the same
// addresses.
func (c *Cache) mayPatch(in *Input) bool {
	l := c.last
	return l != nil && l.patchable && c.epochSame && addressesEqual(l.addresses, in.Addresses)
}

// routeObjects are the route objects of the affected slots as in has
// them: the slot's, or the one replacing it.
func (l *lastRun) routeObjects(affected []int, edits []routeChange) []any {
	objs := make([]any, len(affected))
	for i, si := range affected {
		objs[i] = l.slots[si].obj
		for _, e := range edits {
			if e.slot == si {
				objs[i] = e.obj
			}
		}
	}
	return objs
}

// patchTranslator returns a translator for in that shares the last
// translation's graph; everything it writes is its own.
func (l *lastRun) patchTranslator(in *Input) *translator {
	t := *l.t
	t.in, t.now, t.clockUses = in, metav1Now(in), 0
	t.out = &Output{HTTPRoutes: map[types.NamespacedName][]gwv1.RouteParentStatus{}, GRPCRoutes: map[types.NamespacedName][]gwv1.RouteParentStatus{}}
	t.backends = map[backendKey]resolvedBackend{}
	t.clusters, t.clusterIdx = nil, nil
	t.policyByObj = map[*gwv1.BackendTLSPolicy]*policyInfo{}
	return &t
}

// retranslate translates the affected routes again, into memos (by
// index in affected). It fails (false) when one's translation is not of
// the last one's shape (its data-plane routes, clusters and counted
// parents), or could not be repeated: a patch only replaces parts.
func (t *translator) retranslate(l *lastRun, affected []int, objs []any, memos []*routeMemo) bool {
	for i, si := range affected {
		s := &l.slots[si]
		http, _ := objs[i].(*gwv1.HTTPRoute)
		grpc, _ := objs[i].(*gwv1.GRPCRoute)
		m := t.translateRoute(s.info, http, grpc)
		if !m.repeatable() || t.clockUses != 0 || m.counted != s.memo.counted || len(m.routes) != len(s.memo.routes) ||
			!sameClusterNamesInOrder(m.clusters, s.memo.clusters) {
			return false
		}
		memos[i] = m
	}
	return true
}

// patchOutput copies the last output, replacing what the retranslated
// routes changed. It fails (false) when a route uses a cluster the
// config does not hold.
func (l *lastRun) patchOutput(affected []int, memos []*routeMemo) (*outputPatch, bool) {
	out := *l.out
	out.Events = nil
	out.Config.Version = ""
	out.patchOf = l.out
	out.touchedHTTP, out.touchedGRPC, out.touchedGateways, out.touchedSets = nil, nil, nil, nil
	op := &outputPatch{out: &out}
	for i, si := range affected {
		s, m := &l.slots[si], memos[i]
		op.routes(s.first, m.routes)
		if !op.clusters(m.clusters) {
			return nil, false
		}
		op.statuses(s, m)
	}
	return op, true
}

// outputPatch is an output copied from the last one, being changed.
// Outputs are read-only, so each part (the config's routes, its clusters,
// each kind's statuses) is shared until its first change, and copied
// then.
type outputPatch struct {
	out                                                  *Output
	routesCopied, clustersCopied, httpCopied, grpcCopied bool
	gatewaysCopied, setsCopied, hostnamesCopied          bool
	clusterAt                                            map[string]int // cluster name → index, made at the ninth look-up
	clusterLookups                                       int
}

// routes replaces the config's routes from first on with routes, where
// they differ.
func (op *outputPatch) routes(first int, routes []proxycfg.Route) {
	out := op.out
	for j := range routes {
		at := first + j
		if reflect.DeepEqual(&out.Config.Routes[at], &routes[j]) {
			continue
		}
		if !op.routesCopied {
			out.Config.Routes, op.routesCopied = slices.Clone(out.Config.Routes), true
		}
		out.Config.Routes[at] = routes[j]
	}
}

// clusters replaces the config's clusters of the same names, where they
// differ. It fails (false) on a cluster the config does not hold.
func (op *outputPatch) clusters(clusters []proxycfg.Cluster) bool {
	out := op.out
	for j := range clusters {
		at, ok := op.clusterIndex(clusters[j].Name)
		if !ok {
			return false // not in the config: some other route decided it was unused
		}
		if reflect.DeepEqual(&out.Config.Clusters[at], &clusters[j]) {
			continue
		}
		if !op.clustersCopied {
			out.Config.Clusters, op.clustersCopied = slices.Clone(out.Config.Clusters), true
		}
		out.Config.Clusters[at] = clusters[j]
	}
	return true
}

// statuses puts the route's new statuses in the output when they differ
// from the last ones, and notes the route as touched. Equal ones are
// kept as they were, so the memo shares them.
func (op *outputPatch) statuses(s *routeSlot, m *routeMemo) {
	if parentsEqual(s.memo.statuses, m.statuses) {
		m.statuses = s.memo.statuses
		return
	}
	op.setStatuses(s.info, m.statuses)
}

// setStatuses puts a route's statuses in the output (nil: takes them
// out, the route being deleted) and notes the route as touched.
func (op *outputPatch) setStatuses(r *routeInfo, statuses []gwv1.RouteParentStatus) {
	out := op.out
	key := nn(r.meta.Namespace, r.meta.Name)
	m, copied, touched := &out.HTTPRoutes, &op.httpCopied, &out.touchedHTTP
	if r.kind != kindHTTPRoute {
		m, copied, touched = &out.GRPCRoutes, &op.grpcCopied, &out.touchedGRPC
	}
	if !*copied {
		*m, *copied = cloneMap(*m), true
	}
	if statuses == nil {
		delete(*m, key)
	} else {
		(*m)[key] = statuses
	}
	*touched = append(*touched, key)
}

// clusterIndex is the index of the config's cluster of that name. The
// first few look-ups scan the list: a map of thousands of clusters costs
// more than a route added or deleted does otherwise.
func (op *outputPatch) clusterIndex(name string) (int, bool) {
	cs := op.out.Config.Clusters
	if op.clusterAt == nil && op.clusterLookups < 8 {
		op.clusterLookups++
		for i := range cs {
			if cs[i].Name == name {
				return i, true
			}
		}
		return -1, false
	}
	if op.clusterAt == nil {
		op.clusterAt = make(map[string]int, len(cs))
		for k := range cs {
			op.clusterAt[cs[k].Name] = k
		}
	}
	at, ok := op.clusterAt[name]
	return at, ok
}

// keepPatch makes the patched translation the last one, with the new
// memos and route objects in their slots, and counts the memos reused
// and remade.
func (c *Cache) keepPatch(t *translator, out *Output, affected []int, memos []*routeMemo, edits []routeChange) {
	l := c.last
	for i, si := range affected {
		memos[i].parents = l.slots[si].memo.parents
		l.slots[si].memo = memos[i]
	}
	for _, e := range edits {
		s := &l.slots[e.slot]
		l.slotOf.replace(s.key, e.key, e.slot)
		s.obj, s.key = e.obj, e.key
		c.forgetRules()
		if s.clocked { // translated again, without the clock (retranslate)
			s.clocked = false
			l.clocked--
		}
	}
	l.out = out
	l.t.in, l.t.now = t.in, t.now
}

// countPatch records what a patch did (Stats, Patched): the routes it
// translated (those affected that are still there, and those added with
// a parent of ours), and the rest of the remembered ones, reused.
func (c *Cache) countPatch(affected []int, rc *routeDelta, added int) {
	l := c.last
	c.patched = true
	c.misses = added
	for _, si := range affected {
		if !slices.Contains(rc.deletes, si) {
			c.misses++
		}
	}
	c.hits = -c.misses
	for i := range l.slots {
		if l.slots[i].memo != nil {
			c.hits++
		}
	}
}

// backendChanges lists the backend objects of in that the last translation
// did not have. It fails (false) when an object was deleted or two are
// named alike: telling those apart costs what a full translation does.
func (l *lastRun) backendChanges(in *Input) ([]backendChange, bool) {
	var changes []backendChange
	hits := 0
	ix := l.t.look.ix
	changes = newObjects(changes, &hits, kindService, in.Services, l.services,
		func(o *corev1.Service) *corev1.Service { return ix.services[nn(o.Namespace, o.Name)] })
	changes = newObjects(changes, &hits, v1alpha1.KindExternalBackend, in.ExternalBackends, l.externals,
		func(o *v1alpha1.ExternalBackend) *v1alpha1.ExternalBackend {
			return ix.external[nn(o.Namespace, o.Name)]
		})
	changes = newObjects(changes, &hits, kindEndpointSlice, in.EndpointSlices, l.slices, ix.sliceNamed)
	if len(changes) > 64 {
		return nil, false
	}
	replaced := 0
	for i, ch := range changes {
		if ch.old == nil {
			continue
		}
		// The predecessor must still be the object it was: one edited in
		// place since has lost what it said then.
		if !l.kept(ch.kind, ch.old) {
			return nil, false
		}
		replaced++
		for _, other := range changes[:i] {
			if other.old != nil && anyKey(other.old) == anyKey(ch.old) {
				return nil, false // two objects claim one predecessor
			}
		}
	}
	// Every object the last translation had is either still here or
	// replaced: none deleted. (A replaced one still listed would be a
	// second object of that name: checked below.)
	if hits+replaced != len(l.services)+len(l.slices)+len(l.externals) {
		return nil, false
	}
	for _, ch := range changes {
		if ch.old != nil && listed(in, ch.kind, anyKey(ch.old)) {
			return nil, false
		}
	}
	// Services and ExternalBackends are looked up by name: two of one name
	// would make the result depend on the order of the lists.
	for i, ch := range changes {
		for _, other := range changes[:i] {
			if ch.kind != kindEndpointSlice && ch.kind == other.kind && objName(ch.obj) == objName(other.obj) {
				return nil, false
			}
		}
	}
	return changes, true
}

// newObjects appends to changes the objects whose keys are not in seen
// (or have no resourceVersion), each with the object of its name it
// replaces (from before), and counts the others.
func newObjects[T any, P interface {
	*T
	metav1.Object
}](changes []backendChange, hits *int, kind string, objs []P, seen keySet, before func(P) P) []backendChange {
	for _, o := range objs {
		if seen.holds(o.GetUID(), o.GetResourceVersion()) {
			*hits++
			continue
		}
		ch := backendChange{kind: kind, obj: o}
		if old := before(o); old != nil {
			ch.old = old // not a typed nil: "no predecessor" is a nil any
		}
		changes = append(changes, ch)
	}
	return changes
}

// listed reports whether an object of key k, of the given kind, is in
// in's lists.
func listed(in *Input, kind string, k objKey) bool {
	switch kind {
	case kindService:
		return slices.ContainsFunc(in.Services, hasKey[*corev1.Service](k))
	case v1alpha1.KindExternalBackend:
		return slices.ContainsFunc(in.ExternalBackends, hasKey[*v1alpha1.ExternalBackend](k))
	default:
		return slices.ContainsFunc(in.EndpointSlices, hasKey[*discoveryv1.EndpointSlice](k))
	}
}

// hasKey returns a test for objects of key k; names are compared first,
// as most objects differ in them.
func hasKey[P metav1.Object](k objKey) func(P) bool {
	return func(o P) bool { return o.GetName() == k.name && o.GetNamespace() == k.namespace && keyOf(o) == k }
}

// kept reports whether a backend object of the last translation still
// has a key the translation was made from: it was not edited in place.
func (l *lastRun) kept(kind string, old any) bool {
	set := l.slices
	switch kind {
	case kindService:
		set = l.services
	case v1alpha1.KindExternalBackend:
		set = l.externals
	}
	return set.has(anyKey(old))
}

func objName(o any) types.NamespacedName {
	switch o := o.(type) {
	case *corev1.Service:
		return nn(o.Namespace, o.Name)
	case *v1alpha1.ExternalBackend:
		return nn(o.Namespace, o.Name)
	case *discoveryv1.EndpointSlice:
		return nn(o.Namespace, o.Name)
	}
	return types.NamespacedName{}
}

// kindEndpointSlice tags a backendChange; routes depend on a Service or a
// ServiceImport, which the slice's labels name.
const kindEndpointSlice = "EndpointSlice"

// depKeys lists the backends (as routes record them in backendDep) that a
// change affects: a slice affects the Service and the ServiceImport its
// labels name, before and after.
func (ch *backendChange) depKeys() []backendDep {
	switch o := ch.obj.(type) {
	case *corev1.Service:
		return []backendDep{{backendKey: backendKey{kind: kindService, namespace: o.Namespace, name: o.Name}}}
	case *v1alpha1.ExternalBackend:
		return []backendDep{{backendKey: backendKey{kind: v1alpha1.KindExternalBackend, namespace: o.Namespace, name: o.Name}}}
	}
	var keys []backendDep
	for _, s := range []*discoveryv1.EndpointSlice{ch.obj.(*discoveryv1.EndpointSlice), asSlice(ch.old)} {
		if s == nil {
			continue
		}
		if svc := s.Labels[labelServiceName]; svc != "" {
			keys = append(keys, backendDep{backendKey: backendKey{kind: kindService, namespace: s.Namespace, name: svc}})
		}
		if svc := s.Labels[labelMCSService]; svc != "" {
			keys = append(keys, backendDep{backendKey: backendKey{kind: kindServiceImport, namespace: s.Namespace, name: svc}})
		}
	}
	return keys
}

func asSlice(o any) *discoveryv1.EndpointSlice {
	s, _ := o.(*discoveryv1.EndpointSlice)
	return s
}

// affected returns the slots (indexes) of routes to translate again, in
// translation order: those edited and those that resolved through a
// changed backend. A route with no parent of ours (no memo) has nothing
// to translate.
func (l *lastRun) affected(changes []backendChange, edits []routeChange) []int {
	var keys []backendDep
	for i := range changes {
		keys = append(keys, changes[i].depKeys()...)
	}
	var out []int
	for i := range l.slots {
		m := l.slots[i].memo
		if m == nil {
			continue
		}
		if slices.ContainsFunc(edits, func(e routeChange) bool { return e.slot == i }) {
			out = append(out, i)
			continue
		}
	deps:
		for _, d := range m.reads.backends {
			for _, k := range keys {
				if d.name == k.name && d.namespace == k.namespace && d.kind == k.kind {
					out = append(out, i)
					break deps
				}
			}
		}
	}
	return out
}

// apply updates the index with changed backends. Slice lists are copied
// before a change: route memos hold them to compare against.
func (ix *index) apply(changes []backendChange) {
	for _, ch := range changes {
		switch o := ch.obj.(type) {
		case *corev1.Service:
			ix.services[nn(o.Namespace, o.Name)] = o
		case *v1alpha1.ExternalBackend:
			ix.external[nn(o.Namespace, o.Name)] = o
		case *discoveryv1.EndpointSlice:
			old := asSlice(ch.old)
			replaceSlice(ix.slices, labelServiceName, old, o)
			replaceSlice(ix.mcsSlices, labelMCSService, old, o)
		}
	}
}

func replaceSlice(by map[types.NamespacedName][]*discoveryv1.EndpointSlice, label string, old, now *discoveryv1.EndpointSlice) {
	if old != nil {
		if svc := old.Labels[label]; svc != "" {
			k := nn(old.Namespace, svc)
			by[k] = slices.DeleteFunc(slices.Clone(by[k]), func(s *discoveryv1.EndpointSlice) bool { return s == old })
			if len(by[k]) == 0 {
				delete(by, k)
			}
		}
	}
	if svc := now.Labels[label]; svc != "" {
		k := nn(now.Namespace, svc)
		by[k] = append(slices.Clip(by[k]), now)
	}
}

// sliceNamed returns the indexed slice with o's namespace and name, found
// through o's labels (a slice that moved to another Service is not found,
// and counts as deleted and added).
func (ix *index) sliceNamed(o *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	find := func(by map[types.NamespacedName][]*discoveryv1.EndpointSlice, label string) *discoveryv1.EndpointSlice {
		svc := o.Labels[label]
		if svc == "" {
			return nil
		}
		for _, s := range by[nn(o.Namespace, svc)] {
			if s.Name == o.Name {
				return s
			}
		}
		return nil
	}
	if s := find(ix.slices, labelServiceName); s != nil {
		return s
	}
	return find(ix.mcsSlices, labelMCSService)
}

func (l *lastRun) setsApply(changes []backendChange) {
	for _, ch := range changes {
		switch o := ch.obj.(type) {
		case *corev1.Service:
			if old, _ := ch.old.(*corev1.Service); old != nil {
				l.services.remove(keyOf(old))
			}
			l.services.add(keyOf(o))
		case *v1alpha1.ExternalBackend:
			if old, _ := ch.old.(*v1alpha1.ExternalBackend); old != nil {
				l.externals.remove(keyOf(old))
			}
			l.externals.add(keyOf(o))
		case *discoveryv1.EndpointSlice:
			if old := asSlice(ch.old); old != nil {
				l.slices.remove(keyOf(old))
			}
			l.slices.add(keyOf(o))
		}
	}
}

// sameClusterNamesInOrder reports whether two lists of clusters name the
// same clusters in the same order (their settings may differ): a patched
// route must use the clusters its last translation did, since the config's
// cluster list is the last one's with those clusters replaced.
func sameClusterNamesInOrder(a, b []proxycfg.Cluster) bool {
	return slices.EqualFunc(a, b, func(x, y proxycfg.Cluster) bool { return x.Name == y.Name })
}

func addressesEqual(a, b []gwv1.GatewayStatusAddress) bool {
	return slices.EqualFunc(a, b, func(x, y gwv1.GatewayStatusAddress) bool {
		return x.Value == y.Value && ptrEq(x.Type, y.Type) && ptrEq(x.Routability, y.Routability)
	})
}

// cloneMap copies a map of statuses; maps.Clone copies the table
// whole, several times faster than inserting each entry.
func cloneMap[V any](m map[types.NamespacedName]V) map[types.NamespacedName]V {
	return maps.Clone(m)
}

// insertRoutes puts routes in the config's at index at.
func (op *outputPatch) insertRoutes(at int, routes []proxycfg.Route) {
	if len(routes) == 0 {
		return
	}
	cfg := &op.out.Config
	if !op.routesCopied {
		cfg.Routes, op.routesCopied = slices.Concat(cfg.Routes[:at], routes, cfg.Routes[at:]), true
		return
	}
	cfg.Routes = slices.Insert(cfg.Routes, at, routes...)
}

// removeRoutes takes n routes out of the config's from index at.
func (op *outputPatch) removeRoutes(at, n int) {
	if n == 0 {
		return
	}
	cfg := &op.out.Config
	if !op.routesCopied {
		cfg.Routes, op.routesCopied = without(cfg.Routes, at, n), true
		return
	}
	cfg.Routes = slices.Delete(cfg.Routes, at, at+n)
}

// insertCluster puts a cluster in the config's at index at.
func (op *outputPatch) insertCluster(at int, c proxycfg.Cluster) {
	cfg := &op.out.Config
	if !op.clustersCopied {
		cfg.Clusters, op.clustersCopied = slices.Concat(cfg.Clusters[:at], []proxycfg.Cluster{c}, cfg.Clusters[at:]), true
	} else {
		cfg.Clusters = slices.Insert(cfg.Clusters, at, c)
	}
	op.clusterAt = nil
}

// removeCluster takes the config's cluster at index at out.
func (op *outputPatch) removeCluster(at int) {
	cfg := &op.out.Config
	if !op.clustersCopied {
		cfg.Clusters, op.clustersCopied = without(cfg.Clusters, at, 1), true
	} else {
		cfg.Clusters = slices.Delete(cfg.Clusters, at, at+1)
	}
	op.clusterAt = nil
}

// attachedRoutes puts a listener's attachedRoutes count in the status of
// its Gateway or ListenerSet. It fails (false) when that status does not
// list the listener where the translation put it.
func (op *outputPatch) attachedRoutes(li *listenerInfo) bool {
	out := op.out
	if li.set == nil {
		st := cowStatus(&out.Gateways, &op.gatewaysCopied, &out.touchedGateways, li.gw.key,
			func(s *gwv1.GatewayStatus) *gwv1.GatewayStatus {
				c := *s
				c.Listeners = slices.Clone(s.Listeners)
				return &c
			})
		i := slices.Index(li.gw.own, li)
		if st == nil || i < 0 || i >= len(st.Listeners) || string(st.Listeners[i].Name) != li.name {
			return false
		}
		st.Listeners[i].AttachedRoutes = li.attached
		return true
	}
	st := cowStatus(&out.ListenerSets, &op.setsCopied, &out.touchedSets, li.set.key,
		func(s *gwv1.ListenerSetStatus) *gwv1.ListenerSetStatus {
			c := *s
			c.Listeners = slices.Clone(s.Listeners)
			return &c
		})
	i := slices.Index(li.set.listeners, li)
	if st == nil || i < 0 || i >= len(st.Listeners) || string(st.Listeners[i].Name) != li.name {
		return false
	}
	st.Listeners[i].AttachedRoutes = li.attached
	return true
}

// cowStatus returns the output's status of key, copied (with copy) the
// first time the patch changes it; nil when there is none.
func cowStatus[S any](m *map[types.NamespacedName]*S, copied *bool, touched *[]types.NamespacedName, key types.NamespacedName, copy func(*S) *S) *S {
	if !*copied {
		*m, *copied = maps.Clone(*m), true
	}
	st := (*m)[key]
	if st == nil {
		return nil
	}
	if !slices.Contains(*touched, key) {
		st = copy(st)
		(*m)[key] = st
		*touched = append(*touched, key)
	}
	return st
}

// hostname makes the output's entry for a public hostname what its uses
// say: gone when none is left, else its kinds and classes.
func (op *outputPatch) hostname(h string, uses []hostUse) {
	want := Hostname{Name: h}
	used := false
	for _, u := range uses {
		if u.n <= 0 {
			continue
		}
		used = true
		if u.grpc {
			want.GRPC = true
		} else {
			want.HTTP = true
		}
		if u.class != "" && !slices.Contains(want.Classes, u.class) {
			want.Classes = append(want.Classes, u.class)
		}
	}
	slices.Sort(want.Classes)
	out := op.out
	i, found := slices.BinarySearchFunc(out.Hostnames, h, func(e Hostname, h string) int { return strings.Compare(e.Name, h) })
	if !used && !found || found && reflect.DeepEqual(out.Hostnames[i], want) {
		return
	}
	if !op.hostnamesCopied {
		out.Hostnames, op.hostnamesCopied = slices.Clone(out.Hostnames), true
	}
	switch {
	case !used:
		out.Hostnames = slices.Delete(out.Hostnames, i, i+1)
	case found:
		out.Hostnames[i] = want
	default:
		out.Hostnames = slices.Insert(out.Hostnames, i, want)
	}
}

// without is a copy of list without its n elements from at on; never nil,
// as the lists of a full translation are not.
func without[T any](list []T, at, n int) []T {
	out := make([]T, 0, len(list)-n)
	return append(append(out, list[:at]...), list[at+n:]...)
}
