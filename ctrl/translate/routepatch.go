// This file replaces changed routes in the last translation.

package translate

import (
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The next most common change is a route edited: a filter, a match, a
// backend's weight, or only its status (the controller's own write,
// coming back through the informer). How routes attach to listeners, and
// so how they affect each other (attachedRoutes, hostname conflicts,
// public hostnames), depends only on each route's kind, name, age,
// parentRefs and hostnames. When an edit leaves those as they were, the
// route is translated again on the last translation's graph, like a
// route whose backend changed, and patch copies the rest. Anything else
// (a route added or deleted, parentRefs or hostnames edited, a rule
// renamed, added or removed while AccessPolicies count rules) is left to
// the full translation.

// routeChange is a route object (and its key) that replaces the one of
// the same kind and name in a slot of the last translation.
type routeChange struct {
	slot int
	obj  any // *gwv1.HTTPRoute or *gwv1.GRPCRoute
	key  objKey
}

// routeName names a route of either kind.
type routeName struct{ kind, namespace, name string }

// routeChanges lists the route objects of in whose keys the last
// translation did not have, each with the slot of the object it
// replaces. It fails (false) when a route was added or deleted, when one
// replaced could attach differently (replaceable), or when the object it
// replaces was edited in place since (its old content is gone).
func (l *lastRun) routeChanges(in *Input) ([]routeChange, bool) {
	if len(in.HTTPRoutes)+len(in.GRPCRoutes) != len(l.slots) {
		return nil, false
	}
	var changes []routeChange
	hits := 0
	note := func(obj any, kind, namespace, name string) bool {
		_, meta := routeMeta(obj)
		if _, ok := l.slotOf.find(meta.UID, meta.ResourceVersion); ok {
			hits++
			return true
		}
		if len(changes) >= 64 {
			return false // a full translation costs about the same
		}
		si, ok := l.slotNamed()[routeName{kind, namespace, name}]
		if !ok || anyKey(l.slots[si].obj) != l.slots[si].key || !replaceable(l.slots[si].obj, obj, l.t.accessByTarget != nil) {
			return false
		}
		changes = append(changes, routeChange{slot: si, obj: obj, key: anyKey(obj)})
		return true
	}
	for _, r := range in.HTTPRoutes {
		if !note(r, kindHTTPRoute, r.Namespace, r.Name) {
			return nil, false
		}
	}
	for _, r := range in.GRPCRoutes {
		if !note(r, kindGRPCRoute, r.Namespace, r.Name) {
			return nil, false
		}
	}
	// Each slot is claimed once: by its own object (a hit) or by one that
	// replaces it. Two objects of one name, or a replaced object still
	// listed beside its successor, leave a slot unclaimed.
	for i, ch := range changes {
		for _, other := range changes[:i] {
			if other.slot == ch.slot {
				return nil, false
			}
		}
		if listedRoute(in, l.slots[ch.slot].key) {
			return nil, false
		}
	}
	return changes, hits+len(changes) == len(l.slots)
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

// listedRoute reports whether a route of key k is among in's routes.
func listedRoute(in *Input, k objKey) bool {
	return slices.ContainsFunc(in.HTTPRoutes, hasKey[*gwv1.HTTPRoute](k)) || slices.ContainsFunc(in.GRPCRoutes, hasKey[*gwv1.GRPCRoute](k))
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
