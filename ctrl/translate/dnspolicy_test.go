// This file tests DNSPolicies: which hostnames they leave to others, and
// what routes' DNS conditions say of them.

package translate_test

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// dnsInput is the dnspolicy golden input, with the DNS states the sync
// of class tunnelgate's tunnel reports.
func dnsInput(t *testing.T, states map[string]translate.DNSState) *translate.Input {
	in := loadGolden(t, "dnspolicy.yaml")
	cloneLists(&in.Snapshot)
	in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "tunnel-id", DNS: states}}
	return in
}

// dnsCond is a route's DNS condition under its first parent.
func dnsCond(t *testing.T, out *translate.Output, route string) *metav1.Condition {
	ps := out.HTTPRoutes[nsName("default", route)]
	if len(ps) == 0 {
		t.Fatalf("HTTPRoute %s has no parent status", route)
	}
	return cond(ps[0].Conditions, translate.RouteConditionDNSRecords)
}

// unmanagedHosts are the output's hostnames marked UnmanagedDNS.
func unmanagedHosts(out *translate.Output) []string {
	var got []string
	for _, h := range out.Hostnames {
		if h.UnmanagedDNS {
			got = append(got, h.Name)
		}
	}
	return got
}

var (
	unmanagedState = translate.DNSState{Ready: true, Unmanaged: true}
	cnameState     = translate.DNSState{Ready: true}
)

func TestDNSPolicyConditions(t *testing.T) {
	out := translate.Translate(dnsInput(t, map[string]translate.DNSState{
		"app.example.com": unmanagedState, "api.example.com": unmanagedState, "other.example.net": unmanagedState,
		"shared.example.com": cnameState, "shop.example.com": {Ready: true, LoadBalanced: true},
	}))
	if got, want := unmanagedHosts(out), []string{"api.example.com", "app.example.com", "other.example.net", "shop.example.com"}; !slices.Equal(got, want) {
		t.Errorf("unmanaged hostnames %v, want %v", got, want)
	}
	for _, tc := range []struct {
		route, reason string
		says          []string
	}{
		{"app", translate.DNSReasonUnmanaged, []string{"DNS for api.example.com is left to others by DNSPolicy default/app-external",
			"DNS for app.example.com is left to others by DNSPolicy default/app-external"}},
		// Another route's policy leaves app.example.com to others: an
		// Unmanaged policy wins.
		{"shared", translate.DNSReasonReady, []string{"CNAME records point shared.example.com at the tunnel",
			"DNS for app.example.com is left to others by DNSPolicy default/app-external"}},
		{"other", translate.DNSReasonUnmanaged, []string{"DNS for other.example.net is left to others by DNSPolicy default/listener-external"}},
		// Load balanced and unmanaged: the load balancer answers for it.
		{"shop", translate.DNSReasonReady, []string{"a Cloudflare load balancer (LoadBalancingPolicy) answers for shop.example.com"}},
	} {
		c := dnsCond(t, out, tc.route)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != tc.reason {
			t.Errorf("%s: DNS condition %+v, want True %s", tc.route, c, tc.reason)
			continue
		}
		for _, s := range tc.says {
			if !strings.Contains(c.Message, s) {
				t.Errorf("%s: DNS condition %q does not say %q", tc.route, c.Message, s)
			}
		}
	}
	// The ingress document still routes every hostname.
	for _, h := range []string{"api.example.com", "app.example.com", "other.example.net", "shared.example.com", "shop.example.com"} {
		if !slices.ContainsFunc(out.Hostnames, func(x translate.Hostname) bool {
			return x.Name == h && slices.Equal(x.Classes, []string{"tunnelgate"})
		}) {
			t.Errorf("hostname %s is not routed through class tunnelgate's tunnel: %+v", h, out.Hostnames)
		}
	}
}

// TestDNSPolicyWaitsForTheSync: while the sync's report does not say
// what is now wanted (a policy came or went since), the DNS condition is
// Unknown; a failure to remove our records is reported.
func TestDNSPolicyWaitsForTheSync(t *testing.T) {
	out := translate.Translate(dnsInput(t, map[string]translate.DNSState{
		"app.example.com": cnameState, "api.example.com": {Reason: translate.DNSReasonForeignRecord, Message: "A api.example.com → 192.0.2.1 exists"},
	}))
	if c := dnsCond(t, out, "app"); c == nil || c.Status != metav1.ConditionUnknown || c.Reason != translate.DNSReasonPending ||
		!strings.Contains(c.Message, "api.example.com") || !strings.Contains(c.Message, "app.example.com") {
		t.Errorf("policy applied, not synced: %+v", c)
	}
	out = translate.Translate(dnsInput(t, map[string]translate.DNSState{
		"app.example.com": unmanagedState, "api.example.com": {Reason: translate.DNSReasonAPIError, Message: "deleting: 403"},
	}))
	if c := dnsCond(t, out, "app"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != translate.DNSReasonAPIError {
		t.Errorf("removal failed: %+v", c)
	}

	// The policy deleted: the hostnames are wanted again, and the
	// sync's last report (left to others) is stale.
	in := dnsInput(t, map[string]translate.DNSState{"app.example.com": unmanagedState, "api.example.com": unmanagedState})
	in.DNSPolicies = slices.DeleteFunc(in.DNSPolicies, func(p *v1alpha1.DNSPolicy) bool { return p.Name == "app-external" })
	out = translate.Translate(in)
	if got := unmanagedHosts(out); slices.Contains(got, "app.example.com") || slices.Contains(got, "api.example.com") {
		t.Errorf("policy deleted: unmanaged hostnames %v", got)
	}
	if c := dnsCond(t, out, "app"); c == nil || c.Status != metav1.ConditionUnknown || c.Reason != translate.DNSReasonPending {
		t.Errorf("policy deleted, not synced: %+v", c)
	}
	// app-managed, Conflicted before, now holds the route.
	as := out.DNSPolicies[nsName("default", "app-managed")]
	if len(as) != 1 || cond(as[0].Conditions, string(gwv1.PolicyConditionAccepted)).Status != metav1.ConditionTrue {
		t.Errorf("app-managed once alone: %+v", as)
	}
}

// TestDNSPolicyInvalidRecords: a records value the CRD refuses (read
// from a file in standalone mode) is Invalid and leaves nothing.
func TestDNSPolicyInvalidRecords(t *testing.T) {
	in := dnsInput(t, nil)
	for i, p := range in.DNSPolicies {
		if p.Name == "app-external" {
			c := p.DeepCopy()
			c.Spec.Records = "Elsewhere"
			in.DNSPolicies[i] = c
		}
	}
	out := translate.Translate(in)
	as := out.DNSPolicies[nsName("default", "app-external")]
	if len(as) != 1 {
		t.Fatalf("ancestors %+v", as)
	}
	if c := cond(as[0].Conditions, string(gwv1.PolicyConditionAccepted)); c == nil || c.Reason != string(gwv1.PolicyReasonInvalid) || !strings.Contains(c.Message, `"Elsewhere"`) {
		t.Errorf("Accepted %+v", c)
	}
	if got := unmanagedHosts(out); slices.Contains(got, "app.example.com") {
		t.Errorf("unmanaged hostnames %v", got)
	}
}

// TestDNSPolicyCacheSeesOtherRoutes: a route's DNS condition depends on
// policies naming other routes; a Cache must not reuse its remembered
// translation when a route added elsewhere leaves one of its hostnames
// to others.
func TestDNSPolicyCacheSeesOtherRoutes(t *testing.T) {
	states := map[string]translate.DNSState{"shared.example.com": cnameState, "app.example.com": unmanagedState}
	in := dnsInput(t, states)
	in.DNSPolicies = append(in.DNSPolicies, newUID(&v1alpha1.DNSPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "newcomer-external", CreationTimestamp: metav1.NewTime(goldenNow)},
		Spec: v1alpha1.DNSPolicySpec{Records: v1alpha1.DNSRecordsUnmanaged, TargetRefs: []gwv1.LocalPolicyTargetReferenceWithSectionName{{
			LocalPolicyTargetReference: gwv1.LocalPolicyTargetReference{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute", Name: "newcomer"}}}},
	}))
	cache := translate.NewCache()
	first := cache.Translate(in)
	// Statuses written back, so that the next translation is repeatable
	// and remembered.
	writeBackAll(&in.Snapshot, first)
	first = cache.Translate(in)
	if c := dnsCond(t, first, "shared"); c == nil || !strings.Contains(c.Message, "CNAME records point shared.example.com") {
		t.Fatalf("before: %+v", c)
	}
	var shared *gwv1.HTTPRoute
	for _, r := range in.HTTPRoutes {
		if r.Name == "shared" {
			shared = r
		}
	}
	newcomer := newUID(shared.DeepCopy())
	newcomer.Name, newcomer.Spec.Hostnames = "newcomer", []gwv1.Hostname{"shared.example.com"}
	newcomer.Spec.Rules[0].Matches[0].Path.Value = ptr("/newcomer")
	in.HTTPRoutes = append(slices.Clone(in.HTTPRoutes), newcomer)
	// The sync has not reported since: shared.example.com is pending.
	warm, cold := cache.Translate(in), translate.Translate(in)
	if got, want := render(t, warm), render(t, cold); string(got) != string(want) {
		t.Fatalf("with a Cache the output differs:\n%s", lineDiff(string(want), string(got)))
	}
	if c := dnsCond(t, warm, "shared"); c == nil || c.Reason != translate.DNSReasonPending || !strings.Contains(c.Message, "shared.example.com") {
		t.Errorf("after: %+v", c)
	}
}

// TestDNSPolicyStreamRoutes: a TCPRoute's and a TLSRoute's public
// hostnames are left to others like an HTTPRoute's, and still routed.
func TestDNSPolicyStreamRoutes(t *testing.T) {
	in := loadGolden(t, "streams.yaml")
	ref := func(kind, name string) gwv1.LocalPolicyTargetReferenceWithSectionName {
		return gwv1.LocalPolicyTargetReferenceWithSectionName{LocalPolicyTargetReference: gwv1.LocalPolicyTargetReference{
			Group: "gateway.networking.k8s.io", Kind: gwv1.Kind(kind), Name: gwv1.ObjectName(name)}}
	}
	in.DNSPolicies = []*v1alpha1.DNSPolicy{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "streams"},
		Spec: v1alpha1.DNSPolicySpec{Records: v1alpha1.DNSRecordsUnmanaged,
			TargetRefs: []gwv1.LocalPolicyTargetReferenceWithSectionName{ref("TCPRoute", "ssh"), ref("TLSRoute", "secure")}},
	}}
	out := translate.Translate(in)
	if got, want := unmanagedHosts(out), []string{"secure.example.com", "ssh.example.com"}; !slices.Equal(got, want) {
		t.Errorf("unmanaged hostnames %v, want %v", got, want)
	}
	for _, h := range out.Hostnames {
		if (h.Name == "secure.example.com" || h.Name == "ssh.example.com") && h.Stream == nil {
			t.Errorf("%s is no longer routed as a stream: %+v", h.Name, h)
		}
	}
	as := out.DNSPolicies[nsName("default", "streams")]
	if len(as) != 1 || !strings.Contains(cond(as[0].Conditions, string(gwv1.PolicyConditionAccepted)).Message, "secure.example.com, ssh.example.com") {
		t.Errorf("ancestors %+v", as)
	}
}
