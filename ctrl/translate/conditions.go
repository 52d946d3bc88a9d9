// This file builds an object's conditions, and a policy's ancestor statuses.

package translate

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// conds builds one object's conditions. A condition whose status and
// reason match the object's current one keeps its lastTransitionTime, so a
// resync that changes nothing writes nothing.
type conds struct {
	prev       []metav1.Condition
	generation int64
	now        metav1.Time
	list       []metav1.Condition
	// Bit i of took is set when list[i] took now as its transition time
	// (an object has a handful of conditions). A condition may be set
	// twice (a listener found valid, then in conflict); the last time
	// counts.
	took uint64
	// clock counts, across a translation, the conditions that took now.
	clock *int
}

func (t *translator) newConds(prev []metav1.Condition, generation int64) conds {
	return conds{prev: prev, generation: generation, now: t.now, clock: &t.clockUses,
		list: make([]metav1.Condition, 0, 4)}
}

// fresh reports whether a condition took now as its transition time.
func (c *conds) fresh() bool { return c.took != 0 }

// set adds or replaces the condition of type typ.
func (c *conds) set(typ string, ok bool, reason, msg string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	c.setStatus(typ, status, reason, msg)
}

func (c *conds) setStatus(typ string, status metav1.ConditionStatus, reason, msg string) {
	nc := metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		Message:            msg,
		ObservedGeneration: c.generation,
		LastTransitionTime: c.now,
	}
	carried := false
	for i := range c.prev {
		if p := &c.prev[i]; p.Type == typ && p.Status == status {
			nc.LastTransitionTime = p.LastTransitionTime
			carried = true
			break
		}
	}
	i := 0
	for i < len(c.list) && c.list[i].Type != typ {
		i++
	}
	if i == len(c.list) {
		c.list = append(c.list, nc)
	} else {
		c.list[i] = nc
	}
	bit := uint64(1) << (i % 64)
	if c.took&bit != 0 {
		*c.clock--
	}
	c.took &^= bit
	if !carried {
		c.took |= bit
		*c.clock++
	}
}

// setAnew is setStatus for a condition whose meaning changed though its
// status did not: it takes now as its transition time.
func (c *conds) setAnew(typ string, status metav1.ConditionStatus, reason, msg string) {
	prev := c.prev
	c.prev = slices.DeleteFunc(slices.Clone(prev), func(p metav1.Condition) bool { return p.Type == typ })
	c.setStatus(typ, status, reason, msg)
	c.prev = prev
}

// get returns the condition of type typ, if set.
// keep sets the condition of type typ as the previous status had it, if
// it had one: for a condition whose source says nothing new.
func (c *conds) keep(typ string) {
	if p := findCond(c.prev, typ); p != nil {
		c.setStatus(p.Type, p.Status, p.Reason, p.Message)
	}
}

func (c *conds) get(typ string) *metav1.Condition {
	for i := range c.list {
		if c.list[i].Type == typ {
			return &c.list[i]
		}
	}
	return nil
}

// isTrue reports whether the condition of type typ is set and True.
func (c *conds) isTrue(typ string) bool {
	cd := c.get(typ)
	return cd != nil && cd.Status == metav1.ConditionTrue
}

// findCond returns the condition of type typ in a list, if present.
func findCond(list []metav1.Condition, typ string) *metav1.Condition {
	for i := range list {
		if list[i].Type == typ {
			return &list[i]
		}
	}
	return nil
}

// Condition types tunnelgate sets on Gateways, ListenerSets and listeners
// (besides its own, under tunnelgate.dev/). A condition of any other type
// on such an object is another controller's or a user's: it is kept as it
// is (foreign), as Gateway API v1.7's conformance suite checks.
var (
	gatewayConditionTypes = map[string]bool{
		"Accepted": true, "Programmed": true, "ResolvedRefs": true, "AddressesAssigned": true,
		"InsecureFrontendValidationMode": true,
	}
	listenerConditionTypes = map[string]bool{
		"Accepted": true, "Programmed": true, "ResolvedRefs": true, "Conflicted": true,
	}
)

// withForeign is list followed by the conditions of prev that are
// foreign: of a type not in own and not under tunnelgate.dev/. list is
// returned as it is when there are none.
func withForeign(list, prev []metav1.Condition, own map[string]bool) []metav1.Condition {
	out := list
	for _, c := range prev {
		if own[c.Type] || strings.HasPrefix(c.Type, "tunnelgate.dev/") || slices.ContainsFunc(list, func(l metav1.Condition) bool { return l.Type == c.Type }) {
			continue
		}
		if len(out) == len(list) {
			out = slices.Clip(slices.Clone(list))
		}
		out = append(out, c)
	}
	return out
}

// policyGateway resolves a policy's target Gateway ns/name: the Gateway,
// if it is of this controller's classes, and the listeners section picks
// (all of them when it is empty); or why the target is not found.
// AccessPolicy, LoadBalancingPolicy and DNSPolicy name Gateways alike.
func (t *translator) policyGateway(ns, name, section string) (*gatewayInfo, []*listenerInfo, string) {
	gi := t.gatewayByKey[nn(ns, name)]
	if gi == nil {
		return nil, nil, fmt.Sprintf("Gateway %s/%s is not a Gateway of this controller's classes", ns, name)
	}
	if section == "" {
		return gi, gi.listeners, ""
	}
	i := slices.IndexFunc(gi.own, func(l *listenerInfo) bool { return l.name == section })
	if i < 0 {
		return nil, nil, fmt.Sprintf("Gateway %s/%s has no listener %s", ns, name, section)
	}
	return gi, gi.own[i : i+1], ""
}

// othersTarget reports whether a policy's target, in namespace ns, exists
// and is another controller's: a Gateway of a GatewayClass with another
// controllerName, or a route (in routes, by kind, namespace and name) with
// no parent of ours that names such a Gateway, or a ListenerSet of one. A
// policy's status holds no ancestor of ours for it: that controller
// writes its own, and a TargetNotFound of ours beside them would be
// false. A target that does not exist, or of no controller's class, is
// not another's.
func (t *translator) othersTarget(ns string, tr *gwv1.LocalPolicyTargetReferenceWithSectionName, routes map[accessTarget]pending) bool {
	if string(tr.Group) != groupGateway {
		return false
	}
	switch string(tr.Kind) {
	case "Gateway":
		return t.othersGateway(ns, string(tr.Name))
	case kindHTTPRoute, kindGRPCRoute, kindTCPRoute, kindTLSRoute:
		p, ok := routes[accessTarget{string(tr.Kind), ns, string(tr.Name), ""}]
		if !ok || len(p.info.parents) > 0 {
			return false // absent, or ours
		}
		for _, ref := range p.info.parentRefs {
			if ref.Group != nil && string(*ref.Group) != groupGateway {
				continue
			}
			pns := ns
			if ref.Namespace != nil && *ref.Namespace != "" {
				pns = string(*ref.Namespace)
			}
			switch {
			case ref.Kind == nil || *ref.Kind == "Gateway":
				if t.othersGateway(pns, string(ref.Name)) {
					return true
				}
			case *ref.Kind == "ListenerSet":
				if gw, ok := t.listenerSetGateway(pns, string(ref.Name)); ok && t.othersGateway(gw.Namespace, gw.Name) {
					return true
				}
			}
		}
	}
	return false
}

// othersGateway reports whether Gateway ns/name exists and is of a
// GatewayClass of another controller.
func (t *translator) othersGateway(ns, name string) bool {
	if t.othersGateways == nil {
		classes := map[string]bool{}
		for _, gc := range t.in.GatewayClasses {
			if string(gc.Spec.ControllerName) != t.in.ControllerName {
				classes[gc.Name] = true
			}
		}
		t.othersGateways = map[types.NamespacedName]bool{}
		for _, g := range t.in.Gateways {
			if classes[string(g.Spec.GatewayClassName)] {
				t.othersGateways[nn(g.Namespace, g.Name)] = true
			}
		}
	}
	return t.othersGateways[nn(ns, name)]
}

// listenerSetGateway is the Gateway ListenerSet ns/name names as its
// parent, if the ListenerSet exists and names one.
func (t *translator) listenerSetGateway(ns, name string) (types.NamespacedName, bool) {
	for _, ls := range t.in.ListenerSets {
		if ls.Namespace != ns || ls.Name != name {
			continue
		}
		ref := ls.Spec.ParentRef
		if (ref.Group != nil && string(*ref.Group) != groupGateway) || (ref.Kind != nil && *ref.Kind != "Gateway") {
			return types.NamespacedName{}, false
		}
		gns := ns
		if ref.Namespace != nil && *ref.Namespace != "" {
			gns = string(*ref.Namespace)
		}
		return nn(gns, string(ref.Name)), true
	}
	return types.NamespacedName{}, false
}

// policyAncestors are the ancestor statuses of a policy of kind (obj, its
// status's ancestors prev): one per use, at most maxAncestors, sorted by
// ancestor reference (ref), each with the conditions fill writes, kept
// from prev where they did not change; a change is warned about as an
// event.
func policyAncestors[U any](t *translator, kind string, obj *metav1.ObjectMeta, prev []gwv1.PolicyAncestorStatus,
	uses []U, ref func(U) *gwv1.ParentReference, fill func(U, *conds)) []gwv1.PolicyAncestorStatus {
	uses = slices.Clone(uses)
	slices.SortFunc(uses, func(a, b U) int { return strings.Compare(refString(ref(a)), refString(ref(b))) })
	if len(uses) > maxAncestors {
		uses = uses[:maxAncestors]
	}
	out := make([]gwv1.PolicyAncestorStatus, 0, len(uses))
	for _, u := range uses {
		c := t.newConds(prevAncestorConds(prev, ref(u), t.in.ControllerName), obj.Generation)
		fill(u, &c)
		t.warnOnChange(kind, obj, c.prev, c.list)
		out = append(out, gwv1.PolicyAncestorStatus{AncestorRef: *ref(u), ControllerName: gwv1.GatewayController(t.in.ControllerName), Conditions: c.list})
	}
	return out
}
