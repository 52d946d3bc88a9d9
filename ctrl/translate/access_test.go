package translate_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// accessRules are the data-plane rules of a route, by the listeners they
// are served on.
func accessRules(out *translate.Output, ns, name string) map[string][]proxycfg.Rule {
	got := map[string][]proxycfg.Rule{}
	for _, r := range out.Config.Routes {
		if r.Namespace == ns && r.Name == name {
			got[strings.Join(r.Listeners, ",")] = r.Rules
		}
	}
	return got
}

func withoutPolicies(in *translate.Input, names ...string) *translate.Input {
	c := *in
	c.AccessPolicies = slices.DeleteFunc(slices.Clone(in.AccessPolicies), func(p *v1alpha1.AccessPolicy) bool {
		return slices.Contains(names, p.Name)
	})
	return &c
}

// steady is in with the statuses its translation writes, as a cluster
// has them once they are written: routes' translations are then
// remembered by a Cache.
func steady(in *translate.Input) *translate.Input {
	c := *in
	s := &c.Snapshot
	s.GatewayClasses, s.Gateways, s.HTTPRoutes = slices.Clone(s.GatewayClasses), slices.Clone(s.Gateways), slices.Clone(s.HTTPRoutes)
	s.GRPCRoutes, s.AccessPolicies = slices.Clone(s.GRPCRoutes), slices.Clone(s.AccessPolicies)
	writeBackAll(s, translate.Translate(&c))
	return &c
}

// Detaching the policies opens the routes again: no rule keeps an Access,
// the config carries no team, and the routes lose the condition; a Cache
// (whose remembered routes were protected) gives the same.
func TestAccessDetachOpens(t *testing.T) {
	in := steady(loadGolden(t, "access.yaml"))
	cache := translate.NewCache()
	for _, step := range []struct {
		name      string
		in        *translate.Input
		protected bool
	}{
		{"attached", in, true},
		{"detached", withoutPolicies(in, "gw-wide", "admin-listener", "gw-newer", "app-route", "app-private", "bad-headers", "rpc-policy", "lost", "docs-app"), false},
		{"attached again", in, true},
	} {
		for _, out := range []*translate.Output{translate.Translate(step.in), cache.Translate(step.in)} {
			for listeners, rules := range accessRules(out, "default", "shop") {
				for i, r := range rules {
					if (r.Access != nil) != step.protected {
						t.Errorf("%s: shop on %s rule %d: Access %+v", step.name, listeners, i, r.Access)
					}
				}
			}
			if (len(out.Config.AccessTeams) > 0) != step.protected {
				t.Errorf("%s: teams %v", step.name, out.Config.AccessTeams)
			}
			c := cond(out.HTTPRoutes[nsName("default", "shop")][0].Conditions, translate.ConditionAccessPolicyAffected)
			if (c != nil) != step.protected {
				t.Errorf("%s: shop's AccessPolicyAffected %+v", step.name, c)
			}
			if !step.protected && len(out.AccessPolicies) != 0 {
				t.Errorf("%s: %d policies have statuses", step.name, len(out.AccessPolicies))
			}
		}
	}
}

// A Gateway's policy that more specific ones replace on every rule is
// Overridden there; removing the most specific hands its rule back.
func TestAccessOverridden(t *testing.T) {
	in := loadGolden(t, "access.yaml")
	// Only route app and its two policies under the Gateway's policy.
	in.HTTPRoutes = slices.DeleteFunc(slices.Clone(in.HTTPRoutes), func(r *gwv1.HTTPRoute) bool { return r.Name != "app" })
	in.GRPCRoutes = nil
	in = withoutPolicies(in, "admin-listener", "bad-headers", "rpc-policy")
	out := translate.Translate(in)
	wide := out.AccessPolicies[nsName("default", "gw-wide")]
	if len(wide) != 1 {
		t.Fatalf("gw-wide ancestors %+v", wide)
	}
	if c := cond(wide[0].Conditions, "Programmed"); c == nil || c.Status != "False" || c.Reason != "Overridden" ||
		!strings.Contains(c.Message, "default/app-private, default/app-route") {
		t.Errorf("gw-wide Programmed %+v, want False Overridden naming both", c)
	}
	rules := accessRules(out, "default", "app")["default/gw/http"]
	if len(rules) != 2 || rules[0].Access.Emails != nil || !slices.Equal(rules[1].Access.Emails, []string{"ada@example.com"}) {
		t.Fatalf("app's rules %+v", rules)
	}

	out = translate.Translate(withoutPolicies(in, "app-private"))
	rules = accessRules(out, "default", "app")["default/gw/http"]
	if rules[1].Access == nil || rules[1].Access.Emails != nil || !slices.Equal(rules[1].Access.EmailDomains, []string{"example.com"}) {
		t.Errorf("without app-private, rule private has %+v, want app-route's", rules[1].Access)
	}
	out = translate.Translate(withoutPolicies(in, "app-private", "app-route"))
	rules = accessRules(out, "default", "app")["default/gw/http"]
	for i, r := range rules {
		if r.Access == nil || !slices.Equal(r.Access.Audiences, []string{"aud-gateway"}) {
			t.Errorf("with the Gateway's alone, rule %d has %+v", i, r.Access)
		}
	}
	if c := cond(out.AccessPolicies[nsName("default", "gw-wide")][0].Conditions, "Programmed"); c.Reason != "Programmed" {
		t.Errorf("gw-wide Programmed %+v", c)
	}
}

// The oldest policy on a target applies; the newer takes over when it is
// gone.
func TestAccessOldestWins(t *testing.T) {
	in := loadGolden(t, "access.yaml")
	out := translate.Translate(withoutPolicies(in, "gw-wide"))
	for _, r := range accessRules(out, "default", "shop")["default/gw/http"] {
		if r.Access == nil || !slices.Equal(r.Access.Audiences, []string{"aud-other"}) {
			t.Errorf("without gw-wide, shop has %+v, want gw-newer's", r.Access)
		}
	}
	if c := cond(out.AccessPolicies[nsName("default", "gw-newer")][0].Conditions, "Accepted"); c.Status != "True" {
		t.Errorf("gw-newer Accepted %+v", c)
	}
}

// A policy with spec.application takes the audience tags the Cloudflare
// sync reports for its application, beside its own audiences, and says
// how the application stands under each Gateway; a Cache sees the tag
// arrive.
func TestAccessApplicationAudience(t *testing.T) {
	in := steady(loadGolden(t, "access.yaml"))
	cache := translate.NewCache()
	withTunnel := func(st *translate.AccessAppState) *translate.Input {
		c := *in
		ts := &translate.TunnelState{ID: "tunnel-id"}
		if st != nil {
			ts.AccessApps = map[string]translate.AccessAppState{"default/docs-app": *st}
		}
		c.Tunnels = map[string]*translate.TunnelState{"tunnelgate": ts}
		return &c
	}
	for _, step := range []struct {
		name        string
		in          *translate.Input
		audiences   []string // nil: the rule answers 503
		cond, state string
	}{
		{"no tunnel", in, nil, "False", "NoTunnel"},
		{"being made", withTunnel(nil), nil, "False", "Pending"},
		{"refused", withTunnel(&translate.AccessAppState{Problem: "access.api.error.invalid_request"}), nil, "False", "ApplicationFailed"},
		{"made", withTunnel(&translate.AccessAppState{AUD: "aud-made"}), []string{"aud-made"}, "True", "ApplicationProgrammed"},
		{"a change refused, the tag kept", withTunnel(&translate.AccessAppState{AUD: "aud-made", Problem: "429"}), []string{"aud-made"}, "True", "ApplicationProgrammed"},
		{"gone again", withTunnel(nil), nil, "False", "Pending"},
	} {
		for _, out := range []*translate.Output{translate.Translate(step.in), cache.Translate(step.in)} {
			rules := accessRules(out, "default", "docs")["default/gw/http"]
			if len(rules) != 1 {
				t.Fatalf("%s: docs rules %+v", step.name, rules)
			}
			r := rules[0]
			switch {
			case step.audiences == nil && (r.Access != nil || r.FailStatus != 503):
				t.Errorf("%s: rule %+v, want 503 without Access", step.name, r)
			case step.audiences != nil && (r.Access == nil || !slices.Equal(r.Access.Audiences, step.audiences) || r.FailStatus != 0):
				t.Errorf("%s: rule %+v, want Access for %v", step.name, r, step.audiences)
			}
			anc := out.AccessPolicies[nsName("default", "docs-app")]
			if len(anc) != 1 {
				t.Fatalf("%s: ancestors %+v", step.name, anc)
			}
			c := cond(anc[0].Conditions, translate.AccessConditionApplicationReady)
			if c == nil || string(c.Status) != step.cond || c.Reason != step.state {
				t.Errorf("%s: ApplicationReady %+v, want %s %s", step.name, c, step.cond, step.state)
			}
			if len(out.AccessApps) != 1 || !slices.Equal(out.AccessApps[0].Hostnames, []string{"docs.example.com", "wiki.example.com"}) {
				t.Errorf("%s: applications asked for %+v", step.name, out.AccessApps)
			}
		}
	}
}

// TestRouteAddBesideAccessPoliciesPatched adds and deletes routes while
// AccessPolicies exist: a route on a Gateway no policy names is patched
// in and out (nothing any policy counts or protects changes), one on a
// Gateway a policy names is left to a full translation (the policy's
// counts and application change), as is the translation after it, which
// took the clock for the new route's conditions. Each output equals a
// cold one.
func TestRouteAddBesideAccessPoliciesPatched(t *testing.T) {
	in := loadGolden(t, "access.yaml")
	cloneLists(&in.Snapshot)
	s := &in.Snapshot
	open := newUID(s.Gateways[0].DeepCopy())
	open.Name = "open"
	open.Spec.Listeners = []gwv1.Listener{{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80, Hostname: ptr(gwv1.Hostname("*.open.example.net"))}}
	s.Gateways = append(s.Gateways, open)
	writeBackAll(s, translate.Translate(in))
	cache := translate.NewCache()
	cache.Translate(in)
	routes := slices.Clone(s.HTTPRoutes)
	step := func(name string, list []*gwv1.HTTPRoute, wantPatched bool) {
		t.Helper()
		s.HTTPRoutes = list
		cold, warm := translate.Translate(in), cache.Translate(in)
		if got, want := render(t, warm), render(t, cold); string(got) != string(want) {
			t.Fatalf("%s: with a Cache the output differs:\n%s", name, lineDiff(string(want), string(got)))
		}
		if translate.Patched(cache) != wantPatched {
			t.Errorf("%s: patched %v, want %v", name, translate.Patched(cache), wantPatched)
		}
	}
	for _, gw := range []string{"open", "gw"} {
		r := newUID(routes[0].DeepCopy())
		r.Name, r.Status = "added-on-"+gw, gwv1.HTTPRouteStatus{}
		r.CreationTimestamp = metav1.NewTime(r.CreationTimestamp.Add(time.Hour)) // the newest
		r.Spec.ParentRefs = []gwv1.ParentReference{{Name: gwv1.ObjectName(gw)}}
		r.Spec.Hostnames = []gwv1.Hostname{gwv1.Hostname("added." + gw + ".example.net")}
		if gw == "gw" {
			r.Spec.Hostnames = []gwv1.Hostname{"added.example.com"}
		}
		step("a route added on "+gw, append(slices.Clip(routes), r), gw == "open")
		w := newRV(r.DeepCopy())
		w.Status.Parents = translate.Translate(in).HTTPRoutes[nsName(r.Namespace, r.Name)]
		step("its status written", append(slices.Clip(routes), w), gw == "open") // after a full translation that took the clock, a full one
		step("the route deleted from "+gw, routes, gw == "open")
	}
}
