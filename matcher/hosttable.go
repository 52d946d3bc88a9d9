package matcher

import "hash/maphash"

// hostTable maps exact hostnames to host entries. It replaces a Go map on
// the hot path: a slot holds the hash, the entry and (for names up to 47
// bytes, nearly all of them) the name itself, in one 64-byte cache line, so
// a lookup costs one memory access where a map with string keys costs three
// (control word, key header, key bytes). Longer names use a plain map.
type hostTable struct {
	count int // names held
	seed  maphash.Seed
	slots []hostSlot // open addressing, linear probing, at most half full
	long  map[string]hostRef
}

const inlineName = 43

type hostSlot struct {
	hash    uint64 // 0 marks an empty slot
	ref     hostRef
	nameLen uint8
	name    [inlineName]byte
}

// newHostTable builds the table from lower-case names.
func newHostTable(names map[string]hostRef) hostTable {
	t := hostTable{count: len(names), seed: maphash.MakeSeed(), long: map[string]hostRef{}}
	size := 8
	for size < 2*len(names) {
		size *= 2
	}
	t.slots = make([]hostSlot, size)
	for name, ref := range names {
		if len(name) > inlineName {
			t.long[name] = ref
			continue
		}
		h := slotHash(maphash.String(t.seed, name))
		i := h & uint64(len(t.slots)-1)
		for t.slots[i].hash != 0 {
			i = (i + 1) & uint64(len(t.slots)-1)
		}
		s := &t.slots[i]
		s.hash, s.ref, s.nameLen = h, ref, uint8(len(name))
		copy(s.name[:], name)
	}
	return t
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
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.hash == 0 {
			return hostRef{}, false
		}
		if s.hash == h && int(s.nameLen) == len(host) && string(s.name[:s.nameLen]) == string(host) {
			return s.ref, true
		}
	}
}
