package translate_test

import (
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// TestCacheMatchesTranslate runs every golden input through a random life
// in a cluster (objects replaced unchanged, edited, deleted and brought
// back, listed in another order, statuses written back) and requires a
// Cache's translation to equal the pure one after every change, and Diff
// to name the same objects whichever it compares.
func TestCacheMatchesTranslate(t *testing.T) {
	inputs, err := filepath.Glob("testdata/golden/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range inputs {
		if strings.HasSuffix(path, ".out.yaml") {
			continue
		}
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			in := loadGolden(t, name)
			cloneLists(&in.Snapshot)
			rng := rand.New(rand.NewPCG(uint64(len(name)), 20))
			cache := translate.NewCache()
			var deleted []removed
			var prevWarm, prevCold *translate.Output
			for step := range 60 {
				what := randomChange(rng, in, &deleted)
				in.Now = in.Now.Add(time.Minute)
				cold := translate.Translate(in)
				warm := cache.Translate(in)
				if got, want := render(t, warm), render(t, cold); string(got) != string(want) {
					t.Fatalf("step %d, %s: with a Cache the output differs:\n%s", step, what, lineDiff(string(want), string(got)))
				}
				if got, want := translate.Diff(prevWarm, warm), translate.Diff(prevCold, cold); !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d, %s: Diff with a Cache %+v, without %+v", step, what, got, want)
				}
				prevWarm, prevCold = warm, cold
			}
		})
	}
}

// removed is an object taken out of the snapshot, to bring back later.
type removed struct {
	field int
	obj   reflect.Value
}

// randomChange changes the snapshot as informers would (a changed
// object has a new resourceVersion; one replaced unchanged keeps its
// own), or edits an object in place with a new resourceVersion, and says
// what it did.
func randomChange(rng *rand.Rand, in *translate.Input, deleted *[]removed) string {
	s := reflect.ValueOf(&in.Snapshot).Elem()
	f := rng.IntN(s.NumField())
	list, kind := s.Field(f), s.Type().Field(f).Name
	switch op := rng.IntN(10); {
	case op == 0:
		writeBackAll(&in.Snapshot, translate.Translate(in))
		return "statuses written back"
	case op == 1 && len(*deleted) > 0:
		i := rng.IntN(len(*deleted))
		d := (*deleted)[i]
		*deleted = append((*deleted)[:i], (*deleted)[i+1:]...)
		s.Field(d.field).Set(reflect.Append(s.Field(d.field), deepCopy(d.obj)))
		return "one of " + s.Type().Field(d.field).Name + " back"
	case list.Len() == 0:
		return "nothing"
	case op == 2:
		i := rng.IntN(list.Len())
		*deleted = append(*deleted, removed{f, reflect.ValueOf(list.Index(i).Interface())})
		list.Set(reflect.AppendSlice(list.Slice(0, i), list.Slice(i+1, list.Len())))
		return "one of " + kind + " deleted"
	case op == 3:
		reverse(list)
		return kind + " listed in another order"
	case op < 6:
		i := rng.IntN(list.Len())
		list.Index(i).Set(edited(newRVValue(deepCopy(list.Index(i)))))
		return "one of " + kind + " edited"
	case op == 6:
		edited(newRVValue(list.Index(rng.IntN(list.Len()))))
		return "one of " + kind + " edited in place"
	default:
		i := rng.IntN(list.Len())
		list.Index(i).Set(deepCopy(list.Index(i)))
		return "one of " + kind + " replaced"
	}
}

// edited changes a copy of an object where a change is common: an
// endpoint goes, a route loses its last rule, a listener its hostname.
func edited(o reflect.Value) reflect.Value {
	switch x := o.Interface().(type) {
	case *discoveryv1.EndpointSlice:
		x.Endpoints = x.Endpoints[min(1, len(x.Endpoints)):]
	case *gwv1.HTTPRoute:
		x.Spec.Rules = x.Spec.Rules[:max(0, len(x.Spec.Rules)-1)]
	case *gwv1.GRPCRoute:
		x.Spec.Rules = x.Spec.Rules[:max(0, len(x.Spec.Rules)-1)]
	case *gwv1.Gateway:
		if len(x.Spec.Listeners) > 0 {
			x.Spec.Listeners[0].Hostname = nil
		}
	}
	return o
}

func deepCopy(o reflect.Value) reflect.Value { return o.MethodByName("DeepCopy").Call(nil)[0] }

// newRVValue is newRV for an object in a reflect.Value.
func newRVValue(o reflect.Value) reflect.Value {
	newRV(o.Interface().(metav1.Object))
	return o
}

func reverse(list reflect.Value) {
	for i, j := 0, list.Len()-1; i < j; i, j = i+1, j-1 {
		a, b := list.Index(i).Interface(), list.Index(j).Interface()
		list.Index(i).Set(reflect.ValueOf(b))
		list.Index(j).Set(reflect.ValueOf(a))
	}
}

// cloneLists gives the snapshot lists of its own, to change.
func cloneLists(s *translate.Snapshot) {
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		f.Set(reflect.AppendSlice(reflect.MakeSlice(f.Type(), 0, f.Len()), f))
	}
}

// TestCacheTellsObjectsByResourceVersion shows the Cache's contract: an
// object is known by its identity and resourceVersion, which the API
// server changes on every write, never by its address. A changed object
// is seen whether it is a new object or the same one edited in place; a
// copy with the same resourceVersion (as a relist gives) is taken as
// unchanged, and so is an object edited in place without a new
// resourceVersion, which no API server does; an object without a
// resourceVersion (or a UID) is never taken as unchanged.
func TestCacheTellsObjectsByResourceVersion(t *testing.T) {
	in := &translate.Input{Snapshot: *scaleSnapshot(2, 6), ControllerName: translate.DefaultControllerName, Now: goldenNow}
	cache := translate.NewCache()
	writeBackAll(&in.Snapshot, cache.Translate(in))
	before := cache.Translate(in)
	noPort := func(r *gwv1.HTTPRoute) {
		port := gwv1.PortNumber(81) // the Service has no port 81
		r.Spec.Rules[1].BackendRefs[0].Port = &port
	}
	// check translates in with the Cache, requires what a cold
	// translation gives, and returns it and the routes it changed.
	check := func(what string) []types.NamespacedName {
		t.Helper()
		warm := cache.Translate(in)
		if got, want := render(t, warm), render(t, translate.Translate(in)); string(got) != string(want) {
			t.Fatalf("%s: with a Cache the output differs:\n%s", what, lineDiff(string(want), string(got)))
		}
		d := translate.Diff(before, warm)
		before = warm
		return d.HTTPRoutes
	}

	c := newRV(in.HTTPRoutes[2].DeepCopy())
	noPort(c)
	in.HTTPRoutes[2] = c
	if changed := check("a replaced route"); len(changed) != 1 || changed[0].Name != c.Name {
		t.Fatalf("a backendRef to a missing port changed %v, want that route's status", changed)
	}

	r := newRV(in.HTTPRoutes[4])
	noPort(r)
	if changed := check("a route edited in place"); len(changed) != 1 || changed[0].Name != r.Name {
		t.Fatalf("a route edited in place with a new resourceVersion changed %v, want that route's status", changed)
	}
	s := newRV(in.EndpointSlices[0])
	s.Endpoints = s.Endpoints[1:]
	check("a slice edited in place")

	writeBackAll(&in.Snapshot, before)
	check("statuses written back")
	// A relist: every object a copy, with its resourceVersion.
	copyObjects(&in.Snapshot)
	if changed := check("every object copied"); len(changed) != 0 {
		t.Fatalf("copies changed %v", changed)
	}
	if reused, translated := cache.Stats(); !translate.Patched(cache) || reused != len(in.HTTPRoutes) || translated != 0 {
		t.Fatalf("copies: patched %v, %d routes reused, %d translated; want every route reused", translate.Patched(cache), reused, translated)
	}

	// Without a resourceVersion, a route is translated every time, and so
	// is one whose Service has none.
	in.HTTPRoutes[1].ResourceVersion = ""
	for range 2 {
		check("a route without resourceVersion")
		if _, translated := cache.Stats(); translated != 1 {
			t.Fatalf("a route without resourceVersion: %d routes translated, want 1", translated)
		}
	}
	in.Services[3].ResourceVersion = ""
	for range 2 {
		check("a Service without resourceVersion")
		if _, translated := cache.Stats(); translated != 2 {
			t.Fatalf("a Service without resourceVersion: %d routes translated, want 2 (its route's and the route without one)", translated)
		}
	}

	// An object edited in place without a new resourceVersion breaks the
	// contract: the Cache takes it for unchanged.
	noPort(in.HTTPRoutes[5])
	if d := translate.Diff(before, translate.Translate(in)); len(d.HTTPRoutes) != 1 {
		t.Fatalf("the edit changed %v in the pure translation, want one route", d.HTTPRoutes)
	}
	if d := translate.Diff(before, cache.Translate(in)); !d.Empty() {
		t.Fatalf("the Cache saw a route edited in place without a new resourceVersion (%+v): update its contract", d)
	}
}

// copyObjects replaces every object of a snapshot with a copy.
func copyObjects(s *translate.Snapshot) {
	cloneLists(s)
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		for j := range v.Field(i).Len() {
			o := v.Field(i).Index(j)
			o.Set(deepCopy(o))
		}
	}
}

// A route added changes its Gateway's status (attachedRoutes); the status
// the controller writes comes back as a new Gateway object. That echo of
// the last translation leaves the Cache patching: it says nothing new.
// A status anyone else wrote, or a Gateway edited, is a change.
func TestCacheTakesStatusEchoesForUnchanged(t *testing.T) {
	in := &translate.Input{Snapshot: *scaleSnapshot(2, 6), ControllerName: translate.DefaultControllerName, Now: goldenNow}
	cache := translate.NewCache()
	writeBackAll(&in.Snapshot, cache.Translate(in))
	cache.Translate(in)
	check := func(what string, patched bool) *translate.Output {
		t.Helper()
		warm := cache.Translate(in)
		if got, want := render(t, warm), render(t, translate.Translate(in)); string(got) != string(want) {
			t.Fatalf("%s: with a Cache the output differs:\n%s", what, lineDiff(string(want), string(got)))
		}
		if translate.Patched(cache) != patched {
			t.Fatalf("%s: patched %v, want %v", what, translate.Patched(cache), patched)
		}
		return warm
	}

	added := newUID(in.HTTPRoutes[0].DeepCopy())
	added.Name += "-added"
	added.Status = gwv1.HTTPRouteStatus{}
	in.HTTPRoutes = append(slices.Clip(in.HTTPRoutes), added)
	out := check("a route added", true)
	if d := translate.Diff(nil, out); len(d.Gateways) == 0 {
		t.Fatal("no Gateway status to write back")
	}
	// As the controller writes them: the new route's and its parents'.
	writeBackParents(&in.Snapshot, out)
	w := newRV(added.DeepCopy())
	w.Status.Parents = out.HTTPRoutes[nsName(w.Namespace, w.Name)]
	in.HTTPRoutes[len(in.HTTPRoutes)-1] = w
	check("the statuses written back", true)

	// Someone else's status on a Gateway: not ours, so a change.
	g := newRV(in.Gateways[0].DeepCopy())
	g.Status.Addresses = append(g.Status.Addresses, gwv1.GatewayStatusAddress{Value: "192.0.2.1"})
	in.Gateways[0] = g
	check("a status someone else wrote", false)
	writeBackParents(&in.Snapshot, cache.Translate(in))
	check("ours written back again", true)

	// A label added: the metadata moved, so a change.
	g = newRV(in.Gateways[0].DeepCopy())
	g.Labels = map[string]string{"team": "web"}
	in.Gateways[0] = g
	check("a label added", false)
}
