package translate_test

import (
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/standalone"
)

func loadGolden(t *testing.T, name string) *translate.Input {
	t.Helper()
	data, err := os.ReadFile("testdata/golden/" + name)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := standalone.LoadBytes(name, data)
	if err != nil {
		t.Fatal(err)
	}
	return goldenInput(snap)
}

func cond(list []metav1.Condition, typ string) *metav1.Condition {
	for i := range list {
		if list[i].Type == typ {
			return &list[i]
		}
	}
	return nil
}

// A resync that changes nothing must write nothing: conditions keep their
// transition time, Diff is empty, no event is repeated. A change moves the
// time of the changed condition only, and is an event once.
func TestSteadyStateAndTransitions(t *testing.T) {
	in := loadGolden(t, "basic.yaml")
	first := translate.Translate(in)
	route := nsName("default", "app")

	in.Now = goldenNow.Add(time.Hour)
	writeBackAll(&in.Snapshot, first)
	second := translate.Translate(in)
	if ch := translate.Diff(first, second); !ch.Empty() {
		t.Fatalf("steady state: Diff = %+v, want nothing", ch)
	}
	if len(second.Events) != 0 {
		t.Fatalf("steady state: events %+v", second.Events)
	}
	if c := cond(second.HTTPRoutes[route][0].Conditions, "Accepted"); !c.LastTransitionTime.Time.Equal(goldenNow) {
		t.Fatalf("Accepted moved to %v on a resync", c.LastTransitionTime)
	}

	// The backend Service goes away.
	writeBackAll(&in.Snapshot, second)
	in.Now = goldenNow.Add(2 * time.Hour)
	in.Services = nil
	third := translate.Translate(in)
	ch := translate.Diff(second, third)
	if len(ch.HTTPRoutes) != 1 || ch.HTTPRoutes[0] != route {
		t.Fatalf("Diff = %+v, want the route only", ch)
	}
	conds := third.HTTPRoutes[route][0].Conditions
	if c := cond(conds, "ResolvedRefs"); c.Status != metav1.ConditionFalse || c.Reason != string(gwv1.RouteReasonBackendNotFound) || !c.LastTransitionTime.Time.Equal(in.Now) {
		t.Fatalf("ResolvedRefs = %+v", c)
	}
	if c := cond(conds, "Accepted"); !c.LastTransitionTime.Time.Equal(goldenNow) {
		t.Fatalf("Accepted moved although it did not change: %+v", c)
	}
	if len(third.Events) != 1 || third.Events[0].Reason != string(gwv1.RouteReasonBackendNotFound) || third.Events[0].Type != "Warning" {
		t.Fatalf("events = %+v, want one BackendNotFound warning", third.Events)
	}
	// The rule's backend now answers 500 for its share instead of vanishing.
	b := third.Config.Routes[0].Rules[0].Backends[0]
	if b.Status != 500 || b.Cluster != "" {
		t.Fatalf("backend = %+v, want status 500", b)
	}
	if len(third.Config.Clusters) != 0 {
		t.Fatalf("clusters = %+v, want none", third.Config.Clusters)
	}
}

// Translate must not depend on the order objects are listed in.
func TestDeterministicOrder(t *testing.T) {
	in := loadGolden(t, "basic.yaml")
	a := render(t, translate.Translate(in))
	rev := func(s []*gwv1.HTTPRoute) {
		for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
			s[i], s[j] = s[j], s[i]
		}
	}
	rev(in.HTTPRoutes)
	for i, j := 0, len(in.EndpointSlices)-1; i < j; i, j = i+1, j-1 {
		in.EndpointSlices[i], in.EndpointSlices[j] = in.EndpointSlices[j], in.EndpointSlices[i]
	}
	if b := render(t, translate.Translate(in)); string(a) != string(b) {
		t.Fatalf("output depends on input order:\n%s", lineDiff(string(a), string(b)))
	}
}

// The cache is a memo: whatever changes between translations, the output
// with a warm cache is the output of a cold translation. Changes replace
// objects with new resourceVersions, as informers do.
func TestCacheChangesNothing(t *testing.T) {
	in := translate.Input{Snapshot: *scaleSnapshot(3, 40), ControllerName: translate.DefaultControllerName, Now: goldenNow}
	// Two routes share a Service, so a shared cluster outlives its first user.
	shared := newUID(in.HTTPRoutes[1].DeepCopy())
	shared.Name = "shares-app-0"
	shared.Spec.Rules[1].BackendRefs[0].Name = "app-0"
	shared.Spec.Rules[1].BackendRefs[0].Namespace = ptr(gwv1.Namespace("team-0"))
	in.HTTPRoutes = append(in.HTTPRoutes, shared)
	in.ReferenceGrants = append(in.ReferenceGrants, &gwv1.ReferenceGrant{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-0", Name: "from-team-1", UID: "from-team-1", ResourceVersion: "1"},
		Spec: gwv1.ReferenceGrantSpec{
			From: []gwv1.ReferenceGrantFrom{{Group: gwv1.GroupName, Kind: "HTTPRoute", Namespace: "team-1"}},
			To:   []gwv1.ReferenceGrantTo{{Kind: "Service"}},
		}})
	cache := translate.NewCache()

	writeBack := func(s *translate.Snapshot) {
		writeBackAll(s, translate.Translate(&translate.Input{Snapshot: *s, ControllerName: translate.DefaultControllerName, Now: goldenNow}))
	}
	serviceAppProtocol := func(i int, p string) func(s *translate.Snapshot) {
		return func(s *translate.Snapshot) {
			c := newRV(s.Services[i].DeepCopy())
			c.Spec.Ports[0].AppProtocol = ptr(p)
			s.Services[i] = c
		}
	}
	// Each step changes the snapshot; patched says whether the warm
	// translation may patch the last one (only backends changed, nothing
	// deleted, no condition changes status) and translated how many routes
	// it translates again then.
	steps := []struct {
		name       string
		change     func(s *translate.Snapshot)
		patched    bool
		translated int
	}{
		{name: "unchanged", change: func(*translate.Snapshot) {}},
		// Conditions took the clock: a repeat gives new times.
		{name: "again unchanged", change: func(*translate.Snapshot) {}},
		{name: "status written back", change: writeBack},
		{name: "warm", change: func(*translate.Snapshot) {}, patched: true},
		{name: "listed in another order", change: func(s *translate.Snapshot) {
			slices.Reverse(s.Gateways)
			slices.Reverse(s.HTTPRoutes)
			slices.Reverse(s.Services)
			slices.Reverse(s.EndpointSlices)
		}, patched: true},
		{name: "endpoints change", change: func(s *translate.Snapshot) {
			c := newRV(s.EndpointSlices[5].DeepCopy())
			c.Endpoints = c.Endpoints[:1]
			s.EndpointSlices[5] = c
		}, patched: true, translated: 1},
		{name: "endpoints of a shared Service change", change: func(s *translate.Snapshot) {
			i := slices.IndexFunc(s.EndpointSlices, func(e *discoveryv1.EndpointSlice) bool { return e.Name == "app-0-abcde" })
			c := newRV(s.EndpointSlices[i].DeepCopy())
			c.Endpoints = c.Endpoints[1:]
			s.EndpointSlices[i] = c
		}, patched: true, translated: 2},
		{name: "a slice added to a Service", change: func(s *translate.Snapshot) {
			c := newUID(s.EndpointSlices[slices.IndexFunc(s.EndpointSlices, func(e *discoveryv1.EndpointSlice) bool { return e.Name == "app-3-abcde" })].DeepCopy())
			c.Name += "-second"
			c.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"10.9.9.9"}}}
			s.EndpointSlices = append(s.EndpointSlices, c)
		}, patched: true, translated: 1},
		{name: "appProtocol unsupported", change: serviceAppProtocol(11, "example.com/foo")},
		{name: "status written back again", change: writeBack},
		// ResolvedRefs stays False for the same reason: only its message
		// changes, and so does the route's status, without the clock.
		{name: "appProtocol unsupported otherwise", change: serviceAppProtocol(11, "example.com/bar"), patched: true, translated: 1},
		{name: "service becomes h2c", change: serviceAppProtocol(7, "kubernetes.io/h2c")}, // a new cluster name
		{name: "a slice deleted", change: func(s *translate.Snapshot) {
			s.EndpointSlices = slices.DeleteFunc(slices.Clone(s.EndpointSlices), func(e *discoveryv1.EndpointSlice) bool { return e.Name == "app-3-abcde-second" })
		}},
		{name: "a slice moves to another Service", change: func(s *translate.Snapshot) {
			c := newRV(s.EndpointSlices[6].DeepCopy())
			c.Labels = map[string]string{discoveryv1.LabelServiceName: "app-8"}
			s.EndpointSlices[6] = c
		}},
		{name: "warm again", change: func(*translate.Snapshot) {}, patched: true},
		{name: "service deleted", change: func(s *translate.Snapshot) { s.Services = append(s.Services[:9:9], s.Services[10:]...) }},
		{name: "first user of a shared cluster deleted", change: func(s *translate.Snapshot) { s.HTTPRoutes = s.HTTPRoutes[1:] }},
		{name: "grant deleted", change: func(s *translate.Snapshot) { s.ReferenceGrants = nil }},
		{name: "gateway listener changes", change: func(s *translate.Snapshot) {
			c := newRV(s.Gateways[1].DeepCopy())
			h := gwv1.Hostname("*.other.example.com")
			c.Spec.Listeners[0].Hostname = &h
			s.Gateways[1] = c
		}},
		{name: "route changes", change: func(s *translate.Snapshot) {
			c := newRV(s.HTTPRoutes[3].DeepCopy())
			c.Spec.Rules = c.Spec.Rules[:1]
			s.HTTPRoutes[3] = c
		}},
		{name: "later", change: func(s *translate.Snapshot) {}},
	}
	var prevWarm, prevCold *translate.Output
	for _, st := range steps {
		st.change(&in.Snapshot)
		in.Now = in.Now.Add(time.Minute)
		coldOut := translate.Translate(&in)
		warmOut := cache.Translate(&in)
		want := render(t, coldOut)
		if got := render(t, warmOut); string(got) != string(want) {
			t.Fatalf("%s: with cache differs from without:\n%s", st.name, lineDiff(string(want), string(got)))
		}
		// Diff takes a shortcut when the output patched the previous one:
		// it must name the same objects a full comparison does.
		if got, want := translate.Diff(prevWarm, warmOut), translate.Diff(prevCold, coldOut); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Diff with cache %+v, without %+v", st.name, got, want)
		}
		prevWarm, prevCold = warmOut, coldOut
		reused, translated := cache.Stats()
		patched := translate.Patched(cache)
		t.Logf("%s: patched %v, %d routes reused, %d translated", st.name, patched, reused, translated)
		if patched != st.patched {
			t.Errorf("%s: patched %v, want %v", st.name, patched, st.patched)
		}
		if patched && translated != st.translated {
			t.Errorf("%s: %d routes translated, want %d", st.name, translated, st.translated)
		}
		if (st.name == "warm" || st.name == "listed in another order") && (reused != len(in.HTTPRoutes) || translated != 0) {
			t.Errorf("%s: %d reused, %d translated; want every route reused", st.name, reused, translated)
		}
	}
}
