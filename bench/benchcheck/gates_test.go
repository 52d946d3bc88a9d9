package main

import (
	"os"
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

// parseErrorCase is a document parseGates must refuse, with an error
// holding want.
type parseErrorCase struct{ name, doc, want string }

// wantParseErrors runs parseGates on each case's document and fails
// unless it is refused with the case's error.
func wantParseErrors(t *testing.T, tests []parseErrorCase) {
	t.Helper()
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

// TestParseGatesErrors checks that every malformed table is refused with a
// message pointing at the line and the fix, rather than read as "no gates".
func TestParseGatesErrors(t *testing.T) {
	const head = "## Gates\n\n| gate | package | benchmark | baseline | max ratio | max allocs/op |\n|---|---|---|---|---|---|\n"
	tests := []parseErrorCase{
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
	wantParseErrors(t, tests)
}

// mixedTable has both tables, the metric one first, with prose between them.
const mixedTable = `## Gates

Gates on a benchmark's own metrics:

| gate | package | benchmark | baseline | metric | max |
| --- | --- | --- | --- | --- | ---: |
| proxy-cpu-vs-floor | ./dataplane | BenchmarkProxy/impl=tunnelgate | BenchmarkProxy/impl=floor | cpu-ns/op | 1.2 |
| scrape-size | ./metrics | BenchmarkScrape/routes=1000 | - | ` + "`bytes/route`" + ` | 420 |
| proxy-syscalls | ./dataplane | BenchmarkProxy/impl=tunnelgate | - | syscalls/op | 6.5 |
| matcher-no-allocs | ./matcher | BenchmarkMatch/routes=10 | - | allocs/op | 0 |

And on time and allocations:

| gate | package | benchmark | baseline | max ratio | max allocs/op |
| --- | --- | --- | --- | --- | --- |
| matcher-scale | ./matcher | BenchmarkMatch/routes=10000 | BenchmarkMatch/routes=10 | 2.0 | 0 |

| gate | package | benchmark | baseline | metric | max |
|---|---|---|---|---|---|

## Results
`

func TestParseGatesMetricTable(t *testing.T) {
	gates, err := parseGates(strings.NewReader(mixedTable), "B.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []gate{
		{Name: "proxy-cpu-vs-floor", Package: "./dataplane", Benchmark: "BenchmarkProxy/impl=tunnelgate",
			Baseline: "BenchmarkProxy/impl=floor", Metric: "cpu-ns/op", MaxRatio: 1.2, MaxAllocs: -1, Line: 7},
		{Name: "scrape-size", Package: "./metrics", Benchmark: "BenchmarkScrape/routes=1000",
			Metric: "bytes/route", MaxValue: 420, MaxAllocs: -1, Line: 8},
		{Name: "proxy-syscalls", Package: "./dataplane", Benchmark: "BenchmarkProxy/impl=tunnelgate",
			Metric: "syscalls/op", MaxValue: 6.5, MaxAllocs: -1, Line: 9},
		{Name: "matcher-no-allocs", Package: "./matcher", Benchmark: "BenchmarkMatch/routes=10",
			Metric: "allocs/op", MaxValue: 0, MaxAllocs: -1, Line: 10},
		{Name: "matcher-scale", Package: "./matcher", Benchmark: "BenchmarkMatch/routes=10000",
			Baseline: "BenchmarkMatch/routes=10", MaxRatio: 2, MaxAllocs: 0, Line: 16},
	}
	if len(gates) != len(want) {
		t.Fatalf("got %d gates, want %d: %+v", len(gates), len(want), gates)
	}
	for i := range want {
		if gates[i] != want[i] {
			t.Errorf("gate %d:\n got %+v\nwant %+v", i, gates[i], want[i])
		}
	}
	for _, tc := range []struct {
		g                    gate
		ratio, value, allocs bool
		metric               string
	}{
		{gates[0], true, false, false, "cpu-ns/op"},
		{gates[1], false, true, false, "bytes/route"},
		{gates[3], false, true, false, "allocs/op"},
		{gates[4], true, false, true, "ns/op"},
	} {
		if tc.g.ratioGated() != tc.ratio || tc.g.valueGated() != tc.value || tc.g.allocsGated() != tc.allocs || tc.g.metric() != tc.metric {
			t.Errorf("gate %s: ratio %v value %v allocs %v metric %s; want %v %v %v %s", tc.g.Name,
				tc.g.ratioGated(), tc.g.valueGated(), tc.g.allocsGated(), tc.g.metric(),
				tc.ratio, tc.value, tc.allocs, tc.metric)
		}
	}
}

// TestParseGatesMetricErrors checks the metric table's rows are refused as
// the ratio table's are: with the file, the line and the fix.
func TestParseGatesMetricErrors(t *testing.T) {
	const head = "## Gates\n\n| gate | package | benchmark | baseline | metric | max |\n|---|---|---|---|---|---|\n"
	const ratioHead = "| gate | package | benchmark | baseline | max ratio | max allocs/op |\n|---|---|---|---|---|---|\n"
	tests := []parseErrorCase{
		{"empty table", head, "no gate rows"},
		{"too few cells", head + "| g | ./m | BenchmarkA | - | 5 |\n", "B.md:5: gate row has 5 cells, want 6: | gate | package | benchmark | baseline | metric | max |"},
		{"too many cells", head + "| g | ./m | BenchmarkA | - | syscalls/op | 5 | 0 |\n", "gate row has 7 cells, want 6"},
		{"no name", head + "| - | ./m | BenchmarkA | - | syscalls/op | 5 |\n", "B.md:5: gate row has no gate name"},
		{"no package", head + "| g |  | BenchmarkA | - | syscalls/op | 5 |\n", "not a package path"},
		{"bad benchmark", head + "| g | ./m | A | - | syscalls/op | 5 |\n", `gate g: benchmark: "A" does not start with Benchmark`},
		{"bad baseline", head + "| g | ./m | BenchmarkA | BenchmarkB-4 | cpu-ns/op | 1.2 |\n", "gate g: baseline:"},
		{"no metric", head + "| g | ./m | BenchmarkA | - | - | 5 |\n", "B.md:5: gate g: metric: no unit"},
		{"empty metric", head + "| g | ./m | BenchmarkA | - |  | 5 |\n", "gate g: metric: no unit"},
		{"metric with space", head + "| g | ./m | BenchmarkA | - | bytes per route | 5 |\n", "contains a space"},
		{"columns swapped", head + "| g | ./m | BenchmarkA | - | 420 | bytes/route |\n", `"420" is a number, not a unit`},
		{"no max", head + "| g | ./m | BenchmarkA | - | syscalls/op | - |\n", `B.md:5: gate g: max "-" is not a number >= 0; with baseline - it bounds the median of syscalls/op`},
		{"bad max", head + "| g | ./m | BenchmarkA | - | syscalls/op | six |\n", `max "six" is not a number >= 0`},
		{"negative max", head + "| g | ./m | BenchmarkA | - | syscalls/op | -1 |\n", "is not a number >= 0"},
		{"NaN max", head + "| g | ./m | BenchmarkA | - | syscalls/op | NaN |\n", "is not a number >= 0"},
		{"infinite max", head + "| g | ./m | BenchmarkA | - | syscalls/op | Inf |\n", "is not a number >= 0"},
		{"no ratio", head + "| g | ./m | BenchmarkA | BenchmarkB | cpu-ns/op | - |\n",
			`gate g: max "-" is not a positive number; with a baseline it bounds the ratio of the two medians of cpu-ns/op`},
		{"zero ratio", head + "| g | ./m | BenchmarkA | BenchmarkB | cpu-ns/op | 0 |\n", "is not a positive number"},
		{"renamed column", "## Gates\n| gate | package | benchmark | baseline | unit | max |\n|---|---|---|---|---|---|\n",
			"B.md:2: gates table header is | gate | package | benchmark | baseline | unit | max |, want"},
		{"header without separator", "## Gates\n| gate | package | benchmark | baseline | metric | max |\n\ntext\n",
			"B.md:2: gates table header has no |---|---| row under it"},
		{"header at end of section", "## Gates\n" + ratioHead + "| g | ./m | BenchmarkA | - | - | 0 |\n\n| gate | package | benchmark | baseline | metric | max |\n",
			"B.md:6: gates table header has no |---|---| row under it"},
		// Gate names are unique across both tables.
		{"duplicate across tables", "## Gates\n" + ratioHead + "| g | ./m | BenchmarkA | - | - | 0 |\n\n" + head[len("## Gates\n\n"):] +
			"| g | ./m | BenchmarkA | - | syscalls/op | 5 |\n", `B.md:8: gate "g" already defined on line 4`},
		{"duplicate in metric table", head + "| g | ./m | BenchmarkA | - | syscalls/op | 5 |\n| g | ./m | BenchmarkA | - | bytes/route | 5 |\n",
			`B.md:6: gate "g" already defined on line 5`},
		// A bad row in the second table fails the whole file, not just that table.
		{"bad row after good table", "## Gates\n" + ratioHead + "| g | ./m | BenchmarkA | - | - | 0 |\n\n" + head[len("## Gates\n\n"):] +
			"| h | ./m | BenchmarkA | - | syscalls/op |  |\n", `B.md:8: gate h: max ""`},
		// Any other table in the section is refused rather than skipped:
		// a misspelled header must not make its gates vanish.
		{"other table after gates", "## Gates\n" + ratioHead + "| g | ./m | BenchmarkA | - | - | 0 |\n\nNotes.\n\n| x | y |\n",
			"B.md:8: gates table header is | x | y |"},
	}
	wantParseErrors(t, tests)
}

// A table ends at the first line that is not a row; what follows up to the
// next heading is prose or another gates table, and the next heading ends
// the section, whatever tables come after it.
func TestParseGatesTableEnds(t *testing.T) {
	doc := "## Gates\n| gate | package | benchmark | baseline | max ratio | max allocs/op |\n|---|---|---|---|---|---|\n" +
		"| g | ./m | BenchmarkA | - | - | 0 |\n\nNotes.\n\n| gate | package | benchmark | baseline | metric | max |\n|---|---|---|---|---|---|\n" +
		"| h | ./m | BenchmarkA | - | syscalls/op | 5 |\nMore notes.\n## Results\n\n| x | y |\n"
	gates, err := parseGates(strings.NewReader(doc), "B.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(gates) != 2 || gates[0].Name != "g" || gates[1].Name != "h" || gates[1].Line != 10 {
		t.Fatalf("got %+v, want the gates g and h (line 10)", gates)
	}
}

// The repository's own BENCHMARKS.md must parse, whichever tables it has.
func TestParseRepoGates(t *testing.T) {
	f, err := os.Open("../../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gates, err := parseGates(f, "BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(gates) == 0 {
		t.Fatal("no gates")
	}
}
