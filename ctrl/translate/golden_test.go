package translate_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/standalone"
)

// Golden tests: each testdata/golden/NAME.yaml is a snapshot of objects;
// NAME.out.yaml is what translate decides for it (config, statuses,
// hostnames, events). Run with -update to rewrite the .out.yaml files after
// a deliberate change, then read the diff: it is the review.
var update = flag.Bool("update", false, "rewrite golden outputs")

// goldenNow is the translation time: every new condition carries it.
var goldenNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/golden/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n, routePatched, setPatched := 0, 0, 0
	for _, in := range inputs {
		if strings.HasSuffix(in, ".out.yaml") {
			continue
		}
		n++
		name := strings.TrimSuffix(filepath.Base(in), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := standalone.LoadBytes(in, data)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			out := translate.Translate(goldenInput(snap))

			// Whatever translate emits, the proxy must take: a config the
			// data plane refuses would stop every route, not just a bad one.
			p := dataplane.New(dataplane.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			defer p.Close()
			if err := p.Load(&out.Config); err != nil {
				t.Errorf("the data plane refuses the config: %v", err)
			}
			shared, planes := out.ProxyConfigs()
			if err := p.Load(shared); err != nil {
				t.Errorf("the data plane refuses the shared proxies' config: %v", err)
			}
			for key, cfg := range planes {
				if err := p.Load(cfg); err != nil {
					t.Errorf("the data plane refuses the config of %s's plane: %v", key, err)
				}
			}

			got := render(t, out)

			// The Cache is a memo: warm runs over the same objects give the
			// same output (key pairs, rule checks and routes remembered).
			warmIn, cache := goldenInput(snap), translate.NewCache()
			for range 2 {
				if warm := render(t, cache.Translate(warmIn)); !bytes.Equal(warm, got) {
					t.Errorf("with a Cache the output differs:\n%s", lineDiff(string(got), string(warm)))
				}
			}
			edits, sets := checkPatchesN(t, snap, out, len(snap.TCPRoutes)+len(snap.TLSRoutes) == 0, -1)
			if edits {
				routePatched++
			}
			if sets {
				setPatched++
			}

			want := strings.TrimSuffix(in, ".yaml") + ".out.yaml"
			if *update {
				if err := os.WriteFile(want, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			exp, err := os.ReadFile(want)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
			}
			if !bytes.Equal(got, exp) {
				t.Errorf("output differs from %s (run with -update and review the diff):\n%s", want, lineDiff(string(exp), string(got)))
			}
		})
	}
	if n == 0 {
		t.Fatal("no golden inputs found")
	}
	if routePatched == 0 {
		t.Error("no golden input's route edits were patched: a route's status written back should be")
	}
	if setPatched == 0 {
		t.Error("no golden input's routes added or deleted were patched: a copy of a route added should be")
	}
}

// checkPatchesN follows a golden input into a running cluster's life: every
// status written back, then backends replaced one by one, as informers
// deliver pods coming and going, then routes edited (a status written, a
// filter added, a rule removed, a hostname added), then Gateways, grants
// and policies replaced and edited; routes added and deleted
// (walkRouteSet) between. A warm translation (which patches the last one
// when it can) must give what a cold one does each time, and Diff name
// the same statuses. It reports whether a route edit was patched, and
// whether a route added or deleted was. mustPatch says the walk's steps
// must be patched (an input without stream routes, which are never
// patched); walk is how many routes of each kind walkRouteSet copies and
// renames (all: -1).
func checkPatchesN(t *testing.T, snap *translate.Snapshot, first *translate.Output, mustPatch bool, walk int) (routePatched, setPatched bool) {
	t.Helper()
	s := *snap
	s.GatewayClasses, s.Gateways, s.ListenerSets = slices.Clone(s.GatewayClasses), slices.Clone(s.Gateways), slices.Clone(s.ListenerSets)
	s.HTTPRoutes, s.GRPCRoutes, s.BackendTLSPolicies = slices.Clone(s.HTTPRoutes), slices.Clone(s.GRPCRoutes), slices.Clone(s.BackendTLSPolicies)
	s.AccessPolicies, s.TCPRoutes, s.TLSRoutes = slices.Clone(s.AccessPolicies), slices.Clone(s.TCPRoutes), slices.Clone(s.TLSRoutes)
	s.LoadBalancingPolicies, s.DNSPolicies = slices.Clone(s.LoadBalancingPolicies), slices.Clone(s.DNSPolicies)
	s.Services, s.EndpointSlices, s.ExternalBackends = slices.Clone(s.Services), slices.Clone(s.EndpointSlices), slices.Clone(s.ExternalBackends)
	writeBackAll(&s, first)
	in, cache := goldenInput(&s), translate.NewCache()
	patched := 0
	var prevWarm, prevCold *translate.Output
	check := func(step string) {
		t.Helper()
		in.Snapshot = s // the steps change s: slices replaced, grown and shrunk
		cold, warm := translate.Translate(in), cache.Translate(in)
		want := render(t, cold)
		if got := render(t, warm); !bytes.Equal(got, want) {
			t.Fatalf("%s: with a Cache the output differs:\n%s", step, lineDiff(string(want), string(got)))
		}
		if got, want := statusesOf(t, warm), statusesOf(t, cold); !bytes.Equal(got, want) {
			t.Fatalf("%s: with a Cache the statuses differ (generations or times):\n%s", step, lineDiff(string(want), string(got)))
		}
		if prevWarm != nil {
			if got, want := translate.Diff(prevWarm, warm), translate.Diff(prevCold, cold); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: Diff with a Cache %+v, without %+v", step, got, want)
			}
		}
		prevWarm, prevCold = warm, cold
		if translate.Patched(cache) {
			patched++
		}
	}
	check("statuses written")
	writeBackAll(&s, translate.Translate(&translate.Input{Snapshot: s, ControllerName: in.ControllerName, Now: in.Now,
		Addresses: in.Addresses, AnyEndpointAddress: true, AccessKeys: in.AccessKeys}))
	in.Snapshot = s
	check("steady")
	check("steady again")
	for i := range s.Services {
		s.Services[i] = s.Services[i].DeepCopy()
		check("Service " + s.Services[i].Name + " replaced")
	}
	for i := range s.ExternalBackends {
		s.ExternalBackends[i] = s.ExternalBackends[i].DeepCopy()
		check("ExternalBackend " + s.ExternalBackends[i].Name + " replaced")
	}
	for i := range s.EndpointSlices {
		c := s.EndpointSlices[i].DeepCopy()
		s.EndpointSlices[i] = c
		check("EndpointSlice " + c.Name + " replaced")
		c = newRV(c.DeepCopy())
		c.Endpoints = c.Endpoints[min(1, len(c.Endpoints)):]
		s.EndpointSlices[i] = c
		check("EndpointSlice " + c.Name + " loses an endpoint")
	}
	// An object edited in place is seen by its new resourceVersion.
	if len(s.EndpointSlices) > 0 {
		c := newRV(s.EndpointSlices[0])
		c.Endpoints = c.Endpoints[min(1, len(c.Endpoints)):]
		check("EndpointSlice " + c.Name + " edited in place")
	}
	if len(s.HTTPRoutes) > 0 {
		c := newRV(s.HTTPRoutes[0])
		c.Spec.Hostnames = append(c.Spec.Hostnames, "in-place.example.com")
		check("HTTPRoute " + c.Name + " edited in place")
	}
	if mustPatch && patched == 0 {
		t.Error("no translation patched the last one: steady and replaced backends should")
	}
	before := patched
	for i := range s.HTTPRoutes {
		editHTTPRoute(&s.HTTPRoutes[i], check)
	}
	for i := range s.GRPCRoutes {
		editGRPCRoute(&s.GRPCRoutes[i], check)
	}
	routePatched = patched > before
	walkStreamRoutes(&s, check)
	before = patched
	walkRouteSet(&s, in, check, walk)
	setPatched = patched > before
	for i := range s.Gateways {
		c := s.Gateways[i].DeepCopy()
		s.Gateways[i] = c
		check("Gateway " + c.Name + " replaced")
		c = newRV(c.DeepCopy())
		c.Generation++
		c.Spec.Listeners = append(c.Spec.Listeners, gwv1.Listener{Name: "edited", Protocol: gwv1.HTTPProtocolType, Port: 8089})
		s.Gateways[i] = c
		check("Gateway " + c.Name + " gains a listener")
	}
	for i := range s.AccessPolicies {
		c := s.AccessPolicies[i].DeepCopy()
		s.AccessPolicies[i] = c
		check("AccessPolicy " + c.Name + " replaced")
		c = newRV(c.DeepCopy())
		c.Generation++
		c.Spec.Audiences = append(c.Spec.Audiences, "edited")
		s.AccessPolicies[i] = c
		check("AccessPolicy " + c.Name + " edited")
	}
	for i := range s.LoadBalancingPolicies {
		c := s.LoadBalancingPolicies[i].DeepCopy()
		s.LoadBalancingPolicies[i] = c
		check("LoadBalancingPolicy " + c.Name + " replaced")
		c = newRV(c.DeepCopy())
		c.Generation++
		c.Spec.Pool += "-edited"
		s.LoadBalancingPolicies[i] = c
		check("LoadBalancingPolicy " + c.Name + " edited")
	}
	for i := range s.DNSPolicies {
		c := s.DNSPolicies[i].DeepCopy()
		s.DNSPolicies[i] = c
		check("DNSPolicy " + c.Name + " replaced")
		c = newRV(c.DeepCopy())
		c.Generation++
		if c.Spec.Records == v1alpha1.DNSRecordsUnmanaged {
			c.Spec.Records = v1alpha1.DNSRecordsManaged
		} else {
			c.Spec.Records = v1alpha1.DNSRecordsUnmanaged
		}
		s.DNSPolicies[i] = c
		check("DNSPolicy " + c.Name + " edited")
	}
	for len(s.ReferenceGrants) > 0 {
		name := s.ReferenceGrants[0].Name
		s.ReferenceGrants = s.ReferenceGrants[1:]
		check("ReferenceGrant " + name + " deleted")
	}
	for _, g := range snap.ReferenceGrants {
		s.ReferenceGrants = append(s.ReferenceGrants, newRV(g.DeepCopy()))
		check("ReferenceGrant " + g.Name + " added back")
	}
	walkEpoch(&s, check)
	return routePatched, setPatched
}

// walkEpoch changes the objects routes attach through and read besides
// their own and their backends' (the Cache's epoch), one at a time,
// checking the translation after each: a translation with a Cache
// reuses the routes' translations that the change spares, and must give
// what a cold one does. Gateways and ListenerSets lose a listener and
// have one's hostname edited; Namespaces are relabelled; Secrets,
// ConfigMaps and GatewayConfigs are replaced, edited and deleted;
// BackendTLSPolicies are replaced, edited, deleted and added again
// against another backend.
func walkEpoch(s *translate.Snapshot, check func(step string)) {
	for i := range s.Gateways {
		c := newRV(s.Gateways[i].DeepCopy())
		c.Generation++
		for j := range c.Spec.Listeners {
			if l := &c.Spec.Listeners[j]; l.Hostname != nil {
				l.Hostname = ptr(gwv1.Hostname("edited-" + strings.TrimPrefix(string(*l.Hostname), "*.")))
				break
			}
		}
		s.Gateways[i] = c
		check("Gateway " + c.Name + ": a listener's hostname edited")
		if len(c.Spec.Listeners) > 1 {
			c = newRV(c.DeepCopy())
			c.Generation++
			c.Spec.Listeners = c.Spec.Listeners[1:]
			s.Gateways[i] = c
			check("Gateway " + c.Name + " loses its first listener")
		}
	}
	for i := range s.ListenerSets {
		c := newRV(s.ListenerSets[i].DeepCopy())
		c.Generation++
		c.Spec.Listeners = append(c.Spec.Listeners, gwv1.ListenerEntry{Name: "edited", Protocol: gwv1.HTTPProtocolType, Port: 8089})
		s.ListenerSets[i] = c
		check("ListenerSet " + c.Name + " gains a listener")
		c = newRV(c.DeepCopy())
		c.Generation++
		c.Spec.Listeners = c.Spec.Listeners[1:]
		s.ListenerSets[i] = c
		check("ListenerSet " + c.Name + " loses its first listener")
	}
	for i := range s.Namespaces {
		c := newRV(s.Namespaces[i].DeepCopy())
		c.Labels = map[string]string{"edited": "yes"}
		s.Namespaces[i] = c
		check("Namespace " + c.Name + " relabelled")
	}
	for i := range s.Secrets {
		c := newRV(s.Secrets[i].DeepCopy())
		s.Secrets[i] = c
		check("Secret " + c.Name + " replaced")
		if j := (i + 1) % len(s.Secrets); j != i {
			c = newRV(c.DeepCopy())
			c.Data = s.Secrets[j].Data // another key pair, or another kind of data
			s.Secrets[i] = c
			check("Secret " + c.Name + " given another's data")
		}
	}
	if len(s.Secrets) > 0 {
		name := s.Secrets[0].Name
		s.Secrets = s.Secrets[1:]
		check("Secret " + name + " deleted")
	}
	for i := range s.ConfigMaps {
		c := newRV(s.ConfigMaps[i].DeepCopy())
		c.Data = map[string]string{"ca.crt": "edited"}
		s.ConfigMaps[i] = c
		check("ConfigMap " + c.Name + " edited")
	}
	if len(s.ConfigMaps) > 0 {
		name := s.ConfigMaps[0].Name
		s.ConfigMaps = s.ConfigMaps[1:]
		check("ConfigMap " + name + " deleted")
	}
	for i := range s.GatewayConfigs {
		c := newRV(s.GatewayConfigs[i].DeepCopy())
		c.Generation++
		s.GatewayConfigs[i] = c
		check("GatewayConfig " + c.Name + " replaced")
	}
	for i := range s.BackendTLSPolicies {
		c := newRV(s.BackendTLSPolicies[i].DeepCopy())
		c.Generation++
		c.Spec.Validation.Hostname = "edited.example.net"
		s.BackendTLSPolicies[i] = c
		check("BackendTLSPolicy " + c.Name + " edited")
	}
	if len(s.BackendTLSPolicies) > 0 && len(s.Services) > 0 {
		c := s.BackendTLSPolicies[0]
		s.BackendTLSPolicies = s.BackendTLSPolicies[1:]
		check("BackendTLSPolicy " + c.Name + " deleted")
		for _, svc := range s.Services {
			c = newUID(c.DeepCopy())
			c.Name, c.Namespace = "added-for-"+svc.Name, svc.Namespace
			c.Spec.TargetRefs = []gwv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwv1.LocalPolicyTargetReference{Kind: "Service", Name: gwv1.ObjectName(svc.Name)}}}
			s.BackendTLSPolicies = append(s.BackendTLSPolicies, c)
			check("BackendTLSPolicy " + c.Name + " added")
		}
	}
}

// walkRouteSet adds and deletes routes as users do, checking the
// translation after each change: a copy of each route added beside it
// (same listeners, same backends, no status yet), its status written
// back, then deleted; a newer copy with a hostname of its own added and
// deleted; a route whose only parentRef is not ours added and deleted;
// each route renamed (a delete and an add in one change); the routes
// deleted one by one, until none is left on any listener, and brought
// back. Only the first most routes of each kind are copied and renamed,
// and deleted one by one (the rest at once), unless most is -1.
func walkRouteSet(s *translate.Snapshot, in *translate.Input, check func(step string), most int) {
	writeBackAll(s, translate.Translate(in)) // the edits' statuses: no condition changes from here on but by the walk
	in.Snapshot = *s
	check("statuses written before routes are added")
	http, grpc := s.HTTPRoutes, s.GRPCRoutes
	set := func(step string, h []*gwv1.HTTPRoute, g []*gwv1.GRPCRoute) {
		s.HTTPRoutes, s.GRPCRoutes = h, g
		in.Snapshot.HTTPRoutes, in.Snapshot.GRPCRoutes = h, g
		check(step)
	}
	newer := func(m *metav1.ObjectMeta) { m.CreationTimestamp = metav1.NewTime(m.CreationTimestamp.Add(time.Hour)) }
	first := func(n int) int {
		if most < 0 {
			return n
		}
		return min(n, most)
	}
	for i, r := range http[:first(len(http))] {
		c := r.DeepCopy()
		c.Name, c.UID, c.Status = c.Name+"-added", c.UID+"-added", gwv1.HTTPRouteStatus{}
		set("HTTPRoute "+c.Name+" added", append(slices.Clip(http), c), grpc)
		w := newRV(c.DeepCopy())
		w.Status.Parents = translate.Translate(in).HTTPRoutes[nsName(c.Namespace, c.Name)]
		set("HTTPRoute "+c.Name+" status written", append(slices.Clip(http), w), grpc)
		// The Gateways' statuses (their attachedRoutes) come back as new
		// objects: an echo of the last translation, which changes nothing.
		writeBackParents(s, translate.Translate(in))
		in.Snapshot.GatewayClasses, in.Snapshot.Gateways, in.Snapshot.ListenerSets = s.GatewayClasses, s.Gateways, s.ListenerSets
		check("the statuses of HTTPRoute " + c.Name + "'s parents written back")
		set("HTTPRoute "+c.Name+" deleted", http, grpc)
		set("HTTPRoute "+c.Name+" added again", append(slices.Clip(http), w), grpc)
		if len(s.EndpointSlices) > 0 { // a backend of the route deleted may change in the same sync
			sl := s.EndpointSlices[i%len(s.EndpointSlices)]
			s.EndpointSlices[i%len(s.EndpointSlices)] = sl.DeepCopy()
		}
		set("HTTPRoute "+c.Name+" deleted, an EndpointSlice replaced", http, grpc)
		n := c.DeepCopy()
		n.Name, n.UID = r.Name+"-newer", r.UID+"-newer"
		n.Spec.Hostnames = append(n.Spec.Hostnames, gwv1.Hostname(fmt.Sprintf("newer%d.example.com", i)))
		newer(&n.ObjectMeta)
		set("HTTPRoute "+n.Name+" added", append(slices.Clip(http), n), grpc)
		set("HTTPRoute "+n.Name+" deleted", http, grpc)
		f := c.DeepCopy()
		f.Name, f.UID = r.Name+"-foreign", r.UID+"-foreign"
		f.Spec.ParentRefs = []gwv1.ParentReference{{Name: "someone-elses"}, {Group: ptr(gwv1.Group("example.com")), Kind: ptr(gwv1.Kind("Other")), Name: "other"}}
		set("HTTPRoute "+f.Name+" (not ours) added", append(slices.Clip(http), f), grpc)
		set("HTTPRoute "+f.Name+" (not ours) deleted", http, grpc)
		renamed := slices.Clone(http)
		m := r.DeepCopy()
		m.Name, m.UID = r.Name+"-renamed", r.UID+"-renamed"
		renamed[i] = m
		set("HTTPRoute "+r.Name+" renamed", renamed, grpc)
		set("HTTPRoute "+r.Name+" back", http, grpc)
	}
	for i, r := range grpc[:first(len(grpc))] {
		c := r.DeepCopy()
		c.Name, c.UID, c.Status = c.Name+"-added", c.UID+"-added", gwv1.GRPCRouteStatus{}
		set("GRPCRoute "+c.Name+" added", http, append(slices.Clip(grpc), c))
		w := newRV(c.DeepCopy())
		w.Status.Parents = translate.Translate(in).GRPCRoutes[nsName(c.Namespace, c.Name)]
		set("GRPCRoute "+c.Name+" status written", http, append(slices.Clip(grpc), w))
		set("GRPCRoute "+c.Name+" deleted", http, grpc)
		n := c.DeepCopy()
		n.Name, n.UID = r.Name+"-newer", r.UID+"-newer"
		n.Spec.Hostnames = append(n.Spec.Hostnames, gwv1.Hostname(fmt.Sprintf("newer%d.example.com", i)))
		newer(&n.ObjectMeta)
		set("GRPCRoute "+n.Name+" added", http, append(slices.Clip(grpc), n))
		set("GRPCRoute "+n.Name+" deleted", http, grpc)
		renamed := slices.Clone(grpc)
		m := r.DeepCopy()
		m.Name, m.UID = r.Name+"-renamed", r.UID+"-renamed"
		renamed[i] = m
		set("GRPCRoute "+r.Name+" renamed", http, renamed)
		set("GRPCRoute "+r.Name+" back", http, grpc)
	}
	for i := range first(len(http)) {
		set("HTTPRoutes deleted up to "+http[i].Name, http[i+1:], grpc)
	}
	set("HTTPRoutes deleted", nil, grpc)
	for i := range first(len(grpc)) {
		set("GRPCRoutes deleted up to "+grpc[i].Name, nil, grpc[i+1:])
	}
	set("GRPCRoutes deleted", nil, nil)
	for i := range first(len(grpc)) {
		set("GRPCRoutes back up to "+grpc[i].Name, nil, grpc[:i+1])
	}
	set("GRPCRoutes back", nil, grpc)
	for i := range first(len(http)) {
		set("HTTPRoutes back up to "+http[i].Name, http[:i+1], grpc)
	}
	set("HTTPRoutes back", http, grpc)
}

// editHTTPRoute replaces *r with copies edited as users and the
// controller do, checking the translation after each: its status
// written back (a copy), a response header set on its first rule, its
// last rule removed, a hostname added.
func editHTTPRoute(r **gwv1.HTTPRoute, check func(step string)) {
	step := func(what string, edit func(c *gwv1.HTTPRoute)) {
		c := newRV((*r).DeepCopy())
		c.Generation++
		edit(c)
		*r = c
		check("HTTPRoute " + c.Name + " " + what)
	}
	step("replaced", func(c *gwv1.HTTPRoute) { c.Generation, c.ResourceVersion = c.Generation-1, (*r).ResourceVersion })
	step("gains a filter", func(c *gwv1.HTTPRoute) {
		if len(c.Spec.Rules) > 0 {
			c.Spec.Rules[0].Filters = append(c.Spec.Rules[0].Filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterResponseHeaderModifier,
				ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "X-Edited", Value: "1"}}}})
		}
	})
	step("loses a rule", func(c *gwv1.HTTPRoute) {
		if len(c.Spec.Rules) > 1 {
			c.Spec.Rules = c.Spec.Rules[:len(c.Spec.Rules)-1]
		}
	})
	step("gains a hostname", func(c *gwv1.HTTPRoute) { c.Spec.Hostnames = append(c.Spec.Hostnames, "edited.example.com") })
}

// editGRPCRoute is editHTTPRoute for a GRPCRoute.
func editGRPCRoute(r **gwv1.GRPCRoute, check func(step string)) {
	step := func(what string, edit func(c *gwv1.GRPCRoute)) {
		c := newRV((*r).DeepCopy())
		c.Generation++
		edit(c)
		*r = c
		check("GRPCRoute " + c.Name + " " + what)
	}
	step("replaced", func(c *gwv1.GRPCRoute) { c.Generation, c.ResourceVersion = c.Generation-1, (*r).ResourceVersion })
	step("gains a filter", func(c *gwv1.GRPCRoute) {
		if len(c.Spec.Rules) > 0 {
			c.Spec.Rules[0].Filters = append(c.Spec.Rules[0].Filters, gwv1.GRPCRouteFilter{Type: gwv1.GRPCRouteFilterResponseHeaderModifier,
				ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "X-Edited", Value: "1"}}}})
		}
	})
	step("loses a rule", func(c *gwv1.GRPCRoute) {
		if len(c.Spec.Rules) > 1 {
			c.Spec.Rules = c.Spec.Rules[:len(c.Spec.Rules)-1]
		}
	})
	step("gains a hostname", func(c *gwv1.GRPCRoute) { c.Spec.Hostnames = append(c.Spec.Hostnames, "edited.example.com") })
}

// statusesOf is every status of an output as written, with the
// generations and transition times render leaves out.
func statusesOf(t *testing.T, out *translate.Output) []byte {
	t.Helper()
	b, err := json.MarshalIndent(map[string]any{"gatewayClasses": out.GatewayClasses, "gateways": byName(out.Gateways),
		"listenerSets": byName(out.ListenerSets), "httpRoutes": byName(out.HTTPRoutes), "grpcRoutes": byName(out.GRPCRoutes),
		"backendTLSPolicies": byName(out.BackendTLSPolicies), "accessPolicies": byName(out.AccessPolicies),
		"loadBalancingPolicies": byName(out.LoadBalancingPolicies), "dnsPolicies": byName(out.DNSPolicies)}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lastRV numbers the resourceVersions newRV gives.
var lastRV atomic.Int64

// newRV gives an object a new resourceVersion, as the API server does on
// every write: the Cache takes an object whose key (identity and
// resourceVersion) it has seen for unchanged, so a test that changes an
// object must give it a new one.
func newRV[T metav1.Object](o T) T {
	o.SetResourceVersion("test-" + strconv.FormatInt(lastRV.Add(1), 10))
	return o
}

// lastUID numbers the UIDs newUID gives.
var lastUID atomic.Int64

// newUID makes an object a new one, as the API server does when it
// creates one: a UID of its own (and a resourceVersion).
func newUID[T metav1.Object](o T) T {
	o.SetUID(types.UID("test-uid-" + strconv.FormatInt(lastUID.Add(1), 10)))
	return newRV(o)
}

// writeBackAll writes an output's statuses onto new copies of the objects,
// as the controller's writes come back through informers (each with a new
// resourceVersion).
func writeBackAll(s *translate.Snapshot, out *translate.Output) {
	writeBackParents(s, out)
	writeBackRoutes(s, out)
}

// writeBackParents is writeBackAll for GatewayClasses, Gateways and
// ListenerSets.
func writeBackParents(s *translate.Snapshot, out *translate.Output) {
	for i, o := range s.GatewayClasses {
		if st := out.GatewayClasses[o.Name]; st != nil {
			c := newRV(o.DeepCopy())
			c.Status = st.Status
			s.GatewayClasses[i] = c
		}
	}
	for i, o := range s.Gateways {
		if st := out.Gateways[nsName(o.Namespace, o.Name)]; st != nil {
			c := newRV(o.DeepCopy())
			c.Status = *st
			s.Gateways[i] = c
		}
	}
	for i, o := range s.ListenerSets {
		if st := out.ListenerSets[nsName(o.Namespace, o.Name)]; st != nil {
			c := newRV(o.DeepCopy())
			c.Status = *st
			s.ListenerSets[i] = c
		}
	}
}

// writeBackRoutes is writeBackAll for routes and policies.
func writeBackRoutes(s *translate.Snapshot, out *translate.Output) {
	for i, o := range s.HTTPRoutes {
		c := newRV(o.DeepCopy())
		c.Status.Parents = out.HTTPRoutes[nsName(o.Namespace, o.Name)]
		s.HTTPRoutes[i] = c
	}
	for i, o := range s.GRPCRoutes {
		c := newRV(o.DeepCopy())
		c.Status.Parents = out.GRPCRoutes[nsName(o.Namespace, o.Name)]
		s.GRPCRoutes[i] = c
	}
	for i, o := range s.TCPRoutes {
		c := newRV(o.DeepCopy())
		c.Status.Parents = out.TCPRoutes[nsName(o.Namespace, o.Name)]
		s.TCPRoutes[i] = c
	}
	for i, o := range s.TLSRoutes {
		c := newRV(o.DeepCopy())
		c.Status.Parents = out.TLSRoutes[nsName(o.Namespace, o.Name)]
		s.TLSRoutes[i] = c
	}
	for i, o := range s.BackendTLSPolicies {
		c := newRV(o.DeepCopy())
		c.Status.Ancestors = out.BackendTLSPolicies[nsName(o.Namespace, o.Name)]
		s.BackendTLSPolicies[i] = c
	}
	for i, o := range s.AccessPolicies {
		c := newRV(o.DeepCopy())
		c.Status.Ancestors = out.AccessPolicies[nsName(o.Namespace, o.Name)]
		s.AccessPolicies[i] = c
	}
	for i, o := range s.LoadBalancingPolicies {
		c := newRV(o.DeepCopy())
		c.Status.Ancestors = out.LoadBalancingPolicies[nsName(o.Namespace, o.Name)]
		s.LoadBalancingPolicies[i] = c
	}
	for i, o := range s.DNSPolicies {
		c := newRV(o.DeepCopy())
		c.Status.Ancestors = out.DNSPolicies[nsName(o.Namespace, o.Name)]
		s.DNSPolicies[i] = c
	}
}

// goldenAccessKeys are the Access teams' keys golden inputs may use:
// example.cloudflareaccess.com's are known, broken.cloudflareaccess.com's
// cannot be fetched.
var goldenAccessKeys = func() map[string]*translate.AccessKeys {
	doc, err := os.ReadFile("testdata/access-certs.json")
	if err != nil {
		panic(err)
	}
	return map[string]*translate.AccessKeys{
		"example.cloudflareaccess.com": {Doc: string(doc)},
		"broken.cloudflareaccess.com":  {Problem: "GET https://broken.cloudflareaccess.com/cdn-cgi/access/certs: 404 Not Found"},
	}
}()

func goldenInput(snap *translate.Snapshot) *translate.Input {
	return &translate.Input{
		AccessKeys:         goldenAccessKeys,
		Snapshot:           *snap,
		ControllerName:     translate.DefaultControllerName,
		Now:                goldenNow,
		Addresses:          []gwv1.GatewayStatusAddress{{Type: ptr(gwv1.HostnameAddressType), Value: "tunnel-id.cfargotunnel.com"}},
		AnyEndpointAddress: true,
	}
}

func ptr[T any](v T) *T { return &v }

// render prints an Output as YAML with every map keyed by "ns/name", so
// the file reads top to bottom in a stable order.
func render(t *testing.T, out *translate.Output) []byte {
	t.Helper()
	doc := map[string]any{
		"config":             out.Config,
		"gatewayClasses":     out.GatewayClasses,
		"gateways":           byName(out.Gateways),
		"listenerSets":       byName(out.ListenerSets),
		"httpRoutes":         byName(out.HTTPRoutes),
		"grpcRoutes":         byName(out.GRPCRoutes),
		"backendTLSPolicies": byName(out.BackendTLSPolicies),
		"hostnames":          out.Hostnames,
		"events":             out.Events,
	}
	if len(out.Planes) > 0 {
		doc["planes"] = renderPlanes(out)
	}
	if len(out.AccessPolicies) > 0 {
		doc["accessPolicies"] = byName(out.AccessPolicies)
	}
	// Stream routes' statuses only where there are any: a patched
	// translation (never made with stream routes) has no maps for them.
	if len(out.TCPRoutes) > 0 {
		doc["tcpRoutes"] = byName(out.TCPRoutes)
	}
	if len(out.TLSRoutes) > 0 {
		doc["tlsRoutes"] = byName(out.TLSRoutes)
	}
	if len(out.AccessApps) > 0 {
		doc["accessApps"] = out.AccessApps
	}
	if len(out.LoadBalancingPolicies) > 0 {
		doc["loadBalancingPolicies"] = byName(out.LoadBalancingPolicies)
	}
	if len(out.LoadBalancers) > 0 {
		doc["loadBalancers"] = out.LoadBalancers
	}
	if len(out.DNSPolicies) > 0 {
		doc["dnsPolicies"] = byName(out.DNSPolicies)
	}
	// Round-trip through JSON to get a generic tree, then print every
	// condition on one line: Type=Status Reason: message. Transition times
	// and generations are the same everywhere here (unit tests cover them).
	j, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var tree any
	if err := json.Unmarshal(j, &tree); err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(compactConditions(tree))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// renderPlanes shows each dedicated Gateway's plane and the configs
// ProxyConfigs cuts for the shared proxies and for each plane.
func renderPlanes(out *translate.Output) map[string]any {
	shared, configs := out.ProxyConfigs()
	planes := map[string]any{}
	for key, p := range out.Planes {
		planes[key.String()] = map[string]any{
			"gatewayConfig": p.Params.Name,
			"listeners":     p.Listeners,
			"hostnames":     p.Hostnames,
			"ports":         p.Ports,
			"address":       p.Address,
			"config":        configs[key],
		}
	}
	return map[string]any{"sharedConfig": shared, "byGateway": planes}
}

func compactConditions(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["lastTransitionTime"]; ok {
			return fmt.Sprintf("%v=%v %v: %v", x["type"], x["status"], x["reason"], x["message"])
		}
		for k, e := range x {
			x[k] = compactConditions(e)
		}
	case []any:
		for i, e := range x {
			x[i] = compactConditions(e)
		}
	}
	return v
}

func byName[V any](m map[types.NamespacedName]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k.Namespace+"/"+k.Name] = v
	}
	return out
}

// lineDiff shows the first lines where two texts differ.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var sb strings.Builder
	shown := 0
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			fmt.Fprintf(&sb, "line %d:\n  want: %s\n  got:  %s\n", i+1, x, y)
			if shown++; shown == 10 {
				break
			}
		}
	}
	return sb.String()
}

func nsName(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}
