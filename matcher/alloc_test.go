//go:build !race

// Allocation budgets. They are built without the race detector, which makes
// sync.Pool (ours and regexp's) drop items on purpose; `make test` runs them
// in a second pass without -race.

package matcher

import (
	"net/http"
	"testing"
)

// TestAllocsMatch is the hot-path budget: zero allocations for the
// whole benchmark request mix at every size.
func TestAllocsMatch(t *testing.T) {
	for _, n := range benchSizes {
		set := generate(n, 1024, 1)
		table, err := Compile(set.rules)
		if err != nil {
			t.Fatal(err)
		}
		hits := 0
		for i := range set.requests {
			if _, ok := table.Match(&set.requests[i]); ok {
				hits++
			}
		}
		// The mix is meant to exercise real matches, not 404s.
		if hits < len(set.requests)/2 {
			t.Errorf("routes=%d: only %d of %d requests matched", n, hits, len(set.requests))
		}
		allocs := testing.AllocsPerRun(5, func() {
			for i := range set.requests {
				table.Match(&set.requests[i])
			}
		})
		if allocs != 0 {
			t.Errorf("routes=%d: %v allocations per pass over the request mix, want 0", n, allocs)
		}
	}
}

// TestAllocsMatchRarePaths covers the requests that need scratch
// space (a regex on a repeated header, on an escaped query value) and those
// that need none (an upper-case host, a repeated header compared exactly).
func TestAllocsMatchRarePaths(t *testing.T) {
	table, err := Compile([]Rule[string]{
		r("hdr-re", hosts("a.example.com"), headerRe("X", "[0-9, ]+")),
		r("hdr-exact", hosts("b.example.com"), header("X", "1, 2")),
		r("query-re", hosts("c.example.com"), queryRe("q", "a b")),
	})
	if err != nil {
		t.Fatal(err)
	}
	repeated := http.Header{"X": {"1", "2"}}
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{Request{Host: "A.EXAMPLE.COM:443", Path: "/", Header: repeated}, "hdr-re"},
		{Request{Host: "B.Example.Com.", Path: "/", Header: repeated}, "hdr-exact"},
		{Request{Host: "c.example.com", Path: "/", RawQuery: "q=a%20b"}, "query-re"},
		{Request{Host: "c.example.com", Path: "/", RawQuery: "x=1&q=a b"}, "query-re"},
	} {
		if got, _ := table.Match(&tc.req); got != tc.want {
			t.Fatalf("%s: got %q, want %q", tc.req.Host, got, tc.want)
		}
		if allocs := testing.AllocsPerRun(100, func() { table.Match(&tc.req) }); allocs != 0 {
			t.Errorf("%s %q: %v allocs per Match, want 0", tc.req.Host, tc.req.RawQuery, allocs)
		}
	}
}

func TestAllocsNormalizePathCanonical(t *testing.T) {
	p := "/api/v1/users/%2F/~x"
	if n := testing.AllocsPerRun(100, func() { _ = NormalizePath(p) }); n != 0 {
		t.Errorf("NormalizePath of a canonical path allocated %v times", n)
	}
}
