package translate_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/standalone"
)

// originPorts are the config's stream routes' origin ports, by
// "Kind ns/name".
func originPorts(t *testing.T, out *translate.Output) map[string]int {
	t.Helper()
	got := map[string]int{}
	seen := map[int]string{}
	for _, r := range out.Config.Routes {
		if !r.Kind.Stream() || r.OriginPort == 0 {
			continue
		}
		name := string(r.Kind) + " " + r.Namespace + "/" + r.Name
		if other, ok := seen[r.OriginPort]; ok {
			t.Fatalf("origin port %d given to %s and %s", r.OriginPort, other, name)
		}
		seen[r.OriginPort] = name
		got[name] = r.OriginPort
	}
	for _, h := range out.Hostnames {
		if s := h.Stream; s != nil && got[s.Route] != s.Port {
			t.Errorf("hostname %s: the tunnel sends it to port %d, %s has %d", h.Name, s.Port, s.Route, got[s.Route])
		}
	}
	return got
}

// A stream route's origin port is its own: routes added (older or
// younger) and deleted leave the others' ports where they were. Routes
// not through a tunnel have none.
func TestStreamOriginPortsStable(t *testing.T) {
	in := loadGolden(t, "streams.yaml")
	before := originPorts(t, translate.Translate(in))
	if len(before) != 5 {
		t.Fatalf("ports %v: want the 5 routes through tunnels", before)
	}
	if _, ok := before["TCPRoute default/db"]; ok {
		t.Error("TCPRoute default/db is in the cluster only, and got an origin port")
	}

	older := in.TLSRoutes[0].DeepCopy()
	older.Name, older.UID = "added-older", "added-older"
	older.CreationTimestamp = metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	older.Spec.Hostnames = []gwv1.Hostname{"added.example.com"}
	added := *in
	added.TLSRoutes = append(slices.Clone(in.TLSRoutes), older)
	after := originPorts(t, translate.Translate(&added))
	for name, port := range before {
		if after[name] != port {
			t.Errorf("%s: port %d, then %d once an older route was added", name, port, after[name])
		}
	}
	if after["TLSRoute default/added-older"] == 0 {
		t.Error("the route added has no origin port")
	}

	deleted := *in
	deleted.TLSRoutes = slices.DeleteFunc(slices.Clone(in.TLSRoutes), func(r *gwv1.TLSRoute) bool { return r.Name == "first-claim" })
	after = originPorts(t, translate.Translate(&deleted))
	for name, port := range before {
		if name != "TLSRoute default/first-claim" && after[name] != port {
			t.Errorf("%s: port %d, then %d once another route was deleted", name, port, after[name])
		}
	}
}

// An HTTPRoute older than the stream routes that publish its hostnames
// keeps them in the tunnel: the TLSRoutes still take their connections on
// their listener, and say on their DNS condition who holds the hostname.
func TestStreamHostnameHTTPOlder(t *testing.T) {
	in := loadGolden(t, "streams.yaml")
	c := *in
	c.HTTPRoutes = slices.Clone(in.HTTPRoutes)
	web := c.HTTPRoutes[0].DeepCopy()
	web.CreationTimestamp = metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	c.HTTPRoutes[0] = web
	out := translate.Translate(&c)
	for _, h := range out.Hostnames {
		if h.Name == "web.example.com" || h.Name == "late.example.com" {
			if h.Stream != nil || !h.HTTP {
				t.Errorf("%s: %+v, want HTTP alone (the older HTTPRoute's)", h.Name, h)
			}
		}
	}
	for _, name := range []string{"first-claim", "secure"} {
		st := out.TLSRoutes[nsName("default", name)]
		dns := cond(st[0].Conditions, translate.RouteConditionDNSRecords)
		if dns == nil || dns.Reason != translate.DNSReasonClaimedEarlier || !strings.Contains(dns.Message, "HTTPRoute default/web") {
			t.Errorf("TLSRoute %s: DNS condition %+v, want %s naming HTTPRoute default/web", name, dns, translate.DNSReasonClaimedEarlier)
		}
	}
	if st := out.HTTPRoutes[nsName("default", "web")]; cond(st[0].Conditions, translate.RouteConditionDNSRecords) != nil {
		t.Errorf("HTTPRoute web lost a hostname: %+v", st[0].Conditions)
	}
	for _, r := range out.Config.Routes {
		if r.Kind == proxycfg.KindTLS && r.Name == "first-claim" && !slices.Contains(r.Hostnames, "web.example.com") {
			t.Errorf("TLSRoute first-claim no longer takes web.example.com on its listener: %v", r.Hostnames)
		}
	}
}

// The listener statuses the Gateway API conformance suite asks of an
// implementation that serves TLS Passthrough and Terminate but not mixed
// termination, and of route kinds a listener cannot carry
// (TLSRouteListenerTerminateSupportedKinds,
// TLSRouteListenerMixedTerminationNotSupported,
// TLSRouteListenerPassthroughSupportedKinds); a Terminate listener's
// certificateRefs resolve as an HTTPS listener's.
func TestStreamListenerConformance(t *testing.T) {
	const doc = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: gc}
spec: {controllerName: tunnelgate.dev/controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: terminate}
spec:
  gatewayClassName: gc
  listeners:
  - {name: tls-terminate, port: 8443, protocol: TLS, hostname: terminate.example.com, allowedRoutes: {kinds: [{kind: TLSRoute}]}, tls: {mode: Terminate, certificateRefs: [{name: cert}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: mixed}
spec:
  gatewayClassName: gc
  listeners:
  - {name: tls-terminate, port: 8443, protocol: TLS, hostname: terminate.example.com, allowedRoutes: {kinds: [{kind: TLSRoute}]}, tls: {mode: Terminate, certificateRefs: [{name: cert}]}}
  - {name: tls-passthrough, port: 8443, protocol: TLS, hostname: passthrough.example.com, allowedRoutes: {kinds: [{kind: TLSRoute}]}, tls: {mode: Passthrough}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: kinds}
spec:
  gatewayClassName: gc
  listeners:
  - {name: tls-passthrough, port: 443, protocol: TLS, allowedRoutes: {kinds: [{kind: TCPRoute}, {kind: TLSRoute}]}, tls: {mode: Passthrough}}
`
	snap, err := standalone.LoadBytes("conformance.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	out := translate.Translate(goldenInput(snap))
	for _, c := range []struct {
		gateway, listener, typ string
		status                 metav1.ConditionStatus
		reason                 gwv1.ListenerConditionReason
		kinds                  []gwv1.Kind
	}{
		{"terminate", "tls-terminate", "Accepted", metav1.ConditionTrue, gwv1.ListenerReasonAccepted, []gwv1.Kind{"TLSRoute"}},
		{"terminate", "tls-terminate", "ResolvedRefs", metav1.ConditionFalse, gwv1.ListenerReasonInvalidCertificateRef, []gwv1.Kind{"TLSRoute"}},
		{"terminate", "tls-terminate", "Programmed", metav1.ConditionFalse, gwv1.ListenerReasonInvalid, []gwv1.Kind{"TLSRoute"}},
		{"mixed", "tls-terminate", "Accepted", metav1.ConditionFalse, gwv1.ListenerReasonProtocolConflict, nil},
		{"mixed", "tls-passthrough", "Accepted", metav1.ConditionFalse, gwv1.ListenerReasonProtocolConflict, nil},
		{"kinds", "tls-passthrough", "ResolvedRefs", metav1.ConditionFalse, gwv1.ListenerReasonInvalidRouteKinds, []gwv1.Kind{"TLSRoute"}},
		{"kinds", "tls-passthrough", "Accepted", metav1.ConditionTrue, gwv1.ListenerReasonAccepted, []gwv1.Kind{"TLSRoute"}},
	} {
		st := out.Gateways[nsName("default", c.gateway)]
		i := slices.IndexFunc(st.Listeners, func(l gwv1.ListenerStatus) bool { return string(l.Name) == c.listener })
		if i < 0 {
			t.Fatalf("Gateway %s has no listener %s in its status", c.gateway, c.listener)
		}
		l := st.Listeners[i]
		got := cond(l.Conditions, c.typ)
		if got == nil || got.Status != c.status || got.Reason != string(c.reason) {
			t.Errorf("Gateway %s listener %s: %s is %+v, want %s %s", c.gateway, c.listener, c.typ, got, c.status, c.reason)
		}
		var kinds []gwv1.Kind
		for _, k := range l.SupportedKinds {
			kinds = append(kinds, k.Kind)
		}
		if !slices.Equal(kinds, c.kinds) {
			t.Errorf("Gateway %s listener %s: supportedKinds %v, want %v", c.gateway, c.listener, kinds, c.kinds)
		}
		if l.AttachedRoutes != 0 {
			t.Errorf("Gateway %s listener %s: attachedRoutes %d, want 0", c.gateway, c.listener, l.AttachedRoutes)
		}
	}
}

// While the input holds stream routes, or the last one did, the Cache
// does not patch; once they are gone, a steady input is patched again,
// and every output is Translate's.
func TestStreamCacheNoPatch(t *testing.T) {
	in := loadGolden(t, "streams.yaml")
	s := &in.Snapshot
	writeBackAll(s, translate.Translate(in))
	cache := translate.NewCache()
	without := *in
	without.TCPRoutes, without.TLSRoutes = nil, nil
	ws := &without.Snapshot
	ws.GatewayClasses, ws.Gateways, ws.HTTPRoutes = slices.Clone(ws.GatewayClasses), slices.Clone(ws.Gateways), slices.Clone(ws.HTTPRoutes)
	ws.GRPCRoutes, ws.AccessPolicies = slices.Clone(ws.GRPCRoutes), slices.Clone(ws.AccessPolicies)
	writeBackAll(ws, translate.Translate(&without)) // steady without them: repeatable, so patchable
	for i, step := range []struct {
		in      *translate.Input
		patched bool
	}{{in, false}, {in, false}, {&without, false}, {&without, true}, {in, false}} {
		out := cache.Translate(step.in)
		if got, want := render(t, out), render(t, translate.Translate(step.in)); string(got) != string(want) {
			t.Fatalf("step %d: with a Cache the output differs:\n%s", i, lineDiff(string(want), string(got)))
		}
		if translate.Patched(cache) != step.patched {
			t.Errorf("step %d: patched %v, want %v", i, translate.Patched(cache), step.patched)
		}
	}
}
