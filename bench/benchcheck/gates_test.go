package main

import (
	"strings"
	"testing"
)

const goodTable = `# Benchmarks

Some prose.

## Gates

The gates below are enforced.

| gate | package | benchmark | baseline | max ratio | max allocs/op |
| --- | --- | --- | --- | ---: | :---: |
| matcher-scale | ./matcher | BenchmarkMatch/routes=10000 | BenchmarkMatch/routes=10 | 2.0 | 0 |
| matcher-alloc-10 | ` + "`./matcher`" + ` | BenchmarkMatch/routes=10 | - | - | 0 |
| proxy-ratio | ./dataplane | BenchmarkProxy | BenchmarkDirect | 1.5 | - |

## Results

| gate | package | benchmark | baseline | max ratio | max allocs/op |
| not | a | gate | table | at | all |
`

func TestParseGates(t *testing.T) {
	gates, err := parseGates(strings.NewReader(goodTable), "B.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []gate{
		{Name: "matcher-scale", Package: "./matcher", Benchmark: "BenchmarkMatch/routes=10000",
			Baseline: "BenchmarkMatch/routes=10", MaxRatio: 2, MaxAllocs: 0, Line: 11},
		{Name: "matcher-alloc-10", Package: "./matcher", Benchmark: "BenchmarkMatch/routes=10",
			MaxAllocs: 0, Line: 12},
		{Name: "proxy-ratio", Package: "./dataplane", Benchmark: "BenchmarkProxy",
			Baseline: "BenchmarkDirect", MaxRatio: 1.5, MaxAllocs: -1, Line: 13},
	}
	if len(gates) != len(want) {
		t.Fatalf("got %d gates, want %d: %+v", len(gates), len(want), gates)
	}
	for i := range want {
		if gates[i] != want[i] {
			t.Errorf("gate %d:\n got %+v\nwant %+v", i, gates[i], want[i])
		}
	}
	if !gates[0].ratioGated() || !gates[0].allocsGated() {
		t.Error("matcher-scale should gate ratio and allocs")
	}
	if gates[1].ratioGated() || !gates[1].allocsGated() {
		t.Error("matcher-alloc-10 should gate allocs only")
	}
	if !gates[2].ratioGated() || gates[2].allocsGated() {
		t.Error("proxy-ratio should gate the ratio only")
	}
}

// TestParseGatesErrors checks that every malformed table is refused with a
// message pointing at the line and the fix, rather than read as "no gates".
func TestParseGatesErrors(t *testing.T) {
	const head = "## Gates\n\n| gate | package | benchmark | baseline | max ratio | max allocs/op |\n|---|---|---|---|---|---|\n"
	tests := []struct {
		name, doc, want string
	}{
		{"no heading", "# Benchmarks\n\n| a |\n", `no "## Gates" heading`},
		{"empty table", head, "no gate rows"},
		{"no table", "## Gates\n\nnothing yet\n", "no gate rows"},
		{"renamed column", "## Gates\n| gate | pkg | benchmark | baseline | max ratio | max allocs/op |\n|---|---|---|---|---|---|\n",
			"B.md:2: gates table header is | gate | pkg |"},
		{"missing separator", "## Gates\n| gate | package | benchmark | baseline | max ratio | max allocs/op |\n| g | ./m | BenchmarkA | - | - | 0 |\n",
			"B.md:3: want the |---|---| row"},
		{"too few cells", head + "| g | ./m | BenchmarkA | - | 0 |\n", "B.md:5: gate row has 5 cells, want 6"},
		{"too many cells", head + "| g | ./m | BenchmarkA | - | - | 0 | x |\n", "gate row has 7 cells, want 6"},
		{"no trailing pipe", head + "| g | ./m | BenchmarkA | - | - | 0\n", "does not end with |"},
		{"no name", head + "|  | ./m | BenchmarkA | - | - | 0 |\n", "no gate name"},
		{"no package", head + "| g | - | BenchmarkA | - | - | 0 |\n", "not a package path"},
		{"bad benchmark", head + "| g | ./m | TestA | - | - | 0 |\n", `gate g: benchmark: "TestA" does not start with Benchmark`},
		{"procs-like name", head + "| g | ./m | BenchmarkA/n-2 | - | - | 0 |\n", "GOMAXPROCS suffix"},
		{"bad baseline", head + "| g | ./m | BenchmarkA | A | 2 | 0 |\n", "gate g: baseline:"},
		{"bad ratio", head + "| g | ./m | BenchmarkA | BenchmarkB | two | 0 |\n", `max ratio "two" is not a positive number`},
		{"zero ratio", head + "| g | ./m | BenchmarkA | BenchmarkB | 0 | 0 |\n", "not a positive number"},
		{"ratio without baseline", head + "| g | ./m | BenchmarkA | - | 2 | 0 |\n", "baseline and max ratio go together"},
		{"baseline without ratio", head + "| g | ./m | BenchmarkA | BenchmarkB | - | 0 |\n", "baseline and max ratio go together"},
		{"bad allocs", head + "| g | ./m | BenchmarkA | - | - | 0.5 |\n", `max allocs/op "0.5" is not a whole number`},
		{"negative allocs", head + "| g | ./m | BenchmarkA | - | - | -1 |\n", "is not a whole number"},
		{"gates nothing", head + "| g | ./m | BenchmarkA | - | - | - |\n", "gate g gates nothing"},
		{"duplicate", head + "| g | ./m | BenchmarkA | - | - | 0 |\n| g | ./m | BenchmarkB | - | - | 0 |\n",
			`B.md:6: gate "g" already defined on line 5`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gates, err := parseGates(strings.NewReader(tt.doc), "B.md")
			if err == nil {
				t.Fatalf("no error; got gates %+v", gates)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// The table ends at the first line that is not a row; a later table in the
// same section is not read as more gates.
func TestParseGatesStopsAtTableEnd(t *testing.T) {
	doc := "## Gates\n| gate | package | benchmark | baseline | max ratio | max allocs/op |\n|---|---|---|---|---|---|\n" +
		"| g | ./m | BenchmarkA | - | - | 0 |\n\nNotes.\n\n| x | y |\n"
	gates, err := parseGates(strings.NewReader(doc), "B.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(gates) != 1 || gates[0].Name != "g" {
		t.Fatalf("got %+v, want the one gate g", gates)
	}
}
