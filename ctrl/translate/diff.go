// This file implements Diff: the objects whose status changed between two
// outputs.

package translate

import (
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Changes names the objects whose status differs between two outputs: the
// status writes a controller has to make. Each list is sorted.
type Changes struct {
	GatewayClasses        []string
	Gateways              []types.NamespacedName
	ListenerSets          []types.NamespacedName
	HTTPRoutes            []types.NamespacedName
	GRPCRoutes            []types.NamespacedName
	TCPRoutes             []types.NamespacedName
	TLSRoutes             []types.NamespacedName
	BackendTLSPolicies    []types.NamespacedName
	AccessPolicies        []types.NamespacedName
	LoadBalancingPolicies []types.NamespacedName
	DNSPolicies           []types.NamespacedName
}

// Empty reports whether nothing changed.
func (c *Changes) Empty() bool {
	return len(c.GatewayClasses)+len(c.Gateways)+len(c.ListenerSets)+len(c.HTTPRoutes)+len(c.GRPCRoutes)+
		len(c.TCPRoutes)+len(c.TLSRoutes)+len(c.BackendTLSPolicies)+len(c.AccessPolicies)+len(c.LoadBalancingPolicies)+len(c.DNSPolicies) == 0
}

// Diff compares next with prev (nil: everything in next is new). An object
// present in prev and gone from next is listed too: its entries must be
// removed from its status.
func Diff(prev, next *Output) Changes {
	if prev == nil {
		prev = &Output{}
	}
	var c Changes
	if next.patchOf == prev {
		// Only the statuses it names were replaced; everything else is
		// shared.
		c.HTTPRoutes = diffKeys(prev.HTTPRoutes, next.HTTPRoutes, next.touchedHTTP, parentsEqual)
		c.GRPCRoutes = diffKeys(prev.GRPCRoutes, next.GRPCRoutes, next.touchedGRPC, parentsEqual)
		c.Gateways = diffKeys(prev.Gateways, next.Gateways, next.touchedGateways, func(a, b *gwv1.GatewayStatus) bool {
			return (a == nil) == (b == nil) && equality.Semantic.DeepEqual(a, b)
		})
		c.ListenerSets = diffKeys(prev.ListenerSets, next.ListenerSets, next.touchedSets, func(a, b *gwv1.ListenerSetStatus) bool {
			return (a == nil) == (b == nil) && equality.Semantic.DeepEqual(a, b)
		})
		// No patch touches stream routes (the Cache does not patch while
		// there are any), so their statuses are compared whole: cheap,
		// and right whatever a patch did.
		c.TCPRoutes = diffMap(prev.TCPRoutes, next.TCPRoutes, parentsEqual)
		c.TLSRoutes = diffMap(prev.TLSRoutes, next.TLSRoutes, parentsEqual)
		return c
	}
	for k, v := range next.GatewayClasses {
		if p, ok := prev.GatewayClasses[k]; !ok || p.Finalizer != v.Finalizer || !conditionsEqual(p.Status.Conditions, v.Status.Conditions) {
			c.GatewayClasses = append(c.GatewayClasses, k)
		}
	}
	for k := range prev.GatewayClasses {
		if _, ok := next.GatewayClasses[k]; !ok {
			c.GatewayClasses = append(c.GatewayClasses, k)
		}
	}
	sort.Strings(c.GatewayClasses)
	c.Gateways = diffMap(prev.Gateways, next.Gateways, func(a, b *gwv1.GatewayStatus) bool { return equality.Semantic.DeepEqual(a, b) })
	c.ListenerSets = diffMap(prev.ListenerSets, next.ListenerSets, func(a, b *gwv1.ListenerSetStatus) bool { return equality.Semantic.DeepEqual(a, b) })
	c.HTTPRoutes = diffMap(prev.HTTPRoutes, next.HTTPRoutes, parentsEqual)
	c.GRPCRoutes = diffMap(prev.GRPCRoutes, next.GRPCRoutes, parentsEqual)
	c.TCPRoutes = diffMap(prev.TCPRoutes, next.TCPRoutes, parentsEqual)
	c.TLSRoutes = diffMap(prev.TLSRoutes, next.TLSRoutes, parentsEqual)
	ancestorsEqual := func(a, b []gwv1.PolicyAncestorStatus) bool { return equality.Semantic.DeepEqual(a, b) }
	c.BackendTLSPolicies = diffMap(prev.BackendTLSPolicies, next.BackendTLSPolicies, ancestorsEqual)
	c.AccessPolicies = diffMap(prev.AccessPolicies, next.AccessPolicies, ancestorsEqual)
	c.LoadBalancingPolicies = diffMap(prev.LoadBalancingPolicies, next.LoadBalancingPolicies, ancestorsEqual)
	c.DNSPolicies = diffMap(prev.DNSPolicies, next.DNSPolicies, ancestorsEqual)
	return c
}

func diffMap[V any](prev, next map[types.NamespacedName]V, equal func(a, b V) bool) []types.NamespacedName {
	var out []types.NamespacedName
	for k, v := range next {
		if p, ok := prev[k]; !ok || !equal(p, v) {
			out = append(out, k)
		}
	}
	for k := range prev {
		if _, ok := next[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return lessNN(out[i].Namespace, out[i].Name, out[j].Namespace, out[j].Name) })
	return out
}

// diffKeys is diffMap over the keys that may differ (a key may be listed
// twice: a route retranslated, then deleted, by one patch).
func diffKeys[V any](prev, next map[types.NamespacedName]V, keys []types.NamespacedName, equal func(a, b V) bool) []types.NamespacedName {
	var out []types.NamespacedName
	for _, k := range keys {
		p, inPrev := prev[k]
		n, inNext := next[k]
		if inPrev != inNext || !equal(p, n) {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return lessNN(out[i].Namespace, out[i].Name, out[j].Namespace, out[j].Name) })
	return slices.Compact(out)
}

// parentsEqual compares route parent statuses without reflection: routes
// are the many objects, so this is the comparison that must be cheap.
func parentsEqual(a, b []gwv1.RouteParentStatus) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) > 0 && &a[0] == &b[0] {
		return true // the same remembered status (see Cache)
	}
	for i := range a {
		if a[i].ControllerName != b[i].ControllerName || !SameParentRef(&a[i].ParentRef, &b[i].ParentRef) ||
			!conditionsEqual(a[i].Conditions, b[i].Conditions) {
			return false
		}
	}
	return true
}

func conditionsEqual(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			x.ObservedGeneration != y.ObservedGeneration || !x.LastTransitionTime.Equal(&y.LastTransitionTime) {
			return false
		}
	}
	return true
}
