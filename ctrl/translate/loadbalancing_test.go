package translate_test

import (
	"io"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/standalone"
)

// lbInput is the loadbalancing golden input, with the given states
// reported by the sync of class tunnelgate's tunnel.
func lbInput(t *testing.T, states map[string]translate.LBState) *translate.Input {
	t.Helper()
	const file = "testdata/golden/loadbalancing.yaml"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := standalone.LoadBytes(file, data)
	if err != nil {
		t.Fatal(err)
	}
	in := goldenInput(snap)
	in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "tunnel-id", LoadBalancers: states}}
	return in
}

// healthChecks are the config's listeners' health checks, by listener
// hostname.
func healthChecks(out *translate.Output) map[string]proxycfg.HealthCheck {
	got := map[string]proxycfg.HealthCheck{}
	for _, l := range out.Config.Listeners {
		if l.HealthCheck != nil {
			got[l.Hostname] = *l.HealthCheck
		}
	}
	return got
}

// lbReady is a policy's LoadBalancerReady condition under its first
// ancestor.
func lbReady(t *testing.T, out *translate.Output, name string) *metav1.Condition {
	t.Helper()
	as := out.LoadBalancingPolicies[nsName("default", name)]
	if len(as) == 0 {
		t.Fatalf("%s has no ancestors", name)
	}
	return meta.FindStatusCondition(as[0].Conditions, translate.LBConditionReady)
}

const (
	appToken  = "app-token-0123456789"
	shopToken = "shop-token-0123456789"
)

func TestLoadBalancingHealthChecks(t *testing.T) {
	out := translate.Translate(lbInput(t, map[string]translate.LBState{
		"default/app-lb":  {Ready: true, HealthToken: appToken, Origins: 2},
		"default/shop-lb": {Ready: true, HealthToken: shopToken, Origins: 1},
	}))
	// Listener web publishes both hostnames: it answers the older
	// policy's monitor; listener other publishes neither.
	want := map[string]proxycfg.HealthCheck{
		"*.example.com": {Path: "/healthz/lb", Header: translate.LBHealthHeader, Token: appToken},
	}
	if got := healthChecks(out); !reflect.DeepEqual(got, want) {
		t.Errorf("health checks %+v, want %+v", got, want)
	}
	p := dataplane.New(dataplane.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Close()
	if err := p.Load(&out.Config); err != nil {
		t.Errorf("the data plane refuses the config: %v", err)
	}
	c := lbReady(t, out, "app-lb")
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "pool eu-west (2 origins)") {
		t.Errorf("app-lb: %+v", c)
	}
	c = lbReady(t, out, "shop-lb")
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "monitor of default/app-lb instead") {
		t.Errorf("shop-lb: %+v", c)
	}
	// The Conflicted policy and the one without a tunnel are asked
	// nothing.
	var asked []string
	for _, lb := range out.LoadBalancers {
		asked = append(asked, lb.Policy)
	}
	if want := []string{"default/app-lb", "default/shop-lb"}; !reflect.DeepEqual(asked, want) {
		t.Errorf("load balancers asked for %v, want %v", asked, want)
	}
}

func TestLoadBalancingNotReady(t *testing.T) {
	for _, tc := range []struct {
		name   string
		state  *translate.LBState
		reason string
	}{
		{"not reported", nil, translate.LBReasonPending},
		{"not entitled", &translate.LBState{Reason: translate.LBReasonNotEntitled, Message: "Load Balancing is not enabled on the account"}, translate.LBReasonNotEntitled},
		{"foreign", &translate.LBState{Reason: translate.LBReasonForeignOwner, Message: "the load balancer is not tunnelgate's", HealthToken: appToken}, translate.LBReasonForeignOwner},
	} {
		t.Run(tc.name, func(t *testing.T) {
			states := map[string]translate.LBState{}
			if tc.state != nil {
				states["default/app-lb"] = *tc.state
			}
			out := translate.Translate(lbInput(t, states))
			c := lbReady(t, out, "app-lb")
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason {
				t.Errorf("condition %+v, want False %s", c, tc.reason)
			}
			if tc.state != nil && tc.state.Message != "" && c != nil && c.Message != tc.state.Message {
				t.Errorf("message %q, want the sync's", c.Message)
			}
			// A token is a token, whatever else the sync says: the proxies
			// answer the monitor that sends it.
			if hc := healthChecks(out); (len(hc) > 0) != (tc.state != nil && tc.state.HealthToken != "") {
				t.Errorf("health checks %+v", hc)
			}
		})
	}
}

// A token too short for the proxies is not given them.
func TestLoadBalancingShortToken(t *testing.T) {
	out := translate.Translate(lbInput(t, map[string]translate.LBState{"default/app-lb": {Ready: true, HealthToken: "short"}}))
	if hc := healthChecks(out); len(hc) != 0 {
		t.Errorf("health checks %+v", hc)
	}
	if c := lbReady(t, out, "app-lb"); c == nil || !strings.Contains(c.Message, "token is not known yet") {
		t.Errorf("condition %+v", c)
	}
}

// The Cache sees what the sync reports change, and policies change.
func TestLoadBalancingCache(t *testing.T) {
	cache := translate.NewCache()
	steps := []*translate.Input{
		lbInput(t, nil),
		lbInput(t, map[string]translate.LBState{"default/app-lb": {Ready: true, HealthToken: appToken, Origins: 1}}),
		lbInput(t, map[string]translate.LBState{"default/app-lb": {Ready: true, HealthToken: shopToken, Origins: 3}}),
	}
	// The oldest policy deleted: the newer one on its hostname takes it.
	last := lbInput(t, map[string]translate.LBState{"default/app-lb-newer": {Ready: true, HealthToken: shopToken}})
	for i, p := range last.LoadBalancingPolicies {
		if p.Name == "app-lb" {
			last.LoadBalancingPolicies = append(last.LoadBalancingPolicies[:i:i], last.LoadBalancingPolicies[i+1:]...)
			break
		}
	}
	steps = append(steps, last)
	for i, in := range steps {
		warm, cold := cache.Translate(in), translate.Translate(in)
		if !reflect.DeepEqual(warm.Config.Listeners, cold.Config.Listeners) || !reflect.DeepEqual(warm.LoadBalancers, cold.LoadBalancers) ||
			!reflect.DeepEqual(warm.LoadBalancingPolicies, cold.LoadBalancingPolicies) {
			t.Fatalf("step %d: with a Cache the output differs", i)
		}
	}
	out := cache.Translate(last)
	if got := healthChecks(out)["*.example.com"].Token; got != shopToken {
		t.Errorf("after the oldest policy went: token %q", got)
	}
	as := out.LoadBalancingPolicies[nsName("default", "app-lb-newer")]
	if len(as) == 0 || !meta.IsStatusConditionTrue(as[0].Conditions, string(gwv1.PolicyConditionAccepted)) {
		t.Errorf("app-lb-newer: %+v", as)
	}
}

func TestValidateLoadBalancingPolicy(t *testing.T) {
	valid := func() *v1alpha1.LoadBalancingPolicy {
		return &v1alpha1.LoadBalancingPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "lb"},
			Spec: v1alpha1.LoadBalancingPolicySpec{
				TargetRefs: []gwv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwv1.LocalPolicyTargetReference{
					Group: gwv1.GroupName, Kind: "Gateway", Name: "gw"}}},
				Hostname: "app.example.com",
				Pool:     "eu-west_1",
			},
		}
	}
	if err := translate.ValidateLoadBalancingPolicy(valid()); err != nil {
		t.Errorf("valid policy: %v", err)
	}
	dur := func(s string) *gwv1.Duration { d := gwv1.Duration(s); return &d }
	i32 := func(v int32) *int32 { return &v }
	for _, tc := range []struct {
		name   string
		edit   func(s *v1alpha1.LoadBalancingPolicySpec)
		fields []string // named in the error; none: valid
	}{
		{"no targets", func(s *v1alpha1.LoadBalancingPolicySpec) { s.TargetRefs = nil }, []string{"spec.targetRefs"}},
		{"wildcard hostname", func(s *v1alpha1.LoadBalancingPolicySpec) { s.Hostname = "*.example.com" }, []string{"spec.hostname"}},
		{"one label", func(s *v1alpha1.LoadBalancingPolicySpec) { s.Hostname = "localhost" }, []string{"spec.hostname"}},
		{"pool", func(s *v1alpha1.LoadBalancingPolicySpec) { s.Pool = "eu.west" }, []string{"spec.pool"}},
		{"failover without pool", func(s *v1alpha1.LoadBalancingPolicySpec) { s.FailoverPools = []string{"us"} }, []string{"spec.failoverPools"}},
		{"failover twice", func(s *v1alpha1.LoadBalancingPolicySpec) { s.FailoverPools = []string{"eu-west_1", "eu-west_1"} }, []string{"spec.failoverPools[1]"}},
		{"failover", func(s *v1alpha1.LoadBalancingPolicySpec) { s.FailoverPools = []string{"us", "eu-west_1"} }, nil},
		{"weight", func(s *v1alpha1.LoadBalancingPolicySpec) { s.Weight = i32(101) }, []string{"spec.weight"}},
		{"weight zero", func(s *v1alpha1.LoadBalancingPolicySpec) { s.Weight = i32(0) }, nil},
		{"steering", func(s *v1alpha1.LoadBalancingPolicySpec) { s.Steering = "geo" }, []string{"spec.steering"}},
		{"affinity", func(s *v1alpha1.LoadBalancingPolicySpec) {
			s.SessionAffinity = &v1alpha1.LBSessionAffinity{Type: "cookie", TTL: dur("2000h")}
		}, []string{"spec.sessionAffinity.type", "spec.sessionAffinity.ttl"}},
		{"health", func(s *v1alpha1.LoadBalancingPolicySpec) {
			s.HealthCheck = &v1alpha1.LBHealthCheck{Path: "health", Interval: dur("9s"), Retries: i32(6), ExpectedCodes: "200,201"}
		}, []string{"spec.healthCheck.path", "spec.healthCheck.interval", "spec.healthCheck.retries", "spec.healthCheck.expectedCodes"}},
		{"health path escapes", func(s *v1alpha1.LoadBalancingPolicySpec) { s.HealthCheck = &v1alpha1.LBHealthCheck{Path: "/a%2Fb"} }, []string{"spec.healthCheck.path"}},
		{"health path dots", func(s *v1alpha1.LoadBalancingPolicySpec) { s.HealthCheck = &v1alpha1.LBHealthCheck{Path: "/a//b"} }, []string{"spec.healthCheck.path"}},
		{"timeout not shorter", func(s *v1alpha1.LoadBalancingPolicySpec) {
			s.HealthCheck = &v1alpha1.LBHealthCheck{Interval: dur("10s"), Timeout: dur("10s")}
		}, []string{"spec.healthCheck.timeout"}},
		{"timeout milliseconds", func(s *v1alpha1.LoadBalancingPolicySpec) {
			s.HealthCheck = &v1alpha1.LBHealthCheck{Timeout: dur("1500ms")}
		}, []string{"spec.healthCheck.timeout"}},
		{"health ok", func(s *v1alpha1.LoadBalancingPolicySpec) {
			s.HealthCheck = &v1alpha1.LBHealthCheck{Path: "/lb/", Interval: dur("1m30s"), Timeout: dur("10s"), Retries: i32(0), ExpectedCodes: "2xx"}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := valid()
			tc.edit(&p.Spec)
			err := translate.ValidateLoadBalancingPolicy(p)
			if len(tc.fields) == 0 {
				if err != nil {
					t.Errorf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one naming %v", tc.fields)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.fields) {
				t.Errorf("%d problems, want %d: %v", len(lines), len(tc.fields), err)
			}
			for _, f := range tc.fields {
				if !strings.Contains(err.Error(), "LoadBalancingPolicy ns/lb: "+f+":") {
					t.Errorf("no problem named %s: %v", f, err)
				}
			}
		})
	}
}

// Every health path the policy takes is one the proxies take: a config
// they refuse would stop every route.
func TestLoadBalancingHealthPathsLoad(t *testing.T) {
	out := translate.Translate(lbInput(t, map[string]translate.LBState{"default/app-lb": {Ready: true, HealthToken: appToken}}))
	at := -1
	for i, l := range out.Config.Listeners {
		if l.HealthCheck != nil {
			at = i
		}
	}
	if at < 0 {
		t.Fatal("no listener has a health check")
	}
	p := dataplane.New(dataplane.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Close()
	const chars = "aZ0-._~!$&'()*+,=:@/;%?#"
	var paths []string
	for _, a := range chars {
		for _, b := range chars {
			for _, c := range []string{"", ".", "..", "x"} {
				paths = append(paths, "/"+string(a)+string(b)+c, "/"+c+string(a)+"/"+string(b), "/"+c+"/"+string(a)+string(b)+"/")
			}
		}
	}
	taken := 0
	for _, path := range paths {
		pol := &v1alpha1.LoadBalancingPolicy{Spec: v1alpha1.LoadBalancingPolicySpec{
			TargetRefs: []gwv1.LocalPolicyTargetReferenceWithSectionName{{}}, Hostname: "a.example.com", Pool: "p",
			HealthCheck: &v1alpha1.LBHealthCheck{Path: path}}}
		if translate.ValidateLoadBalancingPolicy(pol) != nil {
			continue
		}
		taken++
		cfg := out.Config
		cfg.Listeners = slices.Clone(cfg.Listeners)
		hc := *cfg.Listeners[at].HealthCheck
		hc.Path = path
		cfg.Listeners[at].HealthCheck = &hc
		if err := p.Load(&cfg); err != nil {
			t.Errorf("path %q: the policy takes it, the data plane refuses it: %v", path, err)
		}
	}
	if taken == 0 {
		t.Fatal("no path taken")
	}
	t.Logf("%d paths of %d taken, and loaded", taken, len(paths))
}
