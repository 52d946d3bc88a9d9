package translate_test

import (
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// TestCacheSeesReplacedObjects shows the Cache's contract: an object is
// never edited once translated; a change is a new object. A replaced
// object is seen. An object edited in place is not: the Cache takes an
// object it has seen for unchanged, which is what lets it skip the work.
func TestCacheSeesReplacedObjects(t *testing.T) {
	in := &translate.Input{Snapshot: *scaleSnapshot(2, 6), ControllerName: translate.DefaultControllerName, Now: goldenNow}
	cache := translate.NewCache()
	writeBackAll(&in.Snapshot, cache.Translate(in))
	before := cache.Translate(in)
	noPort := func(r *gwv1.HTTPRoute) {
		port := gwv1.PortNumber(81) // the Service has no port 81
		r.Spec.Rules[1].BackendRefs[0].Port = &port
	}

	c := in.HTTPRoutes[2].DeepCopy()
	noPort(c)
	in.HTTPRoutes[2] = c
	if got, want := render(t, cache.Translate(in)), render(t, translate.Translate(in)); string(got) != string(want) {
		t.Fatalf("a replaced route: with a Cache the output differs:\n%s", lineDiff(string(want), string(got)))
	}
	if d := translate.Diff(before, translate.Translate(in)); len(d.HTTPRoutes) != 1 {
		t.Fatalf("a backendRef to a missing port changed %v, want that route's status", d.HTTPRoutes)
	}

	before = cache.Translate(in)
	noPort(in.HTTPRoutes[4]) // breaks the contract
	if d := translate.Diff(before, translate.Translate(in)); len(d.HTTPRoutes) != 1 {
		t.Fatalf("the edit changed %v in the pure translation, want one route", d.HTTPRoutes)
	}
	if d := translate.Diff(before, cache.Translate(in)); !d.Empty() {
		t.Fatalf("the Cache saw a route edited in place (%+v): if it now compares content, update its contract", d)
	}
}
