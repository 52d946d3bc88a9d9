package translate

import (
	"fmt"
	"hash/fnv"
	"slices"
	"testing"
)

// homeSlot is the slot an identity hashes to among count.
func homeSlot(id string, count int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(count))
}

func TestAllocatePortsInRangeAndUnique(t *testing.T) {
	var ids []string
	for i := range 500 {
		ids = append(ids, fmt.Sprintf("TCPRoute/ns/r%d", i))
	}
	ports := allocatePorts(ids, 20000, 600)
	seen := map[int]bool{}
	for i, p := range ports {
		if p < 20000 || p >= 20600 {
			t.Fatalf("%s: port %d outside [20000, 20600)", ids[i], p)
		}
		if seen[p] {
			t.Fatalf("%s: port %d given twice", ids[i], p)
		}
		seen[p] = true
	}
	if again := allocatePorts(ids, 20000, 600); !slices.Equal(again, ports) {
		t.Error("the same routes got other ports")
	}
}

// Routes added or deleted move no other route's port unless they
// collided with it and are older.
func TestAllocatePortsStable(t *testing.T) {
	const count = 10000
	ids := []string{"TCPRoute/a/one", "TLSRoute/a/two", "TCPRoute/b/three", "TLSRoute/b/four"}
	before := allocatePorts(ids, 20000, count)
	for i, id := range ids {
		if before[i] != 20000+homeSlot(id, count) {
			t.Fatalf("%s: port %d, not its home slot %d (no collision among these)", id, before[i], 20000+homeSlot(id, count))
		}
	}
	// A younger route added (last), an older one added (first), one deleted.
	younger := allocatePorts(append(slices.Clone(ids), "TCPRoute/c/new"), 20000, count)
	older := allocatePorts(append([]string{"TCPRoute/c/old"}, ids...), 20000, count)
	deleted := allocatePorts(append(slices.Clone(ids[:1]), ids[2:]...), 20000, count)
	if !slices.Equal(younger[:4], before) {
		t.Errorf("a younger route added moved ports: %v, then %v", before, younger[:4])
	}
	if !slices.Equal(older[1:], before) {
		t.Errorf("an older route added moved ports: %v, then %v", before, older[1:])
	}
	if want := append(slices.Clone(before[:1]), before[2:]...); !slices.Equal(deleted, want) {
		t.Errorf("a route deleted moved ports: %v, then %v", want, deleted)
	}
}

// On a collision the older route keeps the slot and the younger probes
// forward; when the older goes, the younger comes back to its own slot.
func TestAllocatePortsCollision(t *testing.T) {
	const count = 7
	var a, b string
	for i := 0; b == ""; i++ {
		id := fmt.Sprintf("TCPRoute/ns/r%d", i)
		switch {
		case a == "":
			a = id
		case homeSlot(id, count) == homeSlot(a, count):
			b = id
		}
	}
	home := 100 + homeSlot(a, count)
	next := 100 + (homeSlot(a, count)+1)%count
	if got := allocatePorts([]string{a, b}, 100, count); !slices.Equal(got, []int{home, next}) {
		t.Errorf("older %s then younger %s: ports %v, want %v", a, b, got, []int{home, next})
	}
	if got := allocatePorts([]string{b, a}, 100, count); !slices.Equal(got, []int{home, next}) {
		t.Errorf("older %s then younger %s: ports %v, want %v", b, a, got, []int{home, next})
	}
	if got := allocatePorts([]string{b}, 100, count); !slices.Equal(got, []int{home}) {
		t.Errorf("%s alone: port %v, want its own %d", b, got, home)
	}
}

// Routes beyond the range get no port.
func TestAllocatePortsFull(t *testing.T) {
	got := allocatePorts([]string{"a", "b", "c"}, 100, 2)
	if got[2] != 0 || got[0] == 0 || got[1] == 0 || got[0] == got[1] {
		t.Errorf("three routes in two ports: %v, want two ports and a 0", got)
	}
}
