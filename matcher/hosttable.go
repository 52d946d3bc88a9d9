// This file implements the table of exact hostnames.

package matcher

import (
	"hash/maphash"
	"maps"
)

// hostTable maps exact hostnames to host entries. It replaces a Go map on
// the hot path: a slot holds the hash, the entry and (for names up to 43
// bytes, nearly all of them) the name itself, in one 64-byte cache line, so
// a lookup costs one memory access where a map with string keys costs three
// (control word, key header, key bytes), plus one to the list of pages the
// slots are kept in (see paged). Longer names use a plain map.
type hostTable struct {
	count int // names held, long ones included
	seed  maphash.Seed
	mask  uint64          // slots - 1: open addressing, linear probing, at most half full
	slots paged[hostSlot] // 256 a page, 16 KiB
	long  map[string]hostRef
}

const inlineName = 43

type hostSlot struct {
	hash    uint64 // 0 marks an empty slot
	ref     hostRef
	nameLen uint8
	name    [inlineName]byte
}

// newHostTable returns an empty table sized for n names, that may be
// written to.
func newHostTable(n int) hostTable {
	size := 8
	for size < 2*n {
		size *= 2
	}
	return hostTable{seed: maphash.MakeSeed(), mask: uint64(size - 1), slots: newPaged[hostSlot](size), long: map[string]hostRef{}}
}

// edit returns a copy of t that may be written to without changing t.
func (t *hostTable) edit() hostTable {
	c := *t
	c.slots = t.slots.edit()
	c.long = maps.Clone(t.long)
	return c
}

// done ends writing: t is about to be published.
func (t *hostTable) done() { t.slots.done() }

// set maps a lower-case name to ref, replacing what it mapped to.
func (t *hostTable) set(name string, ref hostRef) {
	if len(name) > inlineName {
		if _, had := t.long[name]; !had {
			t.count++
		}
		t.long[name] = ref
		return
	}
	i, found := t.find(name)
	if found {
		t.slots.set(i).ref = ref
		return
	}
	if 2*(t.count-len(t.long)+1) > int(t.mask+1) {
		t.grow()
		i, _ = t.find(name)
	}
	s := t.slots.set(i)
	s.hash, s.ref, s.nameLen = slotHash(maphash.String(t.seed, name)), ref, uint8(len(name))
	copy(s.name[:], name)
	t.count++
}

// del removes name. Linear probing cannot leave a hole in a run of slots,
// which would end lookups early, so the slots after it that may move back
// into the hole do.
func (t *hostTable) del(name string) {
	if len(name) > inlineName {
		if _, had := t.long[name]; had {
			delete(t.long, name)
			t.count--
		}
		return
	}
	hole, found := t.find(name)
	if !found {
		return
	}
	for j := (hole + 1) & t.mask; t.slots.get(j).hash != 0; j = (j + 1) & t.mask {
		// The name at j may fill the hole unless its home slot lies
		// after the hole, up to j: lookups for it would then not pass
		// the hole.
		if inCyclicRange(t.slots.get(j).hash&t.mask, hole, j) {
			continue
		}
		*t.slots.set(hole) = *t.slots.get(j)
		hole = j
	}
	*t.slots.set(hole) = hostSlot{}
	t.count--
}

// inCyclicRange reports whether i is in (from, to] going round the slots.
func inCyclicRange(i, from, to uint64) bool {
	if from <= to {
		return from < i && i <= to
	}
	return from < i || i <= to
}

// find returns the slot holding name, or the empty slot where it would go.
func (t *hostTable) find(name string) (uint64, bool) {
	h := slotHash(maphash.String(t.seed, name))
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := t.slots.get(i)
		if s.hash == 0 {
			return i, false
		}
		if s.hash == h && string(s.name[:s.nameLen]) == name {
			return i, true
		}
	}
}

// grow doubles the slots, placing each name by the hash it keeps.
func (t *hostTable) grow() {
	old := t.slots.pages
	t.mask = 2*t.mask + 1
	t.slots = newPaged[hostSlot](int(t.mask + 1))
	for _, page := range old {
		for _, s := range page {
			if s.hash == 0 {
				continue
			}
			i := s.hash & t.mask
			for t.slots.get(i).hash != 0 {
				i = (i + 1) & t.mask
			}
			*t.slots.set(i) = s
		}
	}
}

// slotHash keeps 0 free to mark empty slots. It sets the top bit, not the
// bottom one: the slot index comes from the low bits.
func slotHash(h uint64) uint64 { return h | 1<<63 }

// get looks host up; host is a string or bytes so neither caller converts.
func get[H ~string | ~[]byte](t *hostTable, host H) (hostRef, bool) {
	if len(host) > inlineName {
		ref, ok := t.long[string(host)]
		return ref, ok
	}
	var h uint64
	if s, ok := any(host).(string); ok {
		h = slotHash(maphash.String(t.seed, s))
	} else {
		h = slotHash(maphash.Bytes(t.seed, []byte(host)))
	}
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := t.slots.get(i)
		if s.hash == 0 {
			return hostRef{}, false
		}
		if s.hash == h && int(s.nameLen) == len(host) && string(s.name[:s.nameLen]) == string(host) {
			return s.ref, true
		}
	}
}
