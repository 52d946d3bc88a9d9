package standalone

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

func cond(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
}

func accepted(reason, msg string) metav1.Condition {
	return cond("Accepted", metav1.ConditionTrue, reason, msg)
}

func parentRef(ns, name, section string) gwv1.ParentReference {
	ref := gwv1.ParentReference{Name: gwv1.ObjectName(name)}
	if ns != "" {
		ref.Namespace = ptr(gwv1.Namespace(ns))
	}
	if section != "" {
		ref.SectionName = ptr(gwv1.SectionName(section))
	}
	return ref
}

func nn(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }

// sampleOutput is an Output as translate could make it, with every kind
// Describe prints.
func sampleOutput() *translate.Output {
	const T, F = metav1.ConditionTrue, metav1.ConditionFalse
	routeKinds := []gwv1.RouteGroupKind{{Kind: "HTTPRoute"}, {Kind: "GRPCRoute"}}
	return &translate.Output{
		GatewayClasses: map[string]*translate.GatewayClassResult{
			"tunnelgate": {Status: gwv1.GatewayClassStatus{Conditions: []metav1.Condition{
				accepted("Accepted", "Handled by tunnelgate"),
			}}},
		},
		Gateways: map[types.NamespacedName]*gwv1.GatewayStatus{
			nn("default", "gw"): {
				Addresses: []gwv1.GatewayStatusAddress{{Type: ptr(gwv1.IPAddressType), Value: "127.0.0.1"}},
				Conditions: []metav1.Condition{
					accepted("Accepted", ""),
					cond("Programmed", T, "Programmed", "Serving on 127.0.0.1"),
				},
				Listeners: []gwv1.ListenerStatus{
					{Name: "http", SupportedKinds: routeKinds, AttachedRoutes: 2, Conditions: []metav1.Condition{
						accepted("Accepted", ""),
						cond("ResolvedRefs", T, "ResolvedRefs", ""),
					}},
					{Name: "udp", AttachedRoutes: 0, Conditions: []metav1.Condition{
						cond("Accepted", F, "UnsupportedProtocol", "UDP is not supported"),
					}},
				},
			},
			// Sorted after default/gw, and has no spec in the snapshot.
			nn("a", "other"): {},
		},
		ListenerSets: map[types.NamespacedName]*gwv1.ListenerSetStatus{
			nn("default", "extra"): {
				Conditions: []metav1.Condition{cond("Accepted", F, "NotAllowed", "gw does not allow ListenerSets")},
				Listeners:  []gwv1.ListenerEntryStatus{{Name: "more", SupportedKinds: routeKinds}},
			},
		},
		HTTPRoutes: map[types.NamespacedName][]gwv1.RouteParentStatus{
			nn("default", "web"): {
				{ParentRef: parentRef("", "gw", "http"), Conditions: []metav1.Condition{
					accepted("Accepted", ""),
					cond("ResolvedRefs", F, "BackendNotFound", "Service default/web not found"),
				}},
			},
			nn("apps", "api"): {
				{ParentRef: parentRef("default", "gw", ""), Conditions: []metav1.Condition{
					// A message with a tab and a newline stays on one line.
					cond("Accepted", F, "NotAllowedByListeners", "no listener\tallows\nnamespace apps"),
				}},
			},
		},
		GRPCRoutes: map[types.NamespacedName][]gwv1.RouteParentStatus{
			nn("default", "echo"): {
				{ParentRef: parentRef("", "gw", ""), Conditions: []metav1.Condition{
					accepted("Accepted", ""),
					cond("ResolvedRefs", T, "ResolvedRefs", ""),
				}},
			},
		},
		BackendTLSPolicies: map[types.NamespacedName][]gwv1.PolicyAncestorStatus{
			nn("default", "tls"): {
				{AncestorRef: parentRef("", "gw", ""), Conditions: []metav1.Condition{
					accepted("Accepted", ""),
				}},
			},
		},
		Events: []translate.Event{
			{Kind: "HTTPRoute", Namespace: "default", Name: "web", Type: "Warning", Reason: "BackendNotFound", Message: "Service default/web not found"},
			{Kind: "GatewayClass", Name: "tunnelgate", Type: "Normal", Reason: "Accepted", Message: "Handled by tunnelgate"},
		},
	}
}

func TestDescribe(t *testing.T) {
	snap := &translate.Snapshot{Gateways: []*gwv1.Gateway{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gw"},
		Spec: gwv1.GatewaySpec{Listeners: []gwv1.Listener{
			{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 8080, Hostname: ptr(gwv1.Hostname("*.example.com"))},
			{Name: "udp", Protocol: gwv1.UDPProtocolType, Port: 53},
		}},
	}}}
	var b strings.Builder
	Describe(&b, snap, sampleOutput())

	const want = `GatewayClass tunnelgate
  Conditions:
    Type      Status  Reason    Message
    ----      ------  ------    -------
    Accepted  True    Accepted  Handled by tunnelgate
  Events:
    Type    Reason    Message
    ----    ------    -------
    Normal  Accepted  Handled by tunnelgate

Gateway a/other
  Conditions:  <none>

Gateway default/gw
  Addresses:  127.0.0.1 (IPAddress)
  Conditions:
    Type        Status  Reason      Message
    ----        ------  ------      -------
    Accepted    True    Accepted
    Programmed  True    Programmed  Serving on 127.0.0.1
  Listener http (HTTP, port 8080, hostname *.example.com)
    Supported Kinds:  HTTPRoute, GRPCRoute
    Attached Routes:  2
    Conditions:
      Type          Status  Reason        Message
      ----          ------  ------        -------
      Accepted      True    Accepted
      ResolvedRefs  True    ResolvedRefs
  Listener udp (UDP, port 53)
    Supported Kinds:
    Attached Routes:  0
    Conditions:
      Type      Status  Reason               Message
      ----      ------  ------               -------
      Accepted  False   UnsupportedProtocol  UDP is not supported

ListenerSet default/extra
  Conditions:
    Type      Status  Reason      Message
    ----      ------  ------      -------
    Accepted  False   NotAllowed  gw does not allow ListenerSets
  Listener more
    Supported Kinds:  HTTPRoute, GRPCRoute
    Attached Routes:  0
    Conditions:       <none>

HTTPRoute apps/api
  Parent gateway default/gw
    Conditions:
      Type      Status  Reason                 Message
      ----      ------  ------                 -------
      Accepted  False   NotAllowedByListeners  no listener allows namespace apps

HTTPRoute default/web
  Parent gateway default/gw section http
    Conditions:
      Type          Status  Reason           Message
      ----          ------  ------           -------
      Accepted      True    Accepted
      ResolvedRefs  False   BackendNotFound  Service default/web not found
  Events:
    Type     Reason           Message
    ----     ------           -------
    Warning  BackendNotFound  Service default/web not found

GRPCRoute default/echo
  Parent gateway default/gw
    Conditions:
      Type          Status  Reason        Message
      ----          ------  ------        -------
      Accepted      True    Accepted
      ResolvedRefs  True    ResolvedRefs

BackendTLSPolicy default/tls
  Ancestor gateway default/gw
    Conditions:
      Type      Status  Reason    Message
      ----      ------  ------    -------
      Accepted  True    Accepted
`
	if got := b.String(); got != want {
		t.Errorf("Describe printed:\n%s\nwant:\n%s", got, want)
	}
}

func TestDescribeEmpty(t *testing.T) {
	var b strings.Builder
	Describe(&b, nil, &translate.Output{})
	if b.Len() != 0 {
		t.Errorf("Describe of nothing printed %q", b.String())
	}
}

func TestNotReady(t *testing.T) {
	out := sampleOutput()
	out.GRPCRoutes[nn("default", "bare")] = []gwv1.RouteParentStatus{
		{ParentRef: gwv1.ParentReference{Kind: ptr(gwv1.Kind("ListenerSet")), Name: "extra", Port: ptr(gwv1.PortNumber(80))}},
		{ParentRef: parentRef("", "gw", ""), Conditions: []metav1.Condition{
			cond("Accepted", metav1.ConditionUnknown, "Pending", ""),
			cond("ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs", ""),
		}},
	}
	want := []string{
		"GRPCRoute default/bare (parent gateway default/gw): Accepted=Unknown Pending",
		"GRPCRoute default/bare (parent listenerset default/extra port 80): Accepted missing; ResolvedRefs missing",
		"HTTPRoute apps/api (parent gateway default/gw): Accepted=False NotAllowedByListeners: no listener allows namespace apps; ResolvedRefs missing",
		"HTTPRoute default/web (parent gateway default/gw section http): ResolvedRefs=False BackendNotFound: Service default/web not found",
	}
	if got := NotReady(out); !slices.Equal(got, want) {
		t.Errorf("NotReady =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := NotReady(&translate.Output{}); got != nil {
		t.Errorf("NotReady of nothing = %q", got)
	}
}
