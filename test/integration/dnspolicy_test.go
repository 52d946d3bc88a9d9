// This file tests DNSPolicy end to end: the API server, the controller
// and the Cloudflare fake.

package integration_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/test/cffake"
	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

// A DNSPolicy leaves two routes' hostnames to others: tunnelgate's
// records there go, a foreign record stays (also once dns.takeover is
// turned on), the other route's records are untouched, the ingress
// document still routes every hostname, and the routes, the policy and
// the Gateway say so. The policy deleted, tunnelgate makes the records
// again.
func TestDNSPolicyLeavesRecordsToOthers(t *testing.T) {
	env := shared.Env(t)
	cl := newClients(t, env)
	ctx := context.Background()
	ns := env.Namespace(t)
	const apiToken = "integration-api-token"
	f := cffake.New(cffake.Options{Token: apiToken})
	t.Cleanup(f.Close)
	f.AddAccount("acc", "Integration")
	f.AddZone("zone", "example.com", "acc")
	// external-dns's record for one of the hostnames.
	f.AddRecord("zone", cffake.Record{Type: "A", Name: "lb.example.com", Content: "192.0.2.7", TTL: 1})

	controllerName := "tunnelgate.dev/test-" + ns
	addr := netns.Addr(81).String()
	fixture.Backend(t, addr+":8080", "dnspolicy")
	route := func(name, host string) string {
		return fmt.Sprintf(`---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %s, namespace: %s}
spec:
  parentRefs: [{name: gw}]
  hostnames: [%s]
  rules: [{backendRefs: [{name: app, port: 80}]}]
`, name, ns, host)
	}
	class := func(takeover bool) string {
		return fixture.CloudflareClassYAML(ns, apiToken, ns, fmt.Sprintf("{enabled: true, takeover: %v, zones: [example.com]}", takeover))
	}
	objects := class(false) + fixture.ClassYAML(ns, controllerName, ns) + "---\n" + fixture.GatewayYAML(ns, "gw", ns, fixture.HTTP80) +
		fixture.AppBackend(ns, addr) + route("app", "app.example.com") + route("ext", "ext.example.com") + route("lb", "lb.example.com")
	if err := env.Apply(ctx, []byte(objects)); err != nil {
		t.Fatal(err)
	}
	startControllerOpts(t, cl, controllerName, ctlOpts{syncInterval: 20 * time.Millisecond, cloudflare: f.URL()})

	gwAPI := cl.gw.GatewayV1()
	dnsCond := func(route string, status metav1.ConditionStatus, reason string) func() (bool, string) {
		return func() (bool, string) {
			r, err := gwAPI.HTTPRoutes(ns).Get(ctx, route, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if len(r.Status.Parents) == 0 {
				return false, "no status"
			}
			return condIs(r.Status.Parents[0].Conditions, translate.RouteConditionDNSRecords, status, reason)
		}
	}
	all := func(conds ...func() (bool, string)) func() (bool, string) {
		return func() (bool, string) {
			for _, c := range conds {
				if ok, why := c(); !ok {
					return false, why
				}
			}
			return true, ""
		}
	}
	eventually(t, 30*time.Second, "app's and ext's records ready, lb's foreign record reported", all(
		dnsCond("app", metav1.ConditionTrue, translate.DNSReasonReady), dnsCond("ext", metav1.ConditionTrue, translate.DNSReasonReady),
		dnsCond("lb", metav1.ConditionFalse, translate.DNSReasonForeignRecord)))
	var id string
	for _, tn := range f.Tunnels("acc") {
		if tn.Name == ns {
			id = tn.ID
		}
	}
	recs := zoneRecords(f)
	if recs["CNAME ext.example.com"] != id+".cfargotunnel.com" || recs["TXT _tunnelgate.ext.example.com"] == "" {
		t.Fatalf("before the policy: records %v", recs)
	}

	policy := fmt.Sprintf(`---
apiVersion: tunnelgate.dev/v1alpha1
kind: DNSPolicy
metadata: {name: external-dns, namespace: %s}
spec:
  targetRefs:
  - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: ext}
  - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: lb}
  records: Unmanaged
`, ns)
	if err := env.Apply(ctx, []byte(policy)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "ext and lb left to others", all(
		dnsCond("ext", metav1.ConditionTrue, translate.DNSReasonUnmanaged), dnsCond("lb", metav1.ConditionTrue, translate.DNSReasonUnmanaged)))
	r, _ := gwAPI.HTTPRoutes(ns).Get(ctx, "ext", metav1.GetOptions{})
	if c := findCond(r.Status.Parents[0].Conditions, translate.RouteConditionDNSRecords); !strings.Contains(c.Message, "DNS for ext.example.com is left to others by DNSPolicy "+ns+"/external-dns") {
		t.Errorf("ext's DNS condition: %q", c.Message)
	}
	recs = zoneRecords(f)
	for _, k := range []string{"CNAME ext.example.com", "TXT _tunnelgate.ext.example.com", "CNAME lb.example.com", "TXT _tunnelgate.lb.example.com"} {
		if v, ok := recs[k]; ok {
			t.Errorf("%s is still there (%s): %v", k, v, recs)
		}
	}
	if recs["A lb.example.com"] != "192.0.2.7" || recs["CNAME app.example.com"] != id+".cfargotunnel.com" || recs["TXT _tunnelgate.app.example.com"] == "" {
		t.Errorf("a record not left to others was touched: %v", recs)
	}
	if got := ingressHosts(t, f, id); !slices.Equal(got, []string{"app.example.com", "ext.example.com", "lb.example.com", ""}) {
		t.Errorf("ingress hostnames %q", got)
	}
	dyn := cl.dyn.Resource(v1alpha1.SchemeGroupVersion.WithResource("dnspolicies")).Namespace(ns)
	eventually(t, 30*time.Second, "the policy accepted on the Gateway, which says it is affected", func() (bool, string) {
		u, err := dyn.Get(ctx, "external-dns", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var p v1alpha1.DNSPolicy
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
			return false, err.Error()
		}
		if len(p.Status.Ancestors) != 1 || p.Status.Ancestors[0].AncestorRef.Name != "gw" {
			return false, fmt.Sprintf("ancestors %+v", p.Status.Ancestors)
		}
		if ok, why := condIs(p.Status.Ancestors[0].Conditions, "Accepted", metav1.ConditionTrue, "Accepted"); !ok {
			return false, why
		}
		g, err := gwAPI.Gateways(ns).Get(ctx, "gw", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return condIs(g.Status.Conditions, translate.ConditionDNSPolicyAffected, metav1.ConditionTrue, translate.DNSReasonUnmanaged)
	})

	// external-dns writes its own record for ext; dns.takeover is turned
	// on, and a new hostname whose foreign record it replaces shows a
	// DNS pass with takeover on was made: it left ext's and lb's alone.
	f.AddRecord("zone", cffake.Record{Type: "CNAME", Name: "ext.example.com", Content: "ext-lb.example.net", TTL: 1})
	f.AddRecord("zone", cffake.Record{Type: "A", Name: "more.example.com", Content: "192.0.2.8", TTL: 1})
	if err := env.Apply(ctx, []byte(class(true)+route("more", "more.example.com"))); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "more's records ready, the foreign one taken over", dnsCond("more", metav1.ConditionTrue, translate.DNSReasonReady))
	recs = zoneRecords(f)
	if recs["CNAME ext.example.com"] != "ext-lb.example.net" || recs["A lb.example.com"] != "192.0.2.7" {
		t.Errorf("the other manager's records were touched: %v", recs)
	}

	// The policy deleted: tunnelgate manages them again (takeover on:
	// the others' records are replaced).
	if err := dyn.Delete(ctx, "external-dns", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "ext's and lb's records back", all(
		dnsCond("ext", metav1.ConditionTrue, translate.DNSReasonReady), dnsCond("lb", metav1.ConditionTrue, translate.DNSReasonReady)))
	recs = zoneRecords(f)
	for _, h := range []string{"ext.example.com", "lb.example.com"} {
		if recs["CNAME "+h] != id+".cfargotunnel.com" || recs["TXT _tunnelgate."+h] == "" {
			t.Errorf("%s: records %v", h, recs)
		}
	}
	if _, ok := recs["A lb.example.com"]; ok {
		t.Errorf("takeover kept the A record: %v", recs)
	}
	g, _ := gwAPI.Gateways(ns).Get(ctx, "gw", metav1.GetOptions{})
	if c := findCond(g.Status.Conditions, translate.ConditionDNSPolicyAffected); c != nil {
		t.Errorf("the Gateway still says %+v", c)
	}
}

// The API server defaults a DNSPolicy's records to Managed and refuses
// what the CRD's rules refuse.
func TestDNSPolicyCRD(t *testing.T) {
	env := shared.Env(t)
	cl := newClients(t, env)
	ctx := context.Background()
	ns := env.Namespace(t)
	policy := func(name, targets, rest string) []byte {
		return []byte(fmt.Sprintf(`apiVersion: tunnelgate.dev/v1alpha1
kind: DNSPolicy
metadata: {name: %s, namespace: %s}
spec:
  targetRefs: %s
%s`, name, ns, targets, rest))
	}
	const route = "[{group: gateway.networking.k8s.io, kind: HTTPRoute, name: app}]"
	if err := env.Apply(ctx, policy("plain", route, "")); err != nil {
		t.Fatal(err)
	}
	u, err := cl.dyn.Resource(v1alpha1.SchemeGroupVersion.WithResource("dnspolicies")).Namespace(ns).Get(ctx, "plain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var p v1alpha1.DNSPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
		t.Fatal(err)
	}
	if p.Spec.Records != v1alpha1.DefaultDNSRecords {
		t.Errorf("records defaulted to %q, want %q", p.Spec.Records, v1alpha1.DefaultDNSRecords)
	}
	for _, bad := range []struct{ targets, rest string }{
		{route, "  records: Elsewhere\n"},
		{"[]", "  records: Unmanaged\n"},
		{"[{group: gateway.networking.k8s.io, kind: HTTPRoute, name: app, sectionName: rule}]", ""},
		{"[{group: gateway.networking.k8s.io, kind: Service, name: app}]", ""},
		{"[{group: gateway.networking.k8s.io, kind: HTTPRoute, name: app}, {group: gateway.networking.k8s.io, kind: HTTPRoute, name: app}]", ""},
	} {
		if err := env.Apply(ctx, policy("bad", bad.targets, bad.rest)); err == nil {
			t.Errorf("the API server took targets %s %s", bad.targets, bad.rest)
		}
	}
}
