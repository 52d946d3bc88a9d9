// This file implements statuses kept on objects across reloads, as an API server keeps them.

package standalone

// On a cluster, translate finds the status it wrote last time on each
// object, and a condition whose status is unchanged keeps its
// lastTransitionTime. Files carry no status, so every condition of every
// translation would be new: it would take the clock (Input.Now), and a
// translation that reads the clock cannot be patched or reused next
// time (translate.Cache). So a reload keeps statuses as an API server
// would:
//
//   - carryStatus: an object parsed anew (its document changed) starts
//     with the status of the object of its kind and name in the last load,
//     as an update to an object's spec keeps its status;
//   - writeBack: after a translation, an object whose conditions came out
//     new (a route added, a condition's status changed) is replaced by a
//     copy carrying its new status, which the next translation reads.
//
// Statuses affect nothing served: the config (and its version) does not
// depend on them.

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// carryStatus gives to, an object not yet translated, the status of
// from, the object of its kind and name in the last load.
func carryStatus(from, to object) {
	switch t := to.(type) {
	case *gwv1.HTTPRoute:
		if f, ok := from.(*gwv1.HTTPRoute); ok {
			t.Status = f.Status
		}
	case *gwv1.GRPCRoute:
		if f, ok := from.(*gwv1.GRPCRoute); ok {
			t.Status = f.Status
		}
	case *gwv1.TCPRoute:
		if f, ok := from.(*gwv1.TCPRoute); ok {
			t.Status = f.Status
		}
	case *gwv1.TLSRoute:
		if f, ok := from.(*gwv1.TLSRoute); ok {
			t.Status = f.Status
		}
	case *gwv1.Gateway:
		if f, ok := from.(*gwv1.Gateway); ok {
			t.Status = f.Status
		}
	case *gwv1.GatewayClass:
		if f, ok := from.(*gwv1.GatewayClass); ok {
			t.Status = f.Status
		}
	case *gwv1.ListenerSet:
		if f, ok := from.(*gwv1.ListenerSet); ok {
			t.Status = f.Status
		}
	}
}

// withStatus returns a copy of o carrying its status in out, if out has
// conditions that o's status does not (by type and status), else nil.
func withStatus(o object, out *translate.Output) object {
	nn := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
	switch o := o.(type) {
	case *gwv1.HTTPRoute:
		return withParents(o, func(r *gwv1.HTTPRoute) *gwv1.RouteStatus { return &r.Status.RouteStatus }, out.HTTPRoutes[nn])
	case *gwv1.GRPCRoute:
		return withParents(o, func(r *gwv1.GRPCRoute) *gwv1.RouteStatus { return &r.Status.RouteStatus }, out.GRPCRoutes[nn])
	case *gwv1.TCPRoute:
		return withParents(o, func(r *gwv1.TCPRoute) *gwv1.RouteStatus { return &r.Status.RouteStatus }, out.TCPRoutes[nn])
	case *gwv1.TLSRoute:
		return withParents(o, func(r *gwv1.TLSRoute) *gwv1.RouteStatus { return &r.Status.RouteStatus }, out.TLSRoutes[nn])
	case *gwv1.Gateway:
		if st, ok := out.Gateways[nn]; ok && st != nil && !gatewayCarried(&o.Status, st) {
			c := *o
			c.Status = *st
			newVersion(&c, st)
			return &c
		}
	case *gwv1.GatewayClass:
		if r, ok := out.GatewayClasses[o.Name]; ok && r != nil && !carried(o.Status.Conditions, r.Status.Conditions) {
			c := *o
			c.Status = r.Status
			newVersion(&c, r.Status)
			return &c
		}
	case *gwv1.ListenerSet:
		if st, ok := out.ListenerSets[nn]; ok && st != nil && !listenerSetCarried(&o.Status, st) {
			c := *o
			c.Status = *st
			newVersion(&c, st)
			return &c
		}
	}
	return nil
}

// withParents is withStatus for a route o, whose status status finds:
// a copy carrying the parent statuses st, or nil when there are none or
// o carries them.
func withParents[R any, P interface {
	*R
	object
}](o P, status func(P) *gwv1.RouteStatus, st []gwv1.RouteParentStatus) object {
	if st == nil || parentsCarried(status(o).Parents, st) {
		return nil
	}
	c := P(new(R))
	*c = *o
	status(c).Parents = st
	newVersion(c, st)
	return c
}

// carried reports whether every condition in next has one of its type
// and status in prev: translating with prev, none takes the clock.
func carried(prev, next []metav1.Condition) bool {
	for _, n := range next {
		found := false
		for _, p := range prev {
			if p.Type == n.Type && p.Status == n.Status {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func parentsCarried(prev, next []gwv1.RouteParentStatus) bool {
	if len(prev) != len(next) {
		return false
	}
	if len(next) == 0 || &prev[0] == &next[0] {
		return true // the status written back last time, reused
	}
	for i := range next {
		if !carried(prev[i].Conditions, next[i].Conditions) || !translate.SameParentRef(&prev[i].ParentRef, &next[i].ParentRef) {
			return false
		}
	}
	return true
}

func gatewayCarried(prev, next *gwv1.GatewayStatus) bool {
	if !carried(prev.Conditions, next.Conditions) || len(prev.Listeners) != len(next.Listeners) {
		return false
	}
	for i := range next.Listeners {
		if prev.Listeners[i].Name != next.Listeners[i].Name || !carried(prev.Listeners[i].Conditions, next.Listeners[i].Conditions) {
			return false
		}
	}
	return true
}

func listenerSetCarried(prev, next *gwv1.ListenerSetStatus) bool {
	if !carried(prev.Conditions, next.Conditions) || len(prev.Listeners) != len(next.Listeners) {
		return false
	}
	for i := range next.Listeners {
		if prev.Listeners[i].Name != next.Listeners[i].Name || !carried(prev.Listeners[i].Conditions, next.Listeners[i].Conditions) {
			return false
		}
	}
	return true
}
