// This file implements the cache of verified tokens.

package cfaccess

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/puzpuzpuz/xsync/v4"
)

// DefaultCacheBytes is what a Verifier keeps of verified tokens when
// not told: about 4,000 tokens of a kilobyte.
const DefaultCacheBytes = 8 << 20

// entryOverhead is what an entry costs beside its token: the map's slot,
// the Identity and its strings, roughly.
const entryOverhead = 512

// cache keeps verified tokens until they expire, within a budget of
// bytes. Lookups take no lock and allocate nothing; a put over budget
// first drops the expired entries, then, if still over, entries in the
// map's order until a quarter of the budget is free.
type cache struct {
	m      *xsync.Map[string, *Identity]
	bytes  atomic.Int64
	budget int64
	sweep  sync.Mutex
}

func newCache(budget int64) *cache {
	if budget <= 0 {
		budget = DefaultCacheBytes
	}
	return &cache{m: xsync.NewMap[string, *Identity](), budget: budget}
}

func (c *cache) get(token string) (*Identity, bool) { return c.m.Load(token) }

// put keeps id for token. The token is copied: the caller's string may
// share the memory of a whole request.
func (c *cache) put(token string, id *Identity, now time.Time) {
	size := int64(len(token) + entryOverhead)
	if c.bytes.Load()+size > c.budget && !c.makeRoom(now) {
		return // another put is sweeping: skip keeping this one
	}
	if _, loaded := c.m.LoadAndStore(strings.Clone(token), id); !loaded {
		c.bytes.Add(size)
	}
}

// makeRoom frees space; false when another put is doing it.
func (c *cache) makeRoom(now time.Time) bool {
	if !c.sweep.TryLock() {
		return false
	}
	defer c.sweep.Unlock()
	c.drop(func(_ string, id *Identity) bool { return !now.Before(id.expiry) })
	for c.bytes.Load() > c.budget*3/4 {
		if c.drop(func(string, *Identity) bool { return true }) == 0 {
			break
		}
	}
	return true
}

// drop deletes the entries doomed says, stopping once a quarter of the
// budget is free; it returns how many went.
func (c *cache) drop(doomed func(string, *Identity) bool) int {
	n := 0
	c.m.DeleteMatching(func(token string, id *Identity) (bool, bool) {
		if !doomed(token, id) {
			return false, false
		}
		n++
		left := c.bytes.Add(-int64(len(token) + entryOverhead))
		return true, left <= c.budget*3/4
	})
	return n
}

// len is the number of tokens kept.
func (c *cache) len() int { return c.m.Size() }
