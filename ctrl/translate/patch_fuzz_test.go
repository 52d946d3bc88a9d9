package translate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
