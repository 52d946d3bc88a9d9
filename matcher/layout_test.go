package matcher

import (
	"testing"
	"unsafe"
)

// The hot structures are sized to one 64-byte cache line each (see the
// package comment); a field added carelessly would silently double the
// memory Match touches.
func TestLayoutFitsCacheLines(t *testing.T) {
	if n := unsafe.Sizeof(node{}); n != 64 {
		t.Errorf("node is %d bytes, want 64", n)
	}
	if n := unsafe.Sizeof(hostSlot{}); n != 64 {
		t.Errorf("hostSlot is %d bytes, want 64", n)
	}
	if n := unsafe.Sizeof(candidate[*int]{}); n > 24 {
		t.Errorf("candidate[*int] is %d bytes, want at most 24", n)
	}
}

// layoutAll sizes the flat arrays from counts kept while building; they must
// be exact, or the table would carry spare capacity or grow while laid out.
func TestFreezeSizesArraysExactly(t *testing.T) {
	for _, n := range []int{10, 1000} {
		table, err := Compile(generate(n, 1, 1).rules)
		if err != nil {
			t.Fatal(err)
		}
		if len(table.nodes) != cap(table.nodes) || len(table.cands) != cap(table.cands) {
			t.Errorf("routes=%d: nodes %d/%d, cands %d/%d (len/cap)", n,
				len(table.nodes), cap(table.nodes), len(table.cands), cap(table.cands))
		}
	}
}
