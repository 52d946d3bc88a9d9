package matcher

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

// TestShardedMapEdits checks a chain of edited copies against plain maps:
// each copy holds what was written to it, and the map it was copied from
// keeps what it held, through shards spread anew as the map grows.
func TestShardedMapEdits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := newShardedMap[string, int](hashString, 4)
	m.done()
	want := map[string]int{}
	type version struct {
		m    shardedMap[string, int]
		want map[string]int
	}
	var history []version
	for step := range 300 {
		c := m.edit()
		next := maps.Clone(want)
		for range 1 + rng.IntN(20) {
			k := fmt.Sprint("k", rng.IntN(2000))
			if rng.IntN(4) == 0 {
				c.del(k)
				delete(next, k)
			} else {
				c.set(k, step)
				next[k] = step
			}
		}
		c.done()
		history = append(history, version{m, want})
		m, want = c, next
	}
	history = append(history, version{m, want})
	if len(m.shards) < 8 {
		t.Errorf("%d entries in %d shards: the map was not spread as it grew", m.len(), len(m.shards))
	}
	for i, v := range history {
		got := maps.Collect(v.m.all())
		if !maps.Equal(got, v.want) || v.m.len() != len(v.want) {
			t.Fatalf("version %d: holds %d entries (len %d), want %d", i, len(got), v.m.len(), len(v.want))
		}
		for k, w := range v.want {
			if g, ok := v.m.get(k); !ok || g != w {
				t.Fatalf("version %d: get(%s) = %d %v, want %d", i, k, g, ok, w)
			}
		}
	}
}
