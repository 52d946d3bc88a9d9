package matcher

import (
	"fmt"
	"runtime"
	"testing"
)

var benchSizes = []int{10, 1000, 10000}

// BenchmarkMatch measures one Match over a mix of 1024 requests; the table
// holds routes HTTPRoutes (1 to 4 matches each). The gate in BENCHMARKS.md
// holds routes=10000 within 2× of routes=10 at 0 allocs/op.
func BenchmarkMatch(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			set := generate(n, 1024, 1)
			table, err := Compile(set.rules)
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC() // no collection of the setup's garbage while timing
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				table.Match(&set.requests[i&1023])
				i++
			}
		})
	}
}

// BenchmarkCompile measures building the table from scratch; 500 routes is
// the size the leading peer publishes a rebuild time for.
func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{500, 10000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			set := generate(n, 1, 1)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compile(set.rules); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
