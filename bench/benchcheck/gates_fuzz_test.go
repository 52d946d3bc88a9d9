// This file fuzzes the reading of the gates tables.

package main

import (
	"math"
	"os"
	"strings"
	"testing"
)

// FuzzParseGates reads arbitrary documents as BENCHMARKS.md. Whatever it
// is given, parseGates returns an error or gates that can all be
// enforced: at least one, names unique, each naming a benchmark and a
// package, and gating something with finite positive (or, for a value,
// non-negative) bounds. A table it cannot read must never become a gate
// that always passes.
func FuzzParseGates(f *testing.F) {
	for _, seed := range []string{goodTable, mixedTable, "## Gates\n\n| a |\n", ""} {
		f.Add(seed)
	}
	if repo, err := os.ReadFile("../../BENCHMARKS.md"); err == nil {
		f.Add(string(repo))
	}
	f.Fuzz(func(t *testing.T, doc string) {
		gates, err := parseGates(strings.NewReader(doc), "B.md")
		if err != nil {
			return
		}
		if len(gates) == 0 {
			t.Fatal("no error and no gates")
		}
		names := map[string]bool{}
		for _, g := range gates {
			if names[g.Name] {
				t.Fatalf("gate %q twice", g.Name)
			}
			names[g.Name] = true
			if g.Name == "" || g.Package == "" || !strings.HasPrefix(g.Benchmark, "Benchmark") {
				t.Fatalf("gate without a name, package or benchmark: %+v", g)
			}
			finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
			switch {
			case g.ratioGated():
				if !(g.MaxRatio > 0) || !finite(g.MaxRatio) || !strings.HasPrefix(g.Baseline, "Benchmark") {
					t.Fatalf("ratio gate with a bad bound or baseline: %+v", g)
				}
			case g.valueGated():
				if !(g.MaxValue >= 0) || !finite(g.MaxValue) {
					t.Fatalf("value gate with a bad bound: %+v", g)
				}
			case !g.allocsGated():
				t.Fatalf("a gate that gates nothing: %+v", g)
			}
		}
	})
}
