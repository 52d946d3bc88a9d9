package matcher

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPagedEdits grows and writes edited copies of a paged array across
// many pages, a short last page included, against plain slices: each copy
// holds what was written to it, and the arrays it was copied from keep
// what they held.
func TestPagedEdits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	p := newPaged[int](3)
	p.done()
	want := make([]int, 3)
	type version struct {
		p    paged[int]
		want []int
	}
	var history []version
	for step := 1; step <= 200; step++ {
		c := p.edit()
		next := slices.Clone(want)
		if n := len(next) + rng.IntN(40); rng.IntN(3) == 0 {
			c.extend(n)
			next = append(next, make([]int, n-len(next))...)
		}
		for range 1 + rng.IntN(8) {
			i := rng.IntN(len(next))
			*c.set(uint64(i)) = step
			next[i] = step
		}
		c.done()
		history = append(history, version{p, want})
		p, want = c, next
	}
	history = append(history, version{p, want})
	if p.len() < 3*pageLen {
		t.Fatalf("grew to %d elements only", p.len())
	}
	for v, h := range history {
		if h.p.len() != len(h.want) {
			t.Fatalf("version %d: len %d, want %d", v, h.p.len(), len(h.want))
		}
		for i, w := range h.want {
			if got := *h.p.get(uint64(i)); got != w {
				t.Fatalf("version %d: element %d is %d, want %d", v, i, got, w)
			}
		}
	}
}
