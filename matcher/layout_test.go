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
