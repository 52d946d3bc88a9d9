package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// result is the verdict on one gate.
type result struct {
	Gate      gate
	Ratio     float64 // median(benchmark)/median(baseline) of the gate's metric; valid when HasRatio
	HasRatio  bool
	Budget    float64 // MaxRatio × margin, the largest ratio that passes
	Value     float64 // median of the gate's metric, for a value gate; valid when HasValue
	HasValue  bool
	MaxAllocs float64 // worst allocs/op over all runs; valid when HasAllocs
	HasAllocs bool
	Problems  []string // why the gate failed; empty when it passed
}

// passed reports whether the gate held.
func (r result) passed() bool { return len(r.Problems) == 0 }

// evaluate checks every gate against the parsed output of its package.
// results maps a package to its benchmarks' samples; a package missing from
// results (its go test run failed) fails all its gates with runErr[pkg].
//
// margin is the noise allowance on ratios: a gate fails when the ratio
// exceeds MaxRatio × margin. Allocation counts and the bounds of value
// gates get no margin: they are counts and sizes, not timings, and a
// median of them does not move with the machine's load.
func evaluate(gates []gate, results map[string]map[string][]sample, runErr map[string]error, margin float64) []result {
	out := make([]result, 0, len(gates))
	for _, g := range gates {
		r := result{Gate: g, Budget: g.MaxRatio * margin}
		samples, ran := results[g.Package]
		if !ran {
			msg := "no benchmark output"
			if err := runErr[g.Package]; err != nil {
				msg = err.Error()
			}
			r.Problems = append(r.Problems, fmt.Sprintf("go test %s failed: %s", g.Package, msg))
			out = append(out, r)
			continue
		}
		bench := samples[g.Benchmark]
		if len(bench) == 0 {
			r.Problems = append(r.Problems, missing(g.Benchmark, g.Package))
		}
		if g.allocsGated() && len(bench) > 0 {
			for _, s := range bench {
				if !s.HasAllocs {
					r.Problems = append(r.Problems, fmt.Sprintf("%s printed no allocs/op (was -benchmem lost?)", g.Benchmark))
					break
				}
				if !r.HasAllocs || s.AllocsPerOp > r.MaxAllocs {
					r.MaxAllocs, r.HasAllocs = s.AllocsPerOp, true
				}
			}
			if r.HasAllocs && r.MaxAllocs > float64(g.MaxAllocs) {
				r.Problems = append(r.Problems, fmt.Sprintf("%s made %g allocs/op in its worst run, over the limit of %d",
					g.Benchmark, r.MaxAllocs, g.MaxAllocs))
			}
		}
		unit := g.metric()
		if g.ratioGated() {
			base := samples[g.Baseline]
			if len(base) == 0 {
				r.Problems = append(r.Problems, missing(g.Baseline, g.Package))
			}
			benchVs, benchOK := metricValues(&r, bench, g.Benchmark, unit)
			baseVs, baseOK := metricValues(&r, base, g.Baseline, unit)
			if benchOK && baseOK {
				b := median(baseVs)
				if b <= 0 {
					r.Problems = append(r.Problems, fmt.Sprintf("baseline %s has a median of %g %s; cannot take a ratio", g.Baseline, b, unit))
				} else {
					r.Ratio, r.HasRatio = median(benchVs)/b, true
					if r.Ratio > r.Budget {
						what := "the " + unit + " of"
						if g.Metric == "" {
							what = "the time of" // the ratio table's wording
						}
						r.Problems = append(r.Problems, fmt.Sprintf(
							"%s takes %.2fx %s %s, over the budget of %.2fx (max ratio %g × margin %g)",
							g.Benchmark, r.Ratio, what, g.Baseline, r.Budget, g.MaxRatio, margin))
					}
				}
			}
		}
		if g.valueGated() {
			if vs, ok := metricValues(&r, bench, g.Benchmark, unit); ok {
				r.Value, r.HasValue = median(vs), true
				if r.Value > g.MaxValue {
					r.Problems = append(r.Problems, fmt.Sprintf(
						"%s has a median of %g %s over %d runs, over the max of %g (no margin: counts and sizes are not timing noise)",
						g.Benchmark, r.Value, unit, len(vs), g.MaxValue))
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// metricValues returns the unit's value in each of samples, or false when
// there are none to compare: no samples (already reported as missing
// output) or a run that printed no value for the unit, which it adds to
// r's problems. A gate is never decided on some of the runs only.
func metricValues(r *result, samples []sample, bench, unit string) ([]float64, bool) {
	if len(samples) == 0 {
		return nil, false
	}
	vs, lacking := values(samples, unit)
	if lacking == 0 {
		return vs, true
	}
	how := fmt.Sprintf("the benchmark must report it with b.ReportMetric(v, %q)", unit)
	if unit == "B/op" || unit == "allocs/op" {
		how = "was -benchmem lost?"
	}
	r.Problems = append(r.Problems, fmt.Sprintf("%s printed no %s in %d of %d runs; %s",
		bench, unit, lacking, len(samples), how))
	return nil, false
}

func missing(bench, pkg string) string {
	return fmt.Sprintf("no output for %s in %s; check the name in the gates table (sub-benchmark names are case-sensitive) and that the benchmark still exists", bench, pkg)
}

// report prints the result table, then one line per problem of each failing
// gate. It returns the number of failing gates.
//
// VALUE and BUDGET are ratios ("1.12x", budget with the margin) for a gate
// against a baseline, and medians with their unit ("391 bytes/route") for
// a gate on a metric's own value.
func report(w io.Writer, results []result) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GATE\tVALUE\tBUDGET\tALLOCS\tRESULT")
	failed := 0
	for _, r := range results {
		value, budget, allocs := "-", "-", "-"
		switch {
		case r.Gate.ratioGated():
			budget = fmt.Sprintf("%.2fx", r.Budget)
			if r.HasRatio {
				value = fmt.Sprintf("%.2fx", r.Ratio)
			} else {
				value = "?"
			}
		case r.Gate.valueGated():
			budget = number(r.Gate.MaxValue) + " " + r.Gate.Metric
			if r.HasValue {
				value = number(r.Value) + " " + r.Gate.Metric
			} else {
				value = "?"
			}
		}
		if r.Gate.allocsGated() {
			if r.HasAllocs {
				allocs = fmt.Sprintf("%g (max %d)", r.MaxAllocs, r.Gate.MaxAllocs)
			} else {
				allocs = fmt.Sprintf("? (max %d)", r.Gate.MaxAllocs)
			}
		}
		verdict := "PASS"
		if !r.passed() {
			verdict = "FAIL"
			failed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Gate.Name, value, budget, allocs, verdict)
	}
	tw.Flush()
	for _, r := range results {
		if len(r.Problems) > 0 {
			fmt.Fprintf(w, "\nFAIL gate %s (line %d): %s\n", r.Gate.Name, r.Gate.Line, strings.Join(r.Problems, "; "))
		}
	}
	return failed
}

// number formats a metric's value for the table: with up to three
// decimals, none when it is whole ("391", "6.25").
func number(v float64) string {
	s := strconv.FormatFloat(v, 'f', 3, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
