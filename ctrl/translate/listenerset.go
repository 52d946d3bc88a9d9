// This file attaches ListenerSets to Gateways.

package translate

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

type listenerSetInfo struct {
	obj       *gwv1.ListenerSet
	key       types.NamespacedName
	gw        *gatewayInfo
	listeners []*listenerInfo
	conds     conds
}

// listenerSets attaches ListenerSets to the Gateways that allow them. A
// Gateway admits none unless spec.allowedListeners says so (the default is
// None), so a namespace cannot add hostnames to a Gateway uninvited.
func (t *translator) listenerSets() {
	sets := append([]*gwv1.ListenerSet(nil), t.in.ListenerSets...)
	sort.Slice(sets, func(i, j int) bool { return olderThan(&sets[i].ObjectMeta, &sets[j].ObjectMeta) })
	for _, ls := range sets {
		ref := ls.Spec.ParentRef
		if (ref.Group != nil && string(*ref.Group) != groupGateway) || (ref.Kind != nil && *ref.Kind != "Gateway") {
			continue
		}
		gwNS := ls.Namespace
		if ref.Namespace != nil && *ref.Namespace != "" {
			gwNS = string(*ref.Namespace)
		}
		gi := t.gatewayByKey[nn(gwNS, string(ref.Name))]
		if gi == nil {
			continue // not ours, or no such Gateway: not ours to report on
		}
		si := &listenerSetInfo{obj: ls, key: nn(ls.Namespace, ls.Name), gw: gi,
			conds: t.newConds(ls.Status.Conditions, ls.Generation)}
		t.setList = append(t.setList, si)
		for i := range ls.Spec.Listeners {
			l := &ls.Spec.Listeners[i]
			li := t.newListener(gi, si, ls.Namespace, string(l.Name), l.Hostname, l.Port, l.Protocol, l.TLS, l.AllowedRoutes, l.Filters, prevEntryConds(ls.Status.Listeners, l.Name))
			li.dpName = "ListenerSet:" + ls.Namespace + "/" + ls.Name + "/" + string(l.Name)
			si.listeners = append(si.listeners, li)
		}
		v, ok := ls.Annotations[AnnotationTCPHostnames]
		tcpHostnames(v, ok, si.listeners, &si.conds)
		if !t.gatewayAllowsSet(gi, ls.Namespace) {
			si.conds.set(string(gwv1.ListenerSetConditionAccepted), false, string(gwv1.ListenerSetReasonNotAllowed),
				fmt.Sprintf("Gateway %s/%s does not allow ListenerSets from namespace %s (spec.allowedListeners)", gwNS, ref.Name, ls.Namespace))
			for _, li := range si.listeners {
				li.attachable = false
			}
			continue
		}
		gi.sets = append(gi.sets, si)
		gi.listeners = append(gi.listeners, si.listeners...)
	}
}

// finishListenerSet sets a ListenerSet's conditions once its Gateway and
// the conflicts among listeners are decided.
func (t *translator) finishListenerSet(si *listenerSetInfo) {
	if si.conds.get(string(gwv1.ListenerSetConditionAccepted)) == nil {
		// A listener whose certificateRefs do not resolve is not valid
		// either: a set of only such listeners serves nothing.
		valid := 0
		for _, li := range si.listeners {
			if li.attachable && li.certOK {
				valid++
			}
		}
		switch {
		case !si.gw.accepted:
			si.conds.set(string(gwv1.ListenerSetConditionAccepted), false, string(gwv1.ListenerSetReasonParentNotAccepted),
				fmt.Sprintf("Gateway %s is not accepted", si.gw.key))
			for _, li := range si.listeners {
				li.attachable = false
			}
		case valid == 0:
			si.conds.set(string(gwv1.ListenerSetConditionAccepted), false, string(gwv1.ListenerSetReasonListenersNotValid), "no listener is valid")
			for _, li := range si.listeners {
				li.attachable = false // routes attach to accepted sets only
			}
		default:
			si.conds.set(string(gwv1.ListenerSetConditionAccepted), true, string(gwv1.ListenerSetReasonAccepted), "listener set accepted")
		}
	}
	if a := si.conds.get(string(gwv1.ListenerSetConditionAccepted)); a.Status == metav1.ConditionTrue {
		si.conds.set(string(gwv1.ListenerSetConditionProgrammed), true, string(gwv1.ListenerSetReasonProgrammed), "listeners are served")
	} else {
		// Programmed repeats why the set is not accepted, as users and the
		// conformance suite look for the reason on either condition.
		si.conds.set(string(gwv1.ListenerSetConditionProgrammed), false, a.Reason, "not served: "+a.Message)
	}
}

func (t *translator) gatewayAllowsSet(gi *gatewayInfo, ns string) bool {
	al := gi.obj.Spec.AllowedListeners
	if al == nil || al.Namespaces == nil || al.Namespaces.From == nil {
		return false
	}
	switch *al.Namespaces.From {
	case gwv1.NamespacesFromAll:
		return true
	case gwv1.NamespacesFromSame:
		return ns == gi.obj.Namespace
	case gwv1.NamespacesFromSelector:
		sel, err := metav1.LabelSelectorAsSelector(al.Namespaces.Selector)
		return err == nil && sel.Matches(t.look.namespaceLabels(ns))
	}
	return false
}

func prevEntryConds(st []gwv1.ListenerEntryStatus, name gwv1.SectionName) []metav1.Condition {
	for i := range st {
		if st[i].Name == name {
			return st[i].Conditions
		}
	}
	return nil
}

// olderThan orders objects by creation time, then namespace/name: the
// order the Gateway API uses to settle every conflict.
func olderThan(a, b *metav1.ObjectMeta) bool { return compareAge(a, b) < 0 }

// compareAge is olderThan as a three-way comparison, for slices.SortFunc.
func compareAge(a, b *metav1.ObjectMeta) int {
	if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}
