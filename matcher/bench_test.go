package matcher

import (
	"fmt"
	"runtime"
	"strings"
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

// BenchmarkUpdate measures a one-route change as a proxy applies it: on a
// table shaped like a proxy listener's (proxyShaped: one hostname per
// route, two matches, one with a header), Update removes one route's two
// Keys and adds its new version's two rules. Each Update starts from the
// last one's table, going round 64 routes spread over the table, so the
// occasional fresh layout (see "Updating a table") is part of the cost.
// The gate in BENCHMARKS.md holds routes=5000 far below BenchmarkBuild;
// paths=long is the same with paths too long to inline in a node (30
// bytes), whose labels the table keeps apart.
func BenchmarkUpdate(b *testing.B) {
	const n, changed = 5000, 64
	for _, name := range []string{fmt.Sprintf("routes=%d", n), fmt.Sprintf("paths=long/routes=%d", n)} {
		long := strings.HasPrefix(name, "paths=long")
		shaped := func(rules []Rule[int]) []Rule[int] {
			if long {
				for i := range rules {
					if rules[i].Path.Value == "/api" {
						rules[i].Path.Value = "/api/v1/orders/by-customer/all"
					}
				}
			}
			return rules
		}
		b.Run(name, func(b *testing.B) {
			prepared, err := prepareAll(shaped(proxyShaped(n, "")))
			if err != nil {
				b.Fatal(err)
			}
			table, err := Build(prepared)
			if err != nil {
				b.Fatal(err)
			}
			// Two new versions of each changed route, used in turn.
			var versions [2][changed][]*Prepared[int]
			var keys [changed][]Key
			for i := range changed {
				route := proxyRoute(i*n/changed, "")
				keys[i] = []Key{route[0].Key, route[1].Key}
				for v := range versions {
					if versions[v][i], err = prepareAll(shaped(proxyRoute(i*n/changed, fmt.Sprint("-v", v)))); err != nil {
						b.Fatal(err)
					}
				}
			}
			runtime.GC()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if table, err = table.Update(keys[i%changed], versions[i/changed%2][i%changed]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkBuild builds BenchmarkUpdate's table whole from its prepared
// rules: what a proxy pays without Update.
func BenchmarkBuild(b *testing.B) {
	const n = 5000
	b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
		prepared, err := prepareAll(proxyShaped(n, ""))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Build(prepared); err != nil {
				b.Fatal(err)
			}
		}
	})
}
