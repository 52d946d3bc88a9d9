// This file implements Describe.

package standalone

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// Describe prints the statuses in out the way kubectl describe shows
// conditions: a "Kind namespace/name" line per object, then its conditions
// as a table, with listeners, route parents and policy ancestors indented
// under it, and the object's events last. Objects come in the order
// GatewayClass, Gateway, ListenerSet, HTTPRoute, GRPCRoute, TCPRoute,
// TLSRoute, BackendTLSPolicy, AccessPolicy, LoadBalancingPolicy, DNSPolicy, each kind sorted by namespace
// and name. snap, which may be nil, adds the protocol, port and hostname
// of listeners.
func Describe(w io.Writer, snap *translate.Snapshot, out *translate.Output) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	d := &describer{w: tw, snap: snap, events: map[eventKey][]translate.Event{}}
	for _, e := range out.Events {
		k := eventKey{e.Kind, e.Namespace, e.Name}
		d.events[k] = append(d.events[k], e)
	}

	for _, name := range slices.Sorted(maps.Keys(out.GatewayClasses)) {
		d.object(kindGatewayClass, "", name)
		if r := out.GatewayClasses[name]; r != nil {
			d.conditions(1, r.Status.Conditions)
		}
	}
	for _, nn := range sortedNames(out.Gateways) {
		d.gateway(nn, out.Gateways[nn])
	}
	for _, nn := range sortedNames(out.ListenerSets) {
		d.listenerSet(nn, out.ListenerSets[nn])
	}
	describeEach(d, kindHTTPRoute, "Parent", out.HTTPRoutes, routeParent)
	describeEach(d, kindGRPCRoute, "Parent", out.GRPCRoutes, routeParent)
	describeEach(d, kindTCPRoute, "Parent", out.TCPRoutes, routeParent)
	describeEach(d, kindTLSRoute, "Parent", out.TLSRoutes, routeParent)
	describeEach(d, kindBackendTLSPolicy, "Ancestor", out.BackendTLSPolicies, policyAncestor)
	describeEach(d, kindAccessPolicy, "Ancestor", out.AccessPolicies, policyAncestor)
	describeEach(d, kindLoadBalancingPolicy, "Ancestor", out.LoadBalancingPolicies, policyAncestor)
	describeEach(d, kindDNSPolicy, "Ancestor", out.DNSPolicies, policyAncestor)
	d.flushEvents()
	tw.Flush()

	// Empty last cells leave the padding of the cell before them.
	text := make([]byte, 0, buf.Len())
	for line := range bytes.Lines(buf.Bytes()) {
		text = append(append(text, bytes.TrimRight(line, " \n")...), '\n')
	}
	w.Write(text)
}

// describeEach prints the objects of one kind whose status is a list of
// entries, each a reference (a route's parent, a policy's ancestor) with
// its conditions.
func describeEach[E any](d *describer, kind, label string, statuses map[types.NamespacedName][]E, entry func(*E) (gwv1.ParentReference, []metav1.Condition)) {
	for _, nn := range sortedNames(statuses) {
		d.object(kind, nn.Namespace, nn.Name)
		for i := range statuses[nn] {
			ref, conds := entry(&statuses[nn][i])
			d.linef(1, "%s %s", label, refString(ref, nn.Namespace))
			d.conditions(2, conds)
		}
	}
}

func routeParent(p *gwv1.RouteParentStatus) (gwv1.ParentReference, []metav1.Condition) {
	return p.ParentRef, p.Conditions
}

func policyAncestor(a *gwv1.PolicyAncestorStatus) (gwv1.ParentReference, []metav1.Condition) {
	return a.AncestorRef, a.Conditions
}

type eventKey struct{ kind, namespace, name string }

type describer struct {
	w      io.Writer
	snap   *translate.Snapshot
	events map[eventKey][]translate.Event
	// current is the object being printed, whose events come after it.
	current *eventKey
}

// object starts an object: it ends the previous one with its events and a
// blank line, then prints the header.
func (d *describer) object(kind, namespace, name string) {
	if d.current != nil {
		d.flushEvents()
		fmt.Fprintln(d.w)
	}
	d.current = &eventKey{kind, namespace, name}
	d.linef(0, "%s", clean(objectName(kind, namespace, name)))
}

func (d *describer) flushEvents() {
	if d.current == nil {
		return
	}
	evs := d.events[*d.current]
	if len(evs) == 0 {
		return
	}
	d.linef(1, "Events:")
	d.linef(2, "Type\tReason\tMessage")
	d.linef(2, "----\t------\t-------")
	for _, e := range evs {
		d.linef(2, "%s\t%s\t%s", clean(e.Type), clean(e.Reason), clean(e.Message))
	}
}

func (d *describer) gateway(nn types.NamespacedName, st *gwv1.GatewayStatus) {
	d.object(kindGateway, nn.Namespace, nn.Name)
	if st == nil {
		st = &gwv1.GatewayStatus{}
	}
	if len(st.Addresses) > 0 {
		addrs := make([]string, len(st.Addresses))
		for i, a := range st.Addresses {
			addrs[i] = clean(a.Value)
			if a.Type != nil {
				addrs[i] += " (" + clean(string(*a.Type)) + ")"
			}
		}
		d.linef(1, "Addresses:\t%s", strings.Join(addrs, ", "))
	}
	if st.AttachedListenerSets != nil {
		d.linef(1, "Attached ListenerSets:\t%d", *st.AttachedListenerSets)
	}
	d.conditions(1, st.Conditions)
	spec := map[gwv1.SectionName]string{}
	if d.snap != nil {
		for _, g := range d.snap.Gateways {
			if g.Namespace == nn.Namespace && g.Name == nn.Name {
				for _, l := range g.Spec.Listeners {
					spec[l.Name] = listenerDetail(l.Protocol, l.Port, l.Hostname)
				}
			}
		}
	}
	for _, l := range st.Listeners {
		d.listener(l.Name, spec[l.Name], l.SupportedKinds, l.AttachedRoutes, l.Conditions)
	}
}

func (d *describer) listenerSet(nn types.NamespacedName, st *gwv1.ListenerSetStatus) {
	d.object(kindListenerSet, nn.Namespace, nn.Name)
	if st == nil {
		st = &gwv1.ListenerSetStatus{}
	}
	d.conditions(1, st.Conditions)
	spec := map[gwv1.SectionName]string{}
	if d.snap != nil {
		for _, ls := range d.snap.ListenerSets {
			if ls.Namespace == nn.Namespace && ls.Name == nn.Name {
				for _, l := range ls.Spec.Listeners {
					spec[l.Name] = listenerDetail(l.Protocol, l.Port, l.Hostname)
				}
			}
		}
	}
	for _, l := range st.Listeners {
		d.listener(l.Name, spec[l.Name], l.SupportedKinds, l.AttachedRoutes, l.Conditions)
	}
}

// listenerDetail is " (HTTP, port 80, hostname a.example.com)".
func listenerDetail(proto gwv1.ProtocolType, port gwv1.PortNumber, hostname *gwv1.Hostname) string {
	s := fmt.Sprintf(" (%s, port %d", proto, port)
	if hostname != nil {
		s += ", hostname " + string(*hostname)
	}
	return s + ")"
}

// listener prints a listener's status; detail, from its spec, may be empty.
func (d *describer) listener(name gwv1.SectionName, detail string, kinds []gwv1.RouteGroupKind, attached int32, conds []metav1.Condition) {
	d.linef(1, "Listener %s", clean(string(name)+detail))
	ks := make([]string, len(kinds))
	for i, k := range kinds {
		ks[i] = clean(string(k.Kind))
	}
	d.linef(2, "Supported Kinds:\t%s", strings.Join(ks, ", "))
	d.linef(2, "Attached Routes:\t%d", attached)
	d.conditions(2, conds)
}

// conditions prints a condition table at the given depth.
func (d *describer) conditions(depth int, conds []metav1.Condition) {
	if len(conds) == 0 {
		d.linef(depth, "Conditions:\t<none>")
		return
	}
	d.linef(depth, "Conditions:")
	d.linef(depth+1, "Type\tStatus\tReason\tMessage")
	d.linef(depth+1, "----\t------\t------\t-------")
	for _, c := range conds {
		d.linef(depth+1, "%s\t%s\t%s\t%s", clean(c.Type), clean(string(c.Status)), clean(c.Reason), clean(c.Message))
	}
}

// linef prints a line indented two spaces per depth. Cells are separated
// by tabs for the tabwriter; every value in them has been cleaned.
func (d *describer) linef(depth int, format string, args ...any) {
	fmt.Fprintf(d.w, strings.Repeat("  ", depth)+format+"\n", args...)
}

// clean makes s safe for one tabwriter cell: no tabs, line breaks or
// invalid UTF-8 (0xff is the tabwriter's escape byte).
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// refString names the target of a parentRef or ancestorRef, such as
// "gateway default/gw section http port 80"; namespace is the referrer's.
func refString(ref gwv1.ParentReference, namespace string) string {
	kind := "gateway"
	if ref.Kind != nil {
		kind = strings.ToLower(string(*ref.Kind))
	}
	if ref.Group != nil && *ref.Group != "" && *ref.Group != gwv1.GroupName {
		kind += "." + string(*ref.Group)
	}
	if ref.Namespace != nil && *ref.Namespace != "" {
		namespace = string(*ref.Namespace)
	}
	s := kind + " " + namespace + "/" + string(ref.Name)
	if ref.SectionName != nil {
		s += " section " + string(*ref.SectionName)
	}
	if ref.Port != nil {
		s += " port " + strconv.Itoa(int(*ref.Port))
	}
	return clean(s)
}

func sortedNames[V any](m map[types.NamespacedName]V) []types.NamespacedName {
	return slices.SortedFunc(maps.Keys(m), func(a, b types.NamespacedName) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
}

// NotReady returns a line for each route parent status in out whose
// Accepted or ResolvedRefs condition is not True, or is missing, sorted:
//
//	HTTPRoute default/web (parent gateway default/gw): Accepted=False NotAllowedByListeners: no listener allows the route
func NotReady(out *translate.Output) []string {
	var lines []string
	check := func(kind string, m map[types.NamespacedName][]gwv1.RouteParentStatus) {
		for nn, parents := range m {
			for _, p := range parents {
				var bad []string
				for _, t := range []gwv1.RouteConditionType{gwv1.RouteConditionAccepted, gwv1.RouteConditionResolvedRefs} {
					c := meta.FindStatusCondition(p.Conditions, string(t))
					switch {
					case c == nil:
						bad = append(bad, string(t)+" missing")
					case c.Status != metav1.ConditionTrue:
						s := fmt.Sprintf("%s=%s %s", t, c.Status, c.Reason)
						if c.Message != "" {
							s += ": " + c.Message
						}
						bad = append(bad, s)
					}
				}
				if len(bad) > 0 {
					lines = append(lines, clean(fmt.Sprintf("%s (parent %s): %s",
						objectName(kind, nn.Namespace, nn.Name), refString(p.ParentRef, nn.Namespace), strings.Join(bad, "; "))))
				}
			}
		}
	}
	check(kindHTTPRoute, out.HTTPRoutes)
	check(kindGRPCRoute, out.GRPCRoutes)
	check(kindTCPRoute, out.TCPRoutes)
	check(kindTLSRoute, out.TLSRoutes)
	slices.Sort(lines)
	return lines
}
