package main

import (
	"bytes"
	"errors"
	"maps"
	"math"
	"strings"
	"testing"
)

// cannedOutput is go test -bench output as printed with GOMAXPROCS=2,
// -benchmem and -count 3, with the noise lines go test adds around it.
const cannedOutput = `goos: linux
goarch: amd64
pkg: github.com/tunnelgate/tunnelgate/matcher
cpu: Some CPU @ 2.00GHz
BenchmarkMatch/routes=10-2         	10000000	       100.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkMatch/routes=10-2         	10000000	       110.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkMatch/routes=10-2         	10000000	       900.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkMatch/routes=10000-2      	 5000000	       150.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkMatch/routes=10000-2      	 5000000	       160.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkMatch/routes=10000-2      	 5000000	       170.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkSlow-2                    	 1000000	       500.0 ns/op	       400.0 cpu-ns/op	         6.000 syscalls/op	      16 B/op	       1 allocs/op
BenchmarkSlow-2                    	 1000000	       510.0 ns/op	       420.0 cpu-ns/op	         7.000 syscalls/op	      48 B/op	       3 allocs/op
BenchmarkSlow-2                    	 1000000	       505.0 ns/op	       410.0 cpu-ns/op	      16 B/op	       1 allocs/op
--- BENCH: BenchmarkSlow-2
    bench_test.go:12: a log line
PASS
ok  	github.com/tunnelgate/tunnelgate/matcher	4.2s
`

func TestParseBenchOutput(t *testing.T) {
	got, err := parseBenchOutput(strings.NewReader(cannedOutput))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got benchmarks %v, want 3 names", keys(got))
	}
	base := got["BenchmarkMatch/routes=10"]
	if len(base) != 3 || base[2].NsPerOp != 900 || !base[2].HasAllocs || base[2].AllocsPerOp != 0 {
		t.Errorf("routes=10 samples = %+v", base)
	}
	// The median ignores the one disturbed run (900 ns).
	ns, missing := values(base, "ns/op")
	if m := median(ns); m != 110 || missing != 0 {
		t.Errorf("median = %v with %d missing, want 110 with none", m, missing)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("even median = %v, want 2.5", m)
	}
	// Each run's own metrics are kept by unit, next to the standard ones.
	slow := got["BenchmarkSlow"]
	if v, ok := slow[1].value("B/op"); !ok || v != 48 {
		t.Errorf("BenchmarkSlow run 2 B/op = %v, %v; want 48", v, ok)
	}
	if v, ok := slow[0].value("syscalls/op"); !ok || v != 6 {
		t.Errorf("BenchmarkSlow run 1 syscalls/op = %v, %v; want 6", v, ok)
	}
	// The third run did not report syscalls/op.
	if vs, missing := values(slow, "syscalls/op"); len(vs) != 2 || missing != 1 {
		t.Errorf("syscalls/op values %v, %d missing; want 2 values, 1 missing", vs, missing)
	}
}

// A sample built without Metrics still answers for ns/op and allocs/op.
func TestSampleValue(t *testing.T) {
	s := sample{NsPerOp: 5, AllocsPerOp: 2, HasAllocs: true}
	if v, ok := s.value("ns/op"); !ok || v != 5 {
		t.Errorf("ns/op = %v, %v", v, ok)
	}
	if v, ok := s.value("allocs/op"); !ok || v != 2 {
		t.Errorf("allocs/op = %v, %v", v, ok)
	}
	if _, ok := (sample{NsPerOp: 5}).value("allocs/op"); ok {
		t.Error("allocs/op reported without -benchmem")
	}
	if _, ok := s.value("cpu-ns/op"); ok {
		t.Error("cpu-ns/op reported though no line had it")
	}
}

func TestParseBenchLine(t *testing.T) {
	tests := []struct {
		line string
		name string
		ok   bool
	}{
		{"BenchmarkA-16 \t 100\t 5.5 ns/op", "BenchmarkA", true},
		{"BenchmarkA \t 100\t 5.5 ns/op", "BenchmarkA", true}, // GOMAXPROCS=1 prints no suffix
		{"BenchmarkA/size=1-4 \t 100\t 5.5 ns/op\t 3.0 MB/s\t 1 B/op\t 1 allocs/op", "BenchmarkA/size=1", true},
		{"BenchmarkA-4", "", false},                     // name printed, result never came (benchmark failed)
		{"BenchmarkA-4 \t 100\t 5 B/op", "", false},     // no ns/op
		{"BenchmarkA-4 \t many\t 5.5 ns/op", "", false}, // iterations not a number
		{"--- FAIL: BenchmarkA-4", "", false},
		{"ok  \tgithub.com/x/y\t1.0s", "", false},
	}
	for _, tt := range tests {
		name, _, ok := parseBenchLine(tt.line)
		if ok != tt.ok || name != tt.name {
			t.Errorf("parseBenchLine(%q) = %q, %v; want %q, %v", tt.line, name, ok, tt.name, tt.ok)
		}
	}
	_, s, _ := parseBenchLine("BenchmarkA/size=1-4 \t 100\t 5.5 ns/op\t 3.0 MB/s\t 391.0 bytes/route\t 1 B/op\t 1 allocs/op")
	want := map[string]float64{"ns/op": 5.5, "MB/s": 3, "bytes/route": 391, "B/op": 1, "allocs/op": 1}
	if !maps.Equal(s.Metrics, want) {
		t.Errorf("metrics = %v, want %v", s.Metrics, want)
	}
}

func TestEvaluate(t *testing.T) {
	samples, err := parseBenchOutput(strings.NewReader(cannedOutput))
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]map[string][]sample{"./matcher": samples}
	g := func(name, bench, base string, ratio float64, allocs int64) gate {
		return gate{Name: name, Package: "./matcher", Benchmark: bench, Baseline: base, MaxRatio: ratio, MaxAllocs: allocs}
	}
	tests := []struct {
		gate gate
		pass bool
		want string // in the problem text when failing
	}{
		// 160/110 = 1.45: within 2.0 × 1.25.
		{g("scale", "BenchmarkMatch/routes=10000", "BenchmarkMatch/routes=10", 2, 0), true, ""},
		// 1.45 > 1.0 × 1.25: the ratio fails.
		{g("tight", "BenchmarkMatch/routes=10000", "BenchmarkMatch/routes=10", 1.0, -1), false,
			"takes 1.45x the time of BenchmarkMatch/routes=10, over the budget of 1.25x"},
		// 1.45 is above 1.2 but within 1.2 × 1.25 = 1.5: the margin absorbs it.
		{g("margin", "BenchmarkMatch/routes=10000", "BenchmarkMatch/routes=10", 1.2, -1), true, ""},
		// One run of three made 3 allocs: the worst run counts, no margin.
		{g("allocs", "BenchmarkSlow", "", 0, 1), false, "made 3 allocs/op in its worst run, over the limit of 1"},
		{g("allocs-ok", "BenchmarkSlow", "", 0, 3), true, ""},
		// A gate on output that never appeared fails.
		{g("gone", "BenchmarkGone", "", 0, 0), false, "no output for BenchmarkGone in ./matcher"},
		{g("gone-base", "BenchmarkSlow", "BenchmarkGone", 2, -1), false, "no output for BenchmarkGone"},
		// Names are exact: a typo in the sub-benchmark is missing, not a pass.
		{g("typo", "BenchmarkMatch/routes=100", "", 0, 0), false, "no output for BenchmarkMatch/routes=100"},
	}
	for _, tt := range tests {
		t.Run(tt.gate.Name, func(t *testing.T) {
			r := evaluate([]gate{tt.gate}, results, nil, 1.25)[0]
			if r.passed() != tt.pass {
				t.Fatalf("passed = %v, want %v; problems %q", r.passed(), tt.pass, r.Problems)
			}
			if !tt.pass && !strings.Contains(strings.Join(r.Problems, "; "), tt.want) {
				t.Fatalf("problems %q do not contain %q", r.Problems, tt.want)
			}
		})
	}
}

// metricOutput is go test output of benchmarks that report their own
// metrics: the proxy's CPU per request against a floor relay's, and a
// scrape's size and system calls. BenchmarkNoCPU never reports cpu-ns/op,
// BenchmarkOddRun does in two runs of three.
const metricOutput = `BenchmarkProxy/impl=tunnelgate 	   20000	     52000 ns/op	     11000 cpu-ns/op	       6.000 syscalls/op	    1200 B/op	       4 allocs/op
BenchmarkProxy/impl=floor      	   20000	     40000 ns/op	     10000 cpu-ns/op	       6.000 syscalls/op	     900 B/op	       3 allocs/op
BenchmarkProxy/impl=tunnelgate 	   20000	     51000 ns/op	     12000 cpu-ns/op	       7.000 syscalls/op	    1200 B/op	       4 allocs/op
BenchmarkProxy/impl=floor      	   20000	     41000 ns/op	      9000 cpu-ns/op	       6.000 syscalls/op	     900 B/op	       3 allocs/op
BenchmarkProxy/impl=tunnelgate 	   20000	     90000 ns/op	     30000 cpu-ns/op	      20.00 syscalls/op	    1200 B/op	       4 allocs/op
BenchmarkProxy/impl=floor      	   20000	     39000 ns/op	     11000 cpu-ns/op	       6.000 syscalls/op	     900 B/op	       3 allocs/op
BenchmarkScrape/routes=1000    	     100	   1000000 ns/op	       391.0 bytes/route	     400000 B/op	      10 allocs/op
BenchmarkScrape/routes=1000    	     100	   1100000 ns/op	       391.0 bytes/route	     400000 B/op	      10 allocs/op
BenchmarkScrape/routes=1000    	     100	   1050000 ns/op	       395.5 bytes/route	     400000 B/op	      10 allocs/op
BenchmarkNoCPU                 	    1000	      1000 ns/op	       0 B/op	       0 allocs/op
BenchmarkOddRun                	    1000	      1000 ns/op	       2.000 syscalls/op
BenchmarkOddRun                	    1000	      1000 ns/op
BenchmarkOddRun                	    1000	      1000 ns/op	       2.000 syscalls/op
PASS
`

func TestEvaluateMetricGates(t *testing.T) {
	samples, err := parseBenchOutput(strings.NewReader(metricOutput))
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]map[string][]sample{"./dataplane": samples}
	const tg, floor, scrape = "BenchmarkProxy/impl=tunnelgate", "BenchmarkProxy/impl=floor", "BenchmarkScrape/routes=1000"
	ratio := func(name, bench, base, unit string, max float64) gate {
		return gate{Name: name, Package: "./dataplane", Benchmark: bench, Baseline: base, Metric: unit, MaxRatio: max, MaxAllocs: -1}
	}
	value := func(name, bench, unit string, max float64) gate {
		return gate{Name: name, Package: "./dataplane", Benchmark: bench, Metric: unit, MaxValue: max, MaxAllocs: -1}
	}
	tests := []struct {
		gate      gate
		pass      bool
		want      string  // in the problem text when failing
		ratio     float64 // when a ratio is gated and computed
		valueWant float64 // when a value is gated and computed
	}{
		// Median cpu-ns/op 12000 over 10000: 1.2, within 1.0 × 1.25. The
		// one disturbed run (30000) does not decide.
		{gate: ratio("cpu", tg, floor, "cpu-ns/op", 1.0), pass: true, ratio: 1.2},
		// 1.2 > 0.9 × 1.25 = 1.125: fails, naming the metric.
		{gate: ratio("cpu-tight", tg, floor, "cpu-ns/op", 0.9), ratio: 1.2,
			want: "takes 1.20x the cpu-ns/op of BenchmarkProxy/impl=floor, over the budget of 1.12x (max ratio 0.9 × margin 1.25)"},
		// The metric table's ns/op ratio is the ratio table's: 52000/40000.
		{gate: ratio("ns", tg, floor, "ns/op", 1.1), pass: true, ratio: 1.3},
		// Absolute: median syscalls/op 7 (runs 6, 7, 20), no margin.
		{gate: value("syscalls", tg, "syscalls/op", 7), pass: true, valueWant: 7},
		{gate: value("syscalls-tight", tg, "syscalls/op", 6.5), valueWant: 7,
			want: "has a median of 7 syscalls/op over 3 runs, over the max of 6.5 (no margin"},
		// Median of 391, 391, 395.5: the one odd run does not decide.
		{gate: value("scrape-size", scrape, "bytes/route", 391), pass: true, valueWant: 391},
		{gate: value("scrape-size-tight", scrape, "bytes/route", 390), valueWant: 391, want: "over the max of 390"},
		// Standard units are metrics too.
		{gate: value("scrape-allocs", scrape, "allocs/op", 10), pass: true, valueWant: 10},
		{gate: value("scrape-bytes", scrape, "B/op", 300000), valueWant: 400000, want: "400000 B/op"},
		// A metric no run printed, on either side, fails and says how to fix it.
		{gate: value("no-metric", scrape, "cpu-ns/op", 1e9),
			want: `BenchmarkScrape/routes=1000 printed no cpu-ns/op in 3 of 3 runs; the benchmark must report it with b.ReportMetric(v, "cpu-ns/op")`},
		{gate: ratio("no-metric-base", scrape, "BenchmarkNoCPU", "bytes/route", 2),
			want: `BenchmarkNoCPU printed no bytes/route in 1 of 1 runs; the benchmark must report it with b.ReportMetric`},
		// One run without it is enough to fail: a gate is not decided on some runs.
		{gate: value("odd-run", "BenchmarkOddRun", "syscalls/op", 10), want: "printed no syscalls/op in 1 of 3 runs"},
		// Missing benchmark or baseline.
		{gate: value("gone", "BenchmarkGone", "syscalls/op", 10), want: "no output for BenchmarkGone in ./dataplane"},
		{gate: ratio("gone-base", tg, "BenchmarkGone", "cpu-ns/op", 2), want: "no output for BenchmarkGone in ./dataplane"},
		// A baseline whose metric is 0 cannot be divided by.
		{gate: ratio("zero-base", tg, "BenchmarkNoCPU", "allocs/op", 2), want: "baseline BenchmarkNoCPU has a median of 0 allocs/op; cannot take a ratio"},
	}
	for _, tt := range tests {
		t.Run(tt.gate.Name, func(t *testing.T) {
			r := evaluate([]gate{tt.gate}, results, nil, 1.25)[0]
			if r.passed() != tt.pass {
				t.Fatalf("passed = %v, want %v; problems %q", r.passed(), tt.pass, r.Problems)
			}
			if !tt.pass && !strings.Contains(strings.Join(r.Problems, "; "), tt.want) {
				t.Fatalf("problems %q do not contain %q", r.Problems, tt.want)
			}
			if tt.ratio != 0 && (!r.HasRatio || math.Abs(r.Ratio-tt.ratio) > 1e-9) {
				t.Errorf("ratio = %v (%v), want %v", r.Ratio, r.HasRatio, tt.ratio)
			}
			if tt.valueWant != 0 && (!r.HasValue || r.Value != tt.valueWant) {
				t.Errorf("value = %v (%v), want %v", r.Value, r.HasValue, tt.valueWant)
			}
			if tt.ratio == 0 && r.HasRatio || tt.valueWant == 0 && r.HasValue {
				t.Errorf("result %+v has a value it should not", r)
			}
		})
	}
}

func TestEvaluateFailedRun(t *testing.T) {
	gates := []gate{{Name: "g", Package: "./broken", Benchmark: "BenchmarkA", MaxAllocs: 0}}
	r := evaluate(gates, map[string]map[string][]sample{}, map[string]error{"./broken": errors.New("exit status 1")}, 1.25)[0]
	if r.passed() || !strings.Contains(r.Problems[0], "go test ./broken failed: exit status 1") {
		t.Fatalf("problems = %q", r.Problems)
	}
}

func TestEvaluateNoBenchmem(t *testing.T) {
	samples := map[string]map[string][]sample{"./m": {"BenchmarkA": {{NsPerOp: 1}}}}
	r := evaluate([]gate{{Name: "g", Package: "./m", Benchmark: "BenchmarkA", MaxAllocs: 0}}, samples, nil, 1.25)[0]
	if r.passed() || !strings.Contains(r.Problems[0], "printed no allocs/op") {
		t.Fatalf("problems = %q", r.Problems)
	}
}

func TestReport(t *testing.T) {
	results := []result{
		{Gate: gate{Name: "ok", Baseline: "BenchmarkB", MaxRatio: 2, MaxAllocs: 0, Line: 3},
			Ratio: 1.5, HasRatio: true, Budget: 2.5, HasAllocs: true},
		{Gate: gate{Name: "bad", MaxAllocs: 0, Line: 4},
			MaxAllocs: 2, HasAllocs: true, Problems: []string{"made 2 allocs/op"}},
		{Gate: gate{Name: "cpu", Baseline: "BenchmarkB", Metric: "cpu-ns/op", MaxRatio: 1.2, MaxAllocs: -1, Line: 8},
			Ratio: 1.123, HasRatio: true, Budget: 1.5},
		{Gate: gate{Name: "size", Metric: "bytes/route", MaxValue: 420, MaxAllocs: -1, Line: 9},
			Value: 391, HasValue: true},
		{Gate: gate{Name: "calls", Metric: "syscalls/op", MaxValue: 6.5, MaxAllocs: -1, Line: 10},
			Value: 6.75, HasValue: true, Problems: []string{"over the max of 6.5"}},
		{Gate: gate{Name: "unreported", Metric: "syscalls/op", MaxValue: 6.5, MaxAllocs: -1, Line: 11},
			Problems: []string{"printed no syscalls/op"}},
		{Gate: gate{Name: "cpu-unreported", Baseline: "BenchmarkB", Metric: "cpu-ns/op", MaxRatio: 1.2, MaxAllocs: -1, Line: 12},
			Budget: 1.5, Problems: []string{"printed no cpu-ns/op"}},
	}
	var buf bytes.Buffer
	if n := report(&buf, results); n != 4 {
		t.Fatalf("report counted %d failures, want 4", n)
	}
	out := buf.String()
	for _, want := range []string{
		"GATE            VALUE             BUDGET           ALLOCS     RESULT",
		"ok              1.50x             2.50x            0 (max 0)  PASS",
		"bad             -                 -                2 (max 0)  FAIL",
		"cpu             1.12x             1.50x            -          PASS",
		"size            391 bytes/route   420 bytes/route  -          PASS",
		"calls           6.75 syscalls/op  6.5 syscalls/op  -          FAIL",
		"unreported      ?                 6.5 syscalls/op  -          FAIL",
		"cpu-unreported  ?                 1.50x            -          FAIL",
		"FAIL gate bad (line 4): made 2 allocs/op",
		"FAIL gate calls (line 10): over the max of 6.5",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestNumber(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 391: "391", 6.25: "6.25", 6.5: "6.5", 2.0 / 3: "0.667", 12345.5: "12345.5"} {
		if got := number(v); got != want {
			t.Errorf("number(%v) = %q, want %q", v, got, want)
		}
	}
}

func keys(m map[string][]sample) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	return k
}
