// This file implements a sharded map that tables share.

package matcher

import (
	"hash/maphash"
	"iter"
	"maps"
	"slices"
)

// shardedMap is a map that a table shares with the tables updated from it.
// Its entries are spread over shards, small Go maps chosen by hash; a copy
// being edited shares every shard with the original until it writes to
// one, and then copies that shard alone. An Update that changes one route
// so copies two small maps and a slice of shard pointers, not maps the
// size of the table.
//
// A shardedMap is immutable once its table is returned; only a copy made
// by edit is written to.
type shardedMap[K comparable, V any] struct {
	seed   maphash.Seed
	hash   func(maphash.Seed, K) uint64
	shards []map[K]V // len is a power of two; nil shards are empty
	n      int
	owned  []bool // shards this copy may write to; nil when it may write to none
}

// Shards hold about perShard entries, so copying one stays cheap; a map
// that grows past maxPerShard per shard is spread anew.
const (
	perShard    = 64
	maxPerShard = 256
)

// newShardedMap returns an empty map for about size entries, that may be
// written to. Its shards are made as they are filled, and grow as maps
// do: made to a size, they would hold more room than entries, since size
// is a guess.
func newShardedMap[K comparable, V any](hash func(maphash.Seed, K) uint64, size int) shardedMap[K, V] {
	n := 1
	for n*perShard < size {
		n *= 2
	}
	m := shardedMap[K, V]{seed: maphash.MakeSeed(), hash: hash, shards: make([]map[K]V, n), owned: make([]bool, n)}
	for i := range m.owned {
		m.owned[i] = true
	}
	return m
}

func (m *shardedMap[K, V]) shardOf(k K) int {
	if len(m.shards) == 1 {
		return 0
	}
	return int(m.hash(m.seed, k) & uint64(len(m.shards)-1))
}

func (m *shardedMap[K, V]) get(k K) (V, bool) {
	v, ok := m.shards[m.shardOf(k)][k]
	return v, ok
}

// len returns the number of entries.
func (m *shardedMap[K, V]) len() int { return m.n }

// edit returns a copy of m that may be written to without changing m.
func (m *shardedMap[K, V]) edit() shardedMap[K, V] {
	c := *m
	c.shards = slices.Clone(m.shards)
	c.owned = make([]bool, len(c.shards))
	return c
}

// own makes shard i this copy's own, copying it on first write.
func (m *shardedMap[K, V]) own(i int) map[K]V {
	switch {
	case m.shards[i] == nil:
		m.shards[i] = map[K]V{}
	case !m.owned[i]:
		m.shards[i] = maps.Clone(m.shards[i])
	}
	m.owned[i] = true
	return m.shards[i]
}

func (m *shardedMap[K, V]) set(k K, v V) {
	s := m.own(m.shardOf(k))
	n := len(s)
	s[k] = v
	m.n += len(s) - n
}

func (m *shardedMap[K, V]) del(k K) {
	i := m.shardOf(k)
	if _, had := m.shards[i][k]; had {
		delete(m.own(i), k)
		m.n--
	}
}

// all returns the entries in no particular order.
func (m *shardedMap[K, V]) all() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for _, s := range m.shards {
			for k, v := range s {
				if !yield(k, v) {
					return
				}
			}
		}
	}
}

// done ends editing: m may no longer be written to. A map that Updates
// have grown too big for its shards is spread over more, about perShard
// entries each, which costs a copy of it once per quadrupling.
func (m *shardedMap[K, V]) done() {
	m.owned = nil
	if m.n <= maxPerShard*len(m.shards) {
		return
	}
	n := 1
	for n*perShard < m.n {
		n *= 2
	}
	spread := shardedMap[K, V]{seed: m.seed, hash: m.hash, shards: make([]map[K]V, n), n: m.n}
	for i := range spread.shards {
		spread.shards[i] = make(map[K]V, m.n/n+m.n/n/4)
	}
	for k, v := range m.all() {
		spread.shards[spread.shardOf(k)][k] = v
	}
	*m = spread
}

// hashString is the hash of a shardedMap keyed by hostname.
func hashString(seed maphash.Seed, s string) uint64 { return maphash.String(seed, s) }
