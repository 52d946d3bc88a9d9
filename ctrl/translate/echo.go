// This file implements status echoes: objects whose only change since the
// last translation is the status that translation gave them.

package translate

// A translation's output is written back as statuses: the controller
// replaces a Gateway's, a ListenerSet's and a GatewayClass's status with
// the one translate made (ctrl/controller's writeGateway), and the API
// server hands the object back with a new resourceVersion. By the
// contract (proxycfg's package doc) that is a changed object, and as the
// three kinds are in the epoch every route depends on, the next
// translation would be a full one. A route added or deleted changes its
// Gateway's attachedRoutes, so every patched add or delete would be
// followed by a full translation of every route.
//
// But an object that differs from the one last translated only in its
// resourceVersion and in a status equal to the one that translation
// output for it says nothing new: translating it gives that translation
// again (conditions keep their transition times, addresses and the
// tunnel's record are the ones it chose). So such an echo leaves the
// epoch the same. Anything more (its generation, spec or metadata moved,
// a status someone else wrote, an object come or gone) is a change.

import (
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// statusEcho reports whether e, in's epoch, differs from the last one
// only in objects that echo the last translation's statuses (see above).
func (c *Cache) statusEcho(in *Input, e *epoch) bool {
	l, last := c.last, &c.epoch
	if l == nil || l.out == nil || !l.patchable || e.unstamped || last.unstamped || last.objects == nil ||
		e.facts != last.facts || len(e.objects) != len(last.objects) || !e.sameStates(last) {
		return false
	}
	changed := map[types.UID]bool{}
	for uid, x := range e.objects {
		was, ok := last.objects[uid]
		if !ok || was.kind != x.kind {
			return false
		}
		if was.rv != x.rv {
			changed[uid] = true
		}
	}
	if len(changed) == 0 {
		return false // same() said why not
	}
	now := &in.Snapshot
	gateways, ok1 := echoed(changed, last, now.Gateways, func(g *gwv1.Gateway) bool {
		st := l.out.Gateways[types.NamespacedName{Namespace: g.Namespace, Name: g.Name}]
		return st != nil && equality.Semantic.DeepEqual(&g.Status, st)
	}, func(a, b *gwv1.Gateway) bool { return equality.Semantic.DeepEqual(&a.Spec, &b.Spec) })
	sets, ok2 := echoed(changed, last, now.ListenerSets, func(s *gwv1.ListenerSet) bool {
		st := l.out.ListenerSets[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}]
		return st != nil && equality.Semantic.DeepEqual(&s.Status, st)
	}, func(a, b *gwv1.ListenerSet) bool { return equality.Semantic.DeepEqual(&a.Spec, &b.Spec) })
	classes, ok3 := echoed(changed, last, now.GatewayClasses, func(gc *gwv1.GatewayClass) bool {
		res := l.out.GatewayClasses[gc.Name]
		return res != nil && equality.Semantic.DeepEqual(&gc.Status, &res.Status)
	}, func(a, b *gwv1.GatewayClass) bool { return equality.Semantic.DeepEqual(&a.Spec, &b.Spec) })
	// Every changed object must be one of these, and echo.
	return ok1 && ok2 && ok3 && gateways+sets+classes == len(changed)
}

// echoed counts the objects of now whose UID is in changed, and reports
// whether each echoes its version in the last epoch (last.parents): the
// same generation, metadata but for the resourceVersion, and spec
// (sameSpec), and a status that is the last output's (ours).
func echoed[P interface {
	*T
	metav1.Object
}, T any](changed map[types.UID]bool, last *epoch, now []P, ours func(P) bool, sameSpec func(a, b P) bool) (int, bool) {
	n := 0
	for _, o := range now {
		uid := o.GetUID()
		if !changed[uid] {
			continue
		}
		p, _ := last.parents[uid].(P)
		// The object kept must still be as the last epoch saw it: one
		// edited in place since (its resourceVersion moved) says nothing
		// of what it was.
		if p == nil || p == o || p.GetResourceVersion() != last.objects[uid].rv ||
			!sameMeta(p, o) || !sameSpec(p, o) || !ours(o) {
			return n, false
		}
		n++
	}
	return n, true
}

// sameMeta reports whether a and b have the same metadata but for their
// resourceVersions and managed fields (which a status write moves).
func sameMeta(a, b metav1.Object) bool {
	return a.GetGeneration() == b.GetGeneration() && a.GetNamespace() == b.GetNamespace() && a.GetName() == b.GetName() &&
		equality.Semantic.DeepEqual(a.GetLabels(), b.GetLabels()) &&
		equality.Semantic.DeepEqual(a.GetAnnotations(), b.GetAnnotations()) &&
		equality.Semantic.DeepEqual(a.GetFinalizers(), b.GetFinalizers()) &&
		equality.Semantic.DeepEqual(a.GetOwnerReferences(), b.GetOwnerReferences()) &&
		equality.Semantic.DeepEqual(a.GetDeletionTimestamp(), b.GetDeletionTimestamp())
}
