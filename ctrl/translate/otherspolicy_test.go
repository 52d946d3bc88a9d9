// This file tests that policies leave other controllers' targets alone.

package translate_test

import (
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/standalone"
)

// othersObjects are another controller's GatewayClass, Gateway and
// ListenerSet, routes only they accept, and a route of ours (it names gw,
// a listener gw lacks) that names their Gateway too.
const othersObjects = `
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: theirs}
spec:
  controllerName: example.com/other-controller
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: their-gw}
spec:
  gatewayClassName: theirs
  listeners:
  - {name: web, protocol: HTTP, port: 80}
---
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {name: their-set}
spec:
  parentRef: {name: their-gw}
  listeners:
  - {name: extra, protocol: HTTP, port: 80, hostname: extra.example.org}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: their-route}
spec:
  parentRefs:
  - name: their-gw
  hostnames: [mix.example.com]
  rules:
  - backendRefs:
    - {name: app, port: 80}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: their-set-route}
spec:
  parentRefs:
  - {kind: ListenerSet, name: their-set}
  rules:
  - backendRefs:
    - {name: app, port: 80}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: straddling}
spec:
  parentRefs:
  - {name: gw, sectionName: nosuch}
  - name: their-gw
  hostnames: [mix.example.com]
  rules:
  - backendRefs:
    - {name: app, port: 80}
`

// The targets of the mixed policies below: another controller's, and
// not found.
const mixedTargets = `
  - {group: gateway.networking.k8s.io, kind: Gateway, name: their-gw}
  - {group: gateway.networking.k8s.io, kind: Gateway, name: their-gw, sectionName: web}
  - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: their-route}
  - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: their-set-route}
  - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: straddling}
  - {group: gateway.networking.k8s.io, kind: Gateway, name: nowhere}
  - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: gone}
`

// Policies of each kind: "mixed" names a target of ours (gw), another
// controller's and absent ones; "theirs" names only another controller's.
var othersPolicies = map[string]string{
	"access.yaml": `
---
apiVersion: tunnelgate.dev/v1alpha1
kind: AccessPolicy
metadata: {name: mixed}
spec:
  teamDomain: example.cloudflareaccess.com
  audiences: [aud-mixed]
  targetRefs:
  - {group: gateway.networking.k8s.io, kind: Gateway, name: gw, sectionName: http}` + mixedTargets + `
---
apiVersion: tunnelgate.dev/v1alpha1
kind: AccessPolicy
metadata: {name: theirs}
spec:
  teamDomain: example.cloudflareaccess.com
  audiences: [aud-theirs]
  targetRefs:
  - {group: gateway.networking.k8s.io, kind: Gateway, name: their-gw}
  - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: their-route}
`,
	"loadbalancing.yaml": `
---
apiVersion: tunnelgate.dev/v1alpha1
kind: LoadBalancingPolicy
metadata: {name: mixed}
spec:
  hostname: mix.example.com
  pool: mixed
  targetRefs:
  - {group: gateway.networking.k8s.io, kind: Gateway, name: gw, sectionName: web}` + mixedTargets + `
---
apiVersion: tunnelgate.dev/v1alpha1
kind: LoadBalancingPolicy
metadata: {name: theirs}
spec:
  hostname: mix.example.com
  pool: theirs
  targetRefs:
  - {group: gateway.networking.k8s.io, kind: Gateway, name: their-gw}
  - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: their-route}
`,
	"dnspolicy.yaml": `
---
apiVersion: tunnelgate.dev/v1alpha1
kind: DNSPolicy
metadata: {name: mixed}
spec:
  records: Unmanaged
  targetRefs:
  - {group: gateway.networking.k8s.io, kind: Gateway, name: gw, sectionName: web}` + mixedTargets + `
---
apiVersion: tunnelgate.dev/v1alpha1
kind: DNSPolicy
metadata: {name: theirs}
spec:
  records: Unmanaged
  targetRefs:
  - {group: gateway.networking.k8s.io, kind: Gateway, name: their-gw}
  - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: their-route}
`,
}

// othersInput is a golden input with othersObjects and the kind's
// policies; prev, when given, is set as every policy's status first.
func othersInput(t *testing.T, golden string, prev []gwv1.PolicyAncestorStatus) *translate.Input {
	data, err := os.ReadFile("testdata/golden/" + golden)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, othersObjects+othersPolicies[golden]...)
	snap, err := standalone.LoadBytes(golden, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range snap.AccessPolicies {
		p.Status.Ancestors = prev
	}
	for _, p := range snap.LoadBalancingPolicies {
		p.Status.Ancestors = prev
	}
	for _, p := range snap.DNSPolicies {
		p.Status.Ancestors = prev
	}
	return goldenInput(snap)
}

// policyOut is the ancestors translate gives policy default/name of the
// golden input's kind, and whether it gave it any.
func policyOut(out *translate.Output, golden, name string) ([]gwv1.PolicyAncestorStatus, bool) {
	m := map[string]map[types.NamespacedName][]gwv1.PolicyAncestorStatus{
		"access.yaml":        out.AccessPolicies,
		"loadbalancing.yaml": out.LoadBalancingPolicies,
		"dnspolicy.yaml":     out.DNSPolicies,
	}[golden]
	a, ok := m[nsName("default", name)]
	return a, ok
}

func ancestorName(a gwv1.PolicyAncestorStatus) string {
	s := string(*a.AncestorRef.Kind) + " " + string(a.AncestorRef.Name)
	if a.AncestorRef.SectionName != nil {
		s += "/" + string(*a.AncestorRef.SectionName)
	}
	return s
}

// A policy's targets of another controller (its Gateway, a route only
// its Gateways accept, through a ListenerSet too) get no ancestor status
// of ours; its targets of ours, those not found and a route of ours that
// no Gateway of ours accepts still do.
func TestPoliciesLeaveOthersTargets(t *testing.T) {
	for golden := range othersPolicies {
		t.Run(strings.TrimSuffix(golden, ".yaml"), func(t *testing.T) {
			out := translate.Translate(othersInput(t, golden, nil))
			mixed, ok := policyOut(out, golden, "mixed")
			if !ok {
				t.Fatal("no status for the mixed policy")
			}
			got := map[string]*metav1.Condition{}
			for _, a := range mixed {
				if string(a.ControllerName) != translate.DefaultControllerName {
					t.Errorf("ancestor %s under controller %s", ancestorName(a), a.ControllerName)
				}
				got[ancestorName(a)] = cond(a.Conditions, "Accepted")
			}
			for name := range got {
				if strings.Contains(name, "their") {
					t.Errorf("an ancestor status for another controller's target %s: %+v", name, got[name])
				}
			}
			ours := "Gateway gw/web"
			if golden == "access.yaml" {
				ours = "Gateway gw/http"
			}
			if c := got[ours]; c == nil {
				t.Errorf("no ancestor status for the target of ours %s: %v", ours, got)
			}
			for _, name := range []string{"Gateway nowhere", "HTTPRoute gone", "HTTPRoute straddling"} {
				if c := got[name]; c == nil || c.Reason != string(gwv1.PolicyReasonTargetNotFound) {
					t.Errorf("%s: Accepted %+v, want TargetNotFound", name, c)
				}
			}
			if len(got) != 4 {
				t.Errorf("ancestors %v, want %s and the three not found", got, ours)
			}
			theirs, ok := policyOut(out, golden, "theirs")
			if !ok || len(theirs) != 0 {
				t.Errorf("the policy of another controller's targets only: %+v (given %v), want no ancestors of ours", theirs, ok)
			}
		})
	}
}

// An ancestor status of ours for a target that became another
// controller's (it said TargetNotFound when the Gateway was of no known
// class) is not written again: our entries are replaced whole, and
// another controller's are left as they are.
func TestPoliciesDropOldAncestorsOfOthersTargets(t *testing.T) {
	at := metav1.NewTime(goldenNow.Add(-60 * 60 * 1e9))
	gw := gwv1.ParentReference{Group: ptr(gwv1.Group(gwv1.GroupName)), Kind: ptr(gwv1.Kind("Gateway")),
		Namespace: ptr(gwv1.Namespace("default")), Name: "their-gw"}
	prev := []gwv1.PolicyAncestorStatus{
		{AncestorRef: gw, ControllerName: translate.DefaultControllerName, Conditions: []metav1.Condition{{
			Type: "Accepted", Status: metav1.ConditionFalse, Reason: string(gwv1.PolicyReasonTargetNotFound), LastTransitionTime: at}}},
		{AncestorRef: gw, ControllerName: "example.com/other-controller", Conditions: []metav1.Condition{{
			Type: "Accepted", Status: metav1.ConditionTrue, Reason: string(gwv1.PolicyReasonAccepted), LastTransitionTime: at}}},
	}
	for golden := range othersPolicies {
		t.Run(strings.TrimSuffix(golden, ".yaml"), func(t *testing.T) {
			in := othersInput(t, golden, prev)
			// Before: their-gw's class is not in the snapshot, so the
			// Gateway is nobody's and not found.
			before := *in
			before.GatewayClasses = nil
			for _, gc := range in.GatewayClasses {
				if gc.Name != "theirs" {
					before.GatewayClasses = append(before.GatewayClasses, gc)
				}
			}
			old, _ := policyOut(translate.Translate(&before), golden, "theirs")
			if len(old) == 0 || cond(old[0].Conditions, "Accepted").Reason != string(gwv1.PolicyReasonTargetNotFound) {
				t.Fatalf("without its class, their-gw: %+v, want TargetNotFound", old)
			}
			out := translate.Translate(in)
			now, ok := policyOut(out, golden, "theirs")
			if !ok || len(now) != 0 {
				t.Errorf("ancestors %+v, want none of ours (the old one removed)", now)
			}
			if ch := translate.Diff(translate.Translate(&before), out); !hasKey(ch, golden, nsName("default", "theirs")) {
				t.Errorf("Diff %+v does not list the policy: its old ancestor would stay", ch)
			}
		})
	}
}

func hasKey(ch translate.Changes, golden string, k types.NamespacedName) bool {
	list := map[string][]types.NamespacedName{
		"access.yaml":        ch.AccessPolicies,
		"loadbalancing.yaml": ch.LoadBalancingPolicies,
		"dnspolicy.yaml":     ch.DNSPolicies,
	}[golden]
	for _, x := range list {
		if x == k {
			return true
		}
	}
	return false
}
