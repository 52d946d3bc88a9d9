// This file replaces, adds and deletes routes in the last translation.

package translate

import (
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// The next most common change is a route edited: a filter, a match, a
// backend's weight, or only its status (the controller's own write,
// coming back through the informer). How routes attach to listeners, and
// so how they affect each other (attachedRoutes, hostname conflicts,
// public hostnames), depends only on each route's kind, name, age,
// parentRefs and hostnames. When an edit leaves those as they were, the
// route is translated again on the last translation's graph, like a
// route whose backend changed, and patch copies the rest.
//
// A route added or deleted changes how others are served only through
// what they share: a listener's attachedRoutes, a public hostname, a
// cluster, an HTTPRoute/GRPCRoute conflict on a listener, a hostname
// claimed through two tunnels, an AccessPolicy's counts, a Gateway's own
// data plane. When it meets no conflict, no claim can be lost, no
// AccessPolicy names it or its Gateways, and no plane is about, a route
// added is attached to the last translation's graph and translated
// alone, and a route deleted is detached; patchRouteSet puts the results where a full translation
// would, keyed by route identity (kind, namespace, name) and age, which
// orders the routes. Anything else (parentRefs or hostnames edited, a
// rule renamed, added or removed while AccessPolicies count rules, a
// cluster whose place in the config would move) is left to the full
// translation.

// routeChange is a route object (and its key) that replaces the one of
// the same kind and name in a slot of the last translation.
type routeChange struct {
	slot int
	obj  any // *gwv1.HTTPRoute or *gwv1.GRPCRoute
	key  objKey
}

// routeName names a route of either kind.
type routeName struct{ kind, namespace, name string }

// routeDelta is how in's routes differ from the last translation's.
type routeDelta struct {
	edits   []routeChange
	adds    []any // route objects of names the last translation had not, in in's order
	deletes []int // slots whose route in does not have, ascending
}

// routeChanges tells how in's routes differ from the last translation's,
// by their keys (UID and resourceVersion): objects that replace the one
// of their kind and name (edits), of a kind and name it did not have
// (adds), and the slots of kinds and names in no longer has (deletes).
// It fails (false) when one replaced could attach differently
// (replaceable) or was edited in place since it was translated (its old
// content is gone), when an object is listed twice or beside the one it
// replaces, or when too much changed for a patch to pay.
func (l *lastRun) routeChanges(in *Input) (routeDelta, bool) {
	var d routeDelta
	claimed := make([]bool, len(l.slots))
	n := 0
	note := func(obj any, kind, namespace, name string) bool {
		_, meta := routeMeta(obj)
		if si, ok := l.slotOf.find(meta.UID, meta.ResourceVersion); ok {
			if claimed[si] {
				return false // listed twice
			}
			claimed[si] = true
			n++
			return true
		}
		if len(d.edits)+len(d.adds) >= 64 {
			return false // a full translation costs about the same
		}
		si, ok := l.slotNamed()[routeName{kind, namespace, name}]
		switch {
		case !ok:
			d.adds = append(d.adds, obj)
			return true
		case anyKey(l.slots[si].obj) != l.slots[si].key:
			return false // edited in place since it was translated: what it said then is gone
		case !replaceable(l.slots[si].obj, obj, l.t.accessByTarget != nil):
			return false
		}
		d.edits = append(d.edits, routeChange{slot: si, obj: obj, key: anyKey(obj)})
		return true
	}
	for _, r := range in.HTTPRoutes {
		if !note(r, kindHTTPRoute, r.Namespace, r.Name) {
			return d, false
		}
	}
	for _, r := range in.GRPCRoutes {
		if !note(r, kindGRPCRoute, r.Namespace, r.Name) {
			return d, false
		}
	}
	// Each slot is claimed once: by its own object (a hit) or by one that
	// replaces it. Two objects of one name, or a replaced object still
	// listed beside its successor, claim one twice.
	for _, ch := range d.edits {
		if claimed[ch.slot] {
			return d, false
		}
		claimed[ch.slot] = true
		n++
	}
	for i, a := range d.adds {
		ka, ma := routeMeta(a)
		for _, b := range d.adds[:i] {
			if kb, mb := routeMeta(b); ka == kb && ma.Namespace == mb.Namespace && ma.Name == mb.Name {
				return d, false // two new objects of one name
			}
		}
	}
	if n < len(l.slots) {
		if len(l.slots)-n > 64 {
			return d, false
		}
		for si, ok := range claimed {
			if !ok {
				d.deletes = append(d.deletes, si)
			}
		}
	}
	return d, true
}

// clockedCovered reports whether every route whose last translation took
// the clock is edited or deleted by rc: a patch may copy no translation
// that took the clock (a full one would take it again, at another time).
func (l *lastRun) clockedCovered(rc *routeDelta) bool {
	if l.clocked == 0 {
		return true
	}
	n := 0
	for _, e := range rc.edits {
		if l.slots[e.slot].clocked {
			n++
		}
	}
	for _, si := range rc.deletes {
		if l.slots[si].clocked {
			n++
		}
	}
	return n == l.clocked
}

// slotNamed maps each route of the last translation to its slot, by
// kind and name; made at its first use.
func (l *lastRun) slotNamed() map[routeName]int {
	if l.byName == nil {
		l.byName = make(map[routeName]int, len(l.slots))
		for i := range l.slots {
			kind, meta := routeMeta(l.slots[i].obj)
			l.byName[routeName{kind, meta.Namespace, meta.Name}] = i
		}
	}
	return l.byName
}

// replaceable reports whether route object now, replacing old, attaches
// as old did: same kind, identity and age, parentRefs and hostnames.
// When policies count rules (AccessPolicies), its rules must also keep
// their number and names.
func replaceable(old, now any, policies bool) bool {
	switch o := old.(type) {
	case *gwv1.HTTPRoute:
		n, ok := now.(*gwv1.HTTPRoute)
		return ok && sameAttachInputs(&o.ObjectMeta, &n.ObjectMeta, &o.Spec.CommonRouteSpec, &n.Spec.CommonRouteSpec, o.Spec.Hostnames, n.Spec.Hostnames) &&
			(!policies || slices.EqualFunc(o.Spec.Rules, n.Spec.Rules, func(a, b gwv1.HTTPRouteRule) bool { return ptrEq(a.Name, b.Name) }))
	case *gwv1.GRPCRoute:
		n, ok := now.(*gwv1.GRPCRoute)
		return ok && sameAttachInputs(&o.ObjectMeta, &n.ObjectMeta, &o.Spec.CommonRouteSpec, &n.Spec.CommonRouteSpec, o.Spec.Hostnames, n.Spec.Hostnames) &&
			(!policies || slices.EqualFunc(o.Spec.Rules, n.Spec.Rules, func(a, b gwv1.GRPCRouteRule) bool { return ptrEq(a.Name, b.Name) }))
	}
	return false
}

// sameAttachInputs compares what attach reads of a route (routeInfo:
// its name, age, parentRefs and hostnames).
func sameAttachInputs(a, b *metav1.ObjectMeta, ac, bc *gwv1.CommonRouteSpec, ah, bh []gwv1.Hostname) bool {
	return a.Namespace == b.Namespace && a.Name == b.Name && a.UID == b.UID && a.CreationTimestamp.Equal(&b.CreationTimestamp) &&
		slices.Equal(ah, bh) && reflect.DeepEqual(ac.ParentRefs, bc.ParentRefs)
}

// routeMeta is a route object's kind and metadata.
func routeMeta(obj any) (string, *metav1.ObjectMeta) {
	switch o := obj.(type) {
	case *gwv1.HTTPRoute:
		return kindHTTPRoute, &o.ObjectMeta
	case *gwv1.GRPCRoute:
		return kindGRPCRoute, &o.ObjectMeta
	}
	return "", &metav1.ObjectMeta{}
}

// replaceRoutes points the working state of each replaced route at its
// new object, which attaches as the old one did (routeChanges): its
// metadata (generation) and the statuses written on it. The slots keep
// their old objects until the patch is kept (keepPatch): if the patch
// gives up, the full translation must not find the old objects' memos
// under the new ones.
func (l *lastRun) replaceRoutes(changes []routeChange) {
	for _, ch := range changes {
		info := l.slots[ch.slot].info
		switch o := ch.obj.(type) {
		case *gwv1.HTTPRoute:
			info.meta, info.parentRefs, info.hostnames, info.prev = &o.ObjectMeta, o.Spec.ParentRefs, o.Spec.Hostnames, o.Status.Parents
		case *gwv1.GRPCRoute:
			info.meta, info.parentRefs, info.hostnames, info.prev = &o.ObjectMeta, o.Spec.ParentRefs, o.Spec.Hostnames, o.Status.Parents
		}
	}
}

// routeSetPatchable reports whether routes may be added or deleted by a
// patch: no AccessPolicy counts routes or rules, no Gateway is served by
// a data plane of its own (planes publish hostnames of their own), no
// LoadBalancingPolicy looks for the routes publishing its hostname
// (loadbalancingpolicy.go), no DNSPolicy covers the hostnames a route
// publishes (dnspolicy.go), and hostnames are claimed through one tunnel
// at most, so no route added or deleted can win or lose a claim
// (claims.go).
func (l *lastRun) routeSetPatchable() bool {
	t := l.t
	if len(l.out.Planes) > 0 || len(t.lbList) > 0 || len(t.dnsList) > 0 {
		return false
	}
	tunnel := ""
	for _, gi := range t.gatewayList {
		if gi.dedicated {
			return false
		}
		if gi.class == nil || gi.class.config == nil {
			continue
		}
		if dns := gi.class.config.Spec.DNS; dns == nil || !dns.Enabled {
			continue
		}
		if tunnel != "" && tunnel != gi.class.obj.Name {
			return false
		}
		tunnel = gi.class.obj.Name
	}
	return true
}

// accessNames reports whether an AccessPolicy names the route, a rule of
// it, or a Gateway it attaches to (whole or a listener): the policies'
// statuses count the rules they protect, and their applications take the
// hostnames (accessStatuses), which a patch does not redo. A route no
// policy names changes neither.
func (t *translator) accessNames(r *routeInfo) bool {
	for k := range t.accessByTarget {
		if k.kind == r.kind && k.namespace == r.meta.Namespace && k.name == r.meta.Name {
			return true
		}
		if k.kind != "Gateway" {
			continue
		}
		for _, pi := range r.parents {
			if pi.gw != nil && pi.gw.key.Namespace == k.namespace && pi.gw.key.Name == k.name {
				return true
			}
		}
	}
	return false
}

// patchRouteSet deletes and adds the routes rc names, in the last
// translation (made the patch's own by keepPatch) and in its output. It
// reports how many routes it translated, and fails (false) where a full
// translation could differ from what it did.
func (c *Cache) patchRouteSet(t *translator, op *outputPatch, rc *routeDelta) (added int, ok bool) {
	if len(rc.adds)+len(rc.deletes) == 0 {
		return 0, true
	}
	l := c.last
	for i := len(rc.deletes) - 1; i >= 0; i-- { // from the last: slots after one deleted move
		if !c.deleteRoute(op, rc.deletes[i]) {
			return 0, false
		}
	}
	for _, obj := range rc.adds {
		translated, ok := l.addRoute(t, op, obj)
		if !ok {
			return 0, false
		}
		if translated {
			added++
		}
	}
	// The attachments of the routes added came from the patch's
	// translator: the next patch must not hand them out again.
	l.t.parents, l.t.attachmentSlab = t.parents, t.attachmentSlab
	return added, true
}

// deleteRoute takes the route of slot si out of the last translation and
// of the output.
func (c *Cache) deleteRoute(op *outputPatch, si int) bool {
	l := c.last
	s := l.slots[si]
	n := 0
	if l.t.accessNames(s.info) {
		return false
	}
	if m := s.memo; m != nil {
		if m.reads.policies || !l.t.alone(s.info) || !l.dropClusters(op, si) {
			return false
		}
		n = len(m.routes)
		op.removeRoutes(s.first, n)
		op.setStatuses(s.info, nil)
		if m.counted && !l.count(op, s.info, -1) {
			return false
		}
	}
	l.t.detach(s.info)
	if s.clocked {
		l.clocked--
	}
	l.removeSlot(si, n)
	c.forgetRules()
	return true
}

// addRoute attaches a route object new to the last translation to its
// graph, translates it, and puts it in the last translation and the
// output where a full translation would: routes are ordered by age. It
// reports whether the route was translated (a parent of it is ours).
func (l *lastRun) addRoute(t *translator, op *outputPatch, obj any) (translated, ok bool) {
	r := newRouteInfo(obj)
	p, _ := slices.BinarySearchFunc(l.slots, r.meta, func(s routeSlot, meta *metav1.ObjectMeta) int {
		if c := compareAge(s.info.meta, meta); c != 0 {
			return c
		}
		return -1 // a tie (an HTTPRoute and a GRPCRoute alike): after it, checked below
	})
	if p > 0 && compareAge(l.slots[p-1].info.meta, r.meta) == 0 {
		return false, false // the full translation's order of the two is not certain
	}
	t.attach(r)
	t.orderAttachments(r)
	if t.accessNames(r) {
		return false, false
	}
	slot := routeSlot{obj: obj, key: anyKey(obj), info: r}
	if len(r.parents) > 0 {
		if !t.alone(r) {
			return false, false
		}
		http, _ := obj.(*gwv1.HTTPRoute)
		grpc, _ := obj.(*gwv1.GRPCRoute)
		events := len(t.out.Events)
		m := t.translateRoute(r, http, grpc)
		if m.reads.policies || len(t.out.Events) != events || !l.insertClusters(op, p, m) {
			return false, false
		}
		slot.memo, slot.clocked = m, m.noMemo // no events: the clock
		slot.first = l.routesAt(p, len(op.out.Config.Routes))
		op.insertRoutes(slot.first, m.routes)
		op.setStatuses(r, m.statuses)
		if m.counted && !l.count(op, r, 1) {
			return false, false
		}
	}
	l.insertSlot(p, slot)
	if slot.clocked {
		l.clocked++
	}
	return slot.memo != nil, true
}

// newRouteInfo is a route object's working state before it attaches, as
// translator.routes makes it.
func newRouteInfo(obj any) *routeInfo {
	switch o := obj.(type) {
	case *gwv1.HTTPRoute:
		return &routeInfo{kind: kindHTTPRoute, meta: &o.ObjectMeta, parentRefs: o.Spec.ParentRefs, hostnames: o.Spec.Hostnames, prev: o.Status.Parents}
	case *gwv1.GRPCRoute:
		return &routeInfo{kind: kindGRPCRoute, meta: &o.ObjectMeta, parentRefs: o.Spec.ParentRefs, hostnames: o.Spec.Hostnames, prev: o.Status.Parents}
	}
	panic("not a route")
}

// alone reports whether a route's attachments meet no other route's in a
// way that settles anything between them: no HTTPRoute/GRPCRoute
// conflict on a listener (kindConflicts), no hostname claim lost.
func (t *translator) alone(r *routeInfo) bool {
	for _, pi := range r.parents {
		for _, a := range pi.attachments {
			if a.lostTo != "" || len(a.lost) > 0 {
				return false
			}
			for _, b := range t.attachments[a.listener] {
				if b.route != r && b.route.kind != r.kind && hostsOverlap(a.hosts, b.hosts) {
					return false
				}
			}
		}
	}
	return true
}

// orderAttachments moves a route's attachments, which attach appended,
// to where the listeners' lists keep them: oldest route first.
func (t *translator) orderAttachments(r *routeInfo) {
	for _, pi := range r.parents {
		for _, a := range pi.attachments {
			list := t.attachments[a.listener]
			if list[len(list)-1] != a {
				continue // moved already, with an earlier one of the route's
			}
			var mine []*attachment
			list = slices.DeleteFunc(list, func(b *attachment) bool {
				if b.route == r {
					mine = append(mine, b)
					return true
				}
				return false
			})
			i := slices.IndexFunc(list, func(b *attachment) bool { return compareAge(b.route.meta, r.meta) > 0 })
			if i < 0 {
				i = len(list)
			}
			t.attachments[a.listener] = slices.Insert(list, i, mine...)
		}
	}
}

// detach takes a route's attachments out of its listeners' lists.
func (t *translator) detach(r *routeInfo) {
	for _, pi := range r.parents {
		for _, a := range pi.attachments {
			if list, ok := t.attachments[a.listener]; ok {
				t.attachments[a.listener] = slices.DeleteFunc(list, func(b *attachment) bool { return b.route == r })
			}
		}
	}
}

// count adds delta to the attachedRoutes of every listener that counts a
// route (once per listener), and to the uses of the public hostnames it
// publishes, as countAttached does, and puts the results in the output.
func (l *lastRun) count(op *outputPatch, r *routeInfo, delta int32) bool {
	var buf [4]*listenerInfo
	counted := buf[:0]
	uses := l.hostUsesMade()
	for _, pi := range r.parents {
		if !pi.accepted() {
			continue
		}
		for _, li := range pi.counts {
			if !slices.Contains(counted, li) {
				counted = append(counted, li)
				li.attached += delta
				if !op.attachedRoutes(li) {
					return false
				}
			}
		}
	}
	var hosts []string
	useHosts(r, func(h, class string, grpc bool) {
		addHostUse(uses, h, class, grpc, int(delta))
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	})
	for _, h := range hosts {
		op.hostname(h, uses[h])
	}
	return true
}

// hostUse is how many counted routes publish a hostname through a class
// ("" for none) for one kind of route.
type hostUse struct {
	class string
	grpc  bool
	n     int
}

// useHosts calls use for each public hostname a route publishes: those
// its accepted parents' attachments hold (noteHostnames, without planes:
// routeSetPatchable). leftOf reads a route's hostnames the same way.
func useHosts(r *routeInfo, use func(h, class string, grpc bool)) {
	for _, pi := range r.parents {
		if !pi.accepted() {
			continue
		}
		for _, a := range pi.attachments {
			if a.lostTo != "" {
				continue
			}
			class := ""
			if gi := a.listener.gw; gi != nil && gi.class != nil {
				class = gi.class.obj.Name
			}
			for _, h := range a.held() {
				use(h, class, r.kind == kindGRPCRoute)
			}
		}
	}
}

func addHostUse(uses map[string][]hostUse, h, class string, grpc bool, delta int) {
	list := uses[h]
	for i := range list {
		if list[i].class == class && list[i].grpc == grpc {
			list[i].n += delta
			return
		}
	}
	uses[h] = append(list, hostUse{class: class, grpc: grpc, n: delta})
}

// hostUsesMade returns the hostname uses of the last translation's
// counted routes, counting them at the first call.
func (l *lastRun) hostUsesMade() map[string][]hostUse {
	if l.hostUses == nil {
		l.hostUses = map[string][]hostUse{}
		for i := range l.slots {
			if m := l.slots[i].memo; m != nil && m.counted {
				useHosts(l.slots[i].info, func(h, class string, grpc bool) { addHostUse(l.hostUses, h, class, grpc, 1) })
			}
		}
	}
	return l.hostUses
}

// routesAt is where the data-plane routes of a route put in slot p start:
// where those of the next route that has any do, else at the end (n).
func (l *lastRun) routesAt(p, n int) int {
	for j := p; j < len(l.slots); j++ {
		if l.slots[j].memo != nil {
			return l.slots[j].first
		}
	}
	return n
}

// insertSlot puts a route in slot p, moving the later ones.
func (l *lastRun) insertSlot(p int, s routeSlot) {
	_, dup := l.slotOf[s.key.uid]
	l.slots = slices.Insert(l.slots, p, s)
	n := 0
	if s.memo != nil {
		n = len(s.memo.routes)
	}
	l.renumber(p, n)
	if dup { // another route has its UID: neither has a slot (slotIndex)
		l.slotOf[s.key.uid] = slotStamp{-1, s.key.rv}
	}
}

// removeSlot takes the route of slot si out, with its n data-plane
// routes, moving the later ones.
func (l *lastRun) removeSlot(si, n int) {
	s := l.slots[si]
	if st, ok := l.slotOf[s.key.uid]; ok && st.slot == si {
		delete(l.slotOf, s.key.uid)
	}
	if l.byName != nil {
		kind, meta := routeMeta(s.obj)
		delete(l.byName, routeName{kind, meta.Namespace, meta.Name})
	}
	l.slots = slices.Delete(l.slots, si, si+1)
	l.renumber(si, -n)
}

// renumber indexes the slots from p on anew, and moves their data-plane
// routes by delta.
func (l *lastRun) renumber(p, delta int) {
	for j := p; j < len(l.slots); j++ {
		s := &l.slots[j]
		if s.memo != nil && (j > p || delta < 0) {
			s.first += delta
		}
		if st, ok := l.slotOf[s.key.uid]; !ok || st.slot >= 0 { // not two routes' UID
			l.slotOf[s.key.uid] = slotStamp{j, s.key.rv}
		}
		if l.byName != nil {
			kind, meta := routeMeta(s.obj)
			l.byName[routeName{kind, meta.Namespace, meta.Name}] = j
		}
	}
}

// usesCluster reports whether data-plane routes send to a cluster, as
// assembleConfig counts it.
func usesCluster(routes []proxycfg.Route, name string) bool {
	for i := range routes {
		for j := range routes[i].Rules {
			for c := range routes[i].Rules[j].Clusters {
				if c == name {
					return true
				}
			}
		}
	}
	return false
}

func metCluster(m *routeMemo, name string) bool {
	for i := range m.clusters {
		if m.clusters[i].Name == name {
			return true
		}
	}
	return false
}

// dropClusters takes out of the config the clusters only the route of
// slot si used. The config lists clusters in the order routes first met
// them: a cluster another route uses that this one met first moves to
// where the next route to meet it puts it. It fails (false) when more
// than one would move.
func (l *lastRun) dropClusters(op *outputPatch, si int) bool {
	moved := ""
	for _, cl := range l.slots[si].memo.clusters {
		at, ok := op.clusterIndex(cl.Name)
		if !ok {
			continue
		}
		first, used := -1, false
		for j := range l.slots {
			m := l.slots[j].memo
			if j == si || m == nil || !metCluster(m, cl.Name) {
				continue
			}
			if first < 0 {
				first = j
			}
			if usesCluster(m.routes, cl.Name) {
				used = true
				break
			}
		}
		switch {
		case !used:
			op.removeCluster(at)
		case first > si && moved != "":
			return false
		case first > si:
			moved = cl.Name
		}
	}
	if moved != "" {
		l.moveCluster(op, moved, si)
	}
	return true
}

// moveCluster puts the config's cluster of that name where the routes
// but the one of slot si first meet it: after the config's clusters
// they meet before.
func (l *lastRun) moveCluster(op *outputPatch, name string, si int) {
	at, _ := op.clusterIndex(name)
	c := op.out.Config.Clusters[at]
	op.removeCluster(at)
	seen := map[string]bool{}
	n := 0
	for j := range l.slots {
		m := l.slots[j].memo
		if j == si || m == nil {
			continue
		}
		for k := range m.clusters {
			met := m.clusters[k].Name
			if met == name {
				op.insertCluster(n, c)
				return
			}
			if !seen[met] {
				seen[met] = true
				if _, ok := op.clusterIndex(met); ok {
					n++
				}
			}
		}
	}
	op.insertCluster(n, c) // not reached: a route uses it
}

// insertClusters puts in the config the clusters a route added in slot p
// uses that it does not hold, where a full translation would: after
// those that routes before it met first. It fails (false) when a cluster
// the config holds would move (the route is the first to meet it now)
// or differs from the route's.
func (l *lastRun) insertClusters(op *outputPatch, p int, m *routeMemo) bool {
	var before map[string]bool
	metBefore := func() map[string]bool {
		if before == nil {
			before = map[string]bool{}
			for j := range p {
				if o := l.slots[j].memo; o != nil {
					for k := range o.clusters {
						before[o.clusters[k].Name] = true
					}
				}
			}
		}
		return before
	}
	at := -1
	for k := range m.clusters {
		cl := &m.clusters[k]
		if i, ok := op.clusterIndex(cl.Name); ok {
			if !reflect.DeepEqual(&op.out.Config.Clusters[i], cl) || p < len(l.slots) && !metBefore()[cl.Name] {
				return false
			}
			continue
		}
		if !usesCluster(m.routes, cl.Name) {
			continue
		}
		if metBefore()[cl.Name] {
			return false // an earlier route met it unused: its place is that route's
		}
		if at < 0 {
			at = len(op.out.Config.Clusters)
			if p < len(l.slots) {
				at = 0
				for i := range op.out.Config.Clusters {
					if before[op.out.Config.Clusters[i].Name] {
						at++
					}
				}
			}
		}
		op.insertCluster(at, *cl)
		at++
	}
	return true
}
