package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// result is the verdict on one gate.
type result struct {
	Gate      gate
	Ratio     float64 // median(benchmark)/median(baseline); valid when HasRatio
	HasRatio  bool
	Budget    float64 // MaxRatio × margin, the largest ratio that passes
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
// exceeds MaxRatio × margin. Allocation counts get no margin because they do
// not vary between runs of the same code.
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
		if g.ratioGated() {
			base := samples[g.Baseline]
			if len(base) == 0 {
				r.Problems = append(r.Problems, missing(g.Baseline, g.Package))
			}
			if len(bench) > 0 && len(base) > 0 {
				baseNs, _ := values(base, "ns/op")
				benchNs, _ := values(bench, "ns/op")
				b := median(baseNs)
				if b <= 0 {
					r.Problems = append(r.Problems, fmt.Sprintf("baseline %s has a median of %g ns/op; cannot take a ratio", g.Baseline, b))
				} else {
					r.Ratio, r.HasRatio = median(benchNs)/b, true
					if r.Ratio > r.Budget {
						r.Problems = append(r.Problems, fmt.Sprintf(
							"%s takes %.2fx the time of %s, over the budget of %.2fx (max ratio %g × margin %g)",
							g.Benchmark, r.Ratio, g.Baseline, r.Budget, g.MaxRatio, margin))
					}
				}
			}
		}
		out = append(out, r)
	}
	return out
}

func missing(bench, pkg string) string {
	return fmt.Sprintf("no output for %s in %s; check the name in the gates table (sub-benchmark names are case-sensitive) and that the benchmark still exists", bench, pkg)
}

// report prints the result table, then one line per problem of each failing
// gate. It returns the number of failing gates.
func report(w io.Writer, results []result) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GATE\tRATIO\tBUDGET\tALLOCS\tRESULT")
	failed := 0
	for _, r := range results {
		ratio, budget, allocs := "-", "-", "-"
		if r.Gate.ratioGated() {
			budget = fmt.Sprintf("%.2fx", r.Budget)
			if r.HasRatio {
				ratio = fmt.Sprintf("%.2fx", r.Ratio)
			} else {
				ratio = "?"
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Gate.Name, ratio, budget, allocs, verdict)
	}
	tw.Flush()
	for _, r := range results {
		if len(r.Problems) > 0 {
			fmt.Fprintf(w, "\nFAIL gate %s (line %d): %s\n", r.Gate.Name, r.Gate.Line, strings.Join(r.Problems, "; "))
		}
	}
	return failed
}
