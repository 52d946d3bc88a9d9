package translate_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/standalone"
)

// FuzzPatch checks, for any snapshot standalone mode loads, that patching
// the last translation when backends change, and routes are edited,
// added and deleted (patch.go, routepatch.go), gives what a full
// translation does. The golden inputs are the seeds.
func FuzzPatch(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/golden/*.yaml")
	for _, in := range inputs {
		if strings.HasSuffix(in, ".out.yaml") {
			continue
		}
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Fuzz(func(t *testing.T, doc string) {
		snap, err := standalone.LoadBytes("fuzz.yaml", []byte(doc))
		if err != nil {
			return
		}
		if len(snap.HTTPRoutes)+len(snap.GRPCRoutes)+len(snap.EndpointSlices) > 200 {
			return // keep each input quick
		}
		out := translate.Translate(goldenInput(snap))
		checkPatchesN(t, snap, out, false, 3)
	})
}

// FuzzRouteSet checks, for a golden input and a seed, that a run of
// random changes, mostly routes added (copies of the input's, with or
// without a status, older or newer, with a hostname more) and deleted,
// as well as statuses written back, routes edited and EndpointSlices
// replaced, one or two at a time, gives with a Cache what a cold
// translation does after each: the same output, statuses and Diff.
func FuzzRouteSet(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/golden/*.yaml")
	var names []string
	for _, in := range inputs {
		if !strings.HasSuffix(in, ".out.yaml") {
			names = append(names, filepath.Base(in))
		}
	}
	for i := range names {
		f.Add(uint8(i), uint64(i))
	}
	f.Fuzz(func(t *testing.T, input uint8, seed uint64) {
		in := loadGolden(t, names[int(input)%len(names)])
		cloneLists(&in.Snapshot)
		writeBackAll(&in.Snapshot, translate.Translate(in))
		rng := rand.New(rand.NewPCG(seed, 7))
		cache := translate.NewCache()
		http, grpc := slices.Clone(in.HTTPRoutes), slices.Clone(in.GRPCRoutes)
		var prevWarm, prevCold *translate.Output
		for step := range 40 {
			what := randomRouteChange(rng, &in.Snapshot, http, grpc, step)
			if rng.IntN(4) == 0 { // two changes in one, as informers batch them
				what += "; " + randomRouteChange(rng, &in.Snapshot, http, grpc, step+100)
			}
			cold, warm := translate.Translate(in), cache.Translate(in)
			if got, want := render(t, warm), render(t, cold); !bytes.Equal(got, want) {
				t.Fatalf("step %d, %s: with a Cache the output differs:\n%s", step, what, lineDiff(string(want), string(got)))
			}
			if got, want := statusesOf(t, warm), statusesOf(t, cold); !bytes.Equal(got, want) {
				t.Fatalf("step %d, %s: with a Cache the statuses differ:\n%s", step, what, lineDiff(string(want), string(got)))
			}
			if prevWarm != nil {
				if got, want := translate.Diff(prevWarm, warm), translate.Diff(prevCold, cold); !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d, %s: Diff with a Cache %+v, without %+v", step, what, got, want)
				}
			}
			prevWarm, prevCold = warm, cold
		}
	})
}

// randomRouteChange makes one of FuzzRouteSet's changes to s, copying
// routes from http and grpc (the input's), and says what it did.
func randomRouteChange(rng *rand.Rand, s *translate.Snapshot, http []*gwv1.HTTPRoute, grpc []*gwv1.GRPCRoute, step int) string {
	what := ""
	switch rng.IntN(8) {
	case 0:
		writeBackAll(s, translate.Translate(goldenInput(s)))
		return "statuses written back"
	case 1, 2:
		if len(s.HTTPRoutes) > 0 {
			i := rng.IntN(len(s.HTTPRoutes))
			what = "HTTPRoute " + s.HTTPRoutes[i].Name + " deleted"
			s.HTTPRoutes = slices.Delete(slices.Clone(s.HTTPRoutes), i, i+1)
		}
		if len(s.GRPCRoutes) > 0 && rng.IntN(2) == 0 {
			i := rng.IntN(len(s.GRPCRoutes))
			what += ", GRPCRoute " + s.GRPCRoutes[i].Name + " deleted"
			s.GRPCRoutes = slices.Delete(slices.Clone(s.GRPCRoutes), i, i+1)
		}
	case 3, 4:
		if len(http) > 0 {
			r := newUID(http[rng.IntN(len(http))].DeepCopy())
			r.Name = fmt.Sprintf("%s-copy%d", r.Name, step)
			if rng.IntN(2) == 0 {
				r.Status = gwv1.HTTPRouteStatus{}
			}
			if rng.IntN(2) == 0 {
				r.CreationTimestamp = metav1.NewTime(r.CreationTimestamp.Add(time.Duration(rng.IntN(7200)-3600) * time.Second))
			}
			if rng.IntN(3) == 0 {
				r.Spec.Hostnames = append(r.Spec.Hostnames, gwv1.Hostname(fmt.Sprintf("h%d.example.com", rng.IntN(3))))
			}
			s.HTTPRoutes = append(slices.Clone(s.HTTPRoutes), r)
			what = "HTTPRoute " + r.Name + " added"
		}
		if len(grpc) > 0 && rng.IntN(2) == 0 {
			r := newUID(grpc[rng.IntN(len(grpc))].DeepCopy())
			r.Name = fmt.Sprintf("%s-copy%d", r.Name, step)
			if rng.IntN(2) == 0 {
				r.Status = gwv1.GRPCRouteStatus{}
			}
			s.GRPCRoutes = append(slices.Clone(s.GRPCRoutes), r)
			what += ", GRPCRoute " + r.Name + " added"
		}
	case 5:
		if len(s.EndpointSlices) > 0 {
			i := rng.IntN(len(s.EndpointSlices))
			s.EndpointSlices = slices.Clone(s.EndpointSlices)
			s.EndpointSlices[i] = s.EndpointSlices[i].DeepCopy()
			what = "EndpointSlice " + s.EndpointSlices[i].Name + " replaced"
		}
	default:
		if len(s.HTTPRoutes) > 0 {
			i := rng.IntN(len(s.HTTPRoutes))
			s.HTTPRoutes = slices.Clone(s.HTTPRoutes)
			c := newRV(s.HTTPRoutes[i].DeepCopy())
			c.Generation++
			s.HTTPRoutes[i] = c
			what = "HTTPRoute " + c.Name + " edited"
		}
	}
	return what
}
