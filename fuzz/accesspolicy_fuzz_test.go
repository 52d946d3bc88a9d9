package fuzz

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/standalone"
	"github.com/tunnelgate/tunnelgate/test/fixture"
)

// FuzzAccessPolicy decodes an AccessPolicy as standalone mode reads one
// from a file (strictly, as the API server with strict field validation)
// and translates it beside a Gateway and a route it may target. Whatever
// the policy says, translate must not panic and must emit a config the
// proxy takes; and when the policy is Accepted on the route, none of the
// route's rules may be served open: each carries an Access or answers
// 500.
func FuzzAccessPolicy(f *testing.F) {
	for _, seed := range []string{
		accessPolicySeed(`[{group: gateway.networking.k8s.io, kind: HTTPRoute, name: app}]`, `example.cloudflareaccess.com`, `[aud]`, ``),
		accessPolicySeed(`[{group: gateway.networking.k8s.io, kind: HTTPRoute, name: app, sectionName: admin}]`, `example.cloudflareaccess.com`, `[aud]`,
			`require: {emails: [a@example.com], groups: [g]}`),
		accessPolicySeed(`[{group: gateway.networking.k8s.io, kind: Gateway, name: gw, sectionName: http}]`, `example.cloudflareaccess.com`, `[aud]`,
			`identityHeaders: {email: X-Email, subject: X-Email}`),
		accessPolicySeed(`[{group: gateway.networking.k8s.io, kind: HTTPRoute, name: app}]`, `example.cloudflareaccess.com`, `[aud]`,
			`identityHeaders: {email: Host}`),
		accessPolicySeed(`[{group: gateway.networking.k8s.io, kind: HTTPRoute, name: app}]`, `evil.example`, `[]`, ``),
		accessPolicySeed(`[]`, ``, `[""]`, `require: {}`),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, policy []byte) {
		snap, err := standalone.LoadBytes("fuzz.yaml", append([]byte(accessObjects), policy...))
		if err != nil {
			return
		}
		out := translate.Translate(&translate.Input{Snapshot: *snap, ControllerName: translate.DefaultControllerName,
			Now: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC), AnyEndpointAddress: true,
			AccessKeys: map[string]*translate.AccessKeys{"example.cloudflareaccess.com": {Problem: "not fetched in a fuzz test"}}})
		p := quietProxy()
		defer p.Close()
		if err := p.Load(&out.Config); err != nil {
			t.Fatalf("the proxy refuses the config: %v", err)
		}
		for _, ps := range out.AccessPolicies {
			accepted := slices.ContainsFunc(ps, func(a gwv1.PolicyAncestorStatus) bool {
				return slices.ContainsFunc(a.Conditions, func(c metav1.Condition) bool { return c.Type == "Accepted" && c.Status == "True" })
			})
			if !accepted {
				continue
			}
			for _, r := range out.Config.Routes {
				for i, ru := range r.Rules {
					if r.Name == "app" && ru.Access == nil && ru.FailStatus == 0 && protectsApp(snap) {
						t.Fatalf("rule %d of app is open under an accepted policy", i)
					}
				}
			}
		}
	})
}

// protectsApp says whether every rule of route app is a target of the
// policy: the whole route or the Gateway.
func protectsApp(snap *translate.Snapshot) bool {
	for _, p := range snap.AccessPolicies {
		for _, tr := range p.Spec.TargetRefs {
			whole := tr.SectionName == nil || *tr.SectionName == ""
			if string(tr.Group) == gwv1.GroupName && whole && (string(tr.Kind) == "HTTPRoute" && tr.Name == "app" || string(tr.Kind) == "Gateway" && tr.Name == "gw") {
				return true
			}
		}
	}
	return false
}

func accessPolicySeed(targets, team, audiences, extra string) string {
	return "apiVersion: tunnelgate.dev/v1alpha1\nkind: AccessPolicy\nmetadata: {name: p}\nspec:\n  targetRefs: " + targets +
		"\n  teamDomain: " + team + "\n  audiences: " + audiences + "\n  " + extra + "\n"
}

// accessObjects are what a fuzzed policy may target: Gateway gw (listener
// http) and route app (rules admin and an unnamed one), ending with a
// document separator.
var accessObjects = fixture.ClassYAML("tunnelgate", "tunnelgate.dev/controller", "") + "---\n" +
	fixture.GatewayYAML("", "gw", "tunnelgate", fixture.HTTP80) + `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app}
spec:
  parentRefs: [{name: gw}]
  rules:
  - name: admin
    matches: [{path: {type: PathPrefix, value: /admin}}]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier: {set: [{name: X-Email, value: x}]}
    backendRefs: [{name: app, port: 80}]
  - backendRefs: [{name: app, port: 80}]
---
`

// TestAccessPolicySeedLoads keeps the first seed meaningful: it decodes,
// and protects both of app's rules.
func TestAccessPolicySeedLoads(t *testing.T) {
	seed := accessPolicySeed(`[{group: gateway.networking.k8s.io, kind: HTTPRoute, name: app}]`, `example.cloudflareaccess.com`, `[aud]`, ``)
	snap, err := standalone.LoadBytes("seed.yaml", []byte(accessObjects+seed))
	if err != nil {
		t.Fatal(err)
	}
	out := translate.Translate(&translate.Input{Snapshot: *snap, ControllerName: translate.DefaultControllerName, AnyEndpointAddress: true})
	n := 0
	for _, r := range out.Config.Routes {
		for _, ru := range r.Rules {
			if ru.Access != nil {
				n++
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d rules protected, want 2: %+v", n, out.Config.Routes)
	}
}
