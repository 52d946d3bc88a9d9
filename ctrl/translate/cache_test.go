package translate_test

import (
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
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

// randomChange changes the snapshot as informers would (new objects,
// never edits) and says what it did.
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
		list.Index(i).Set(edited(deepCopy(list.Index(i))))
		return "one of " + kind + " edited"
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
