// This file keeps what a Table was built from, for Update.

package matcher

import "strings"

// source is what a Table was built from, kept so that Update can redo the
// host entries a change touches and leave the others alone: each host
// entry's rules in precedence order, and which host entries hold the rules
// of each route. Match never reads it.
//
// A source is immutable once its Table is returned. Update edits a copy
// that shares every map shard and every hostRules it does not change.
type source[T any] struct {
	exact    shardedMap[string, *hostRules[T]] // by hostname
	wild     shardedMap[string, *hostRules[T]] // by wildcard suffix: "example.com" for "*.example.com"
	catchAll *hostRules[T]                     // the rules without hostnames, or nil
	routes   shardedMap[routeID, routeRules]

	rules   int     // rules in the table, for Len
	input   int     // input number of the next rule to join the table
	entries int     // host entry numbers given out, free ones included
	free    []int32 // host entry numbers no host uses now, to give out again

	// Live nodes and candidates: the sum of every host entry's trie. After
	// an Update the table's arrays hold more, the tries it replaced.
	nodes, cands int
}

// hostRules is one host entry as Update sees it. It is immutable once its
// Table is returned: Update makes a new one for a host whose rules change.
type hostRules[T any] struct {
	name  string // canonical hostname as rules spell it: "a.example.com", "*.example.com", "" for none
	entry int32  // its index in hostIndex.entries
	// rules in precedence order: a candidate's rank is its rule's index.
	rules []filed[T]
	// nodes is the size of its trie in the table's arrays, 0 until built;
	// it holds len(rules) candidates.
	nodes int
}

// hostKey returns what the host entry is looked up by: the hostname, or a
// wildcard's suffix, and whether it is a wildcard.
func (h *hostRules[T]) hostKey() (string, bool) {
	if suffix, ok := strings.CutPrefix(h.name, "*."); ok {
		return suffix, true
	}
	return h.name, false
}

// keyID is a Key as a map key: the creation time as Equal compares it, so
// that times differing only in location or monotonic reading are one.
type keyID struct {
	sec       int64
	nsec      int32
	namespace string
	name      string
	rule      int
	match     int
}

func idOf(k *Key) keyID {
	return keyID{
		sec: k.Created.Unix(), nsec: int32(k.Created.Nanosecond()),
		namespace: k.Namespace, name: k.Name, rule: k.Rule, match: k.Match,
	}
}

// routeID names the route of a Key: "{namespace}/{name}", the string
// Prepare makes for precedence. Update finds the rules of a Key through
// their route: indexing routes, not Keys, keeps the index small and cheap
// to fill, since the matches of a route come one after another. Two
// routes that spell the same routeID ("a/b" "c" and "a" "b/c") share an
// entry, which only makes Update look at more hosts: it removes rules by
// their whole Key.
type routeID = string

func routeOf(k *Key) routeID { return k.Namespace + "/" + k.Name }

// routeRules says where the rules of one route are filed.
type routeRules struct {
	// hostnames is the union of the rules' hostnames (canonical, "" for
	// none), shared with their placements when they share hostnames, as
	// matches of a route do. After some of its rules are removed it may
	// name a host that no longer holds any: Update then looks at that host
	// and leaves it alone.
	hostnames []string
	rules     int
}

// addRoute records that n more rules of route r are filed under hostnames.
func (s *source[T]) addRoute(r routeID, hostnames []string, n int) {
	if old, ok := s.routes.get(r); ok {
		hostnames, n = union(old.hostnames, hostnames), old.rules+n
	}
	s.routes.set(r, routeRules{hostnames: hostnames, rules: n})
}

// newSource returns an empty source for about n rules.
func newSource[T any](n int) *source[T] {
	return &source[T]{
		exact:  newShardedMap[string, *hostRules[T]](hashString, n/2),
		wild:   newShardedMap[string, *hostRules[T]](hashString, n/16),
		routes: newShardedMap[routeID, routeRules](hashString, n/2),
	}
}

// edit returns a copy of s that may be changed without changing s.
func (s *source[T]) edit() *source[T] {
	c := *s
	c.exact, c.wild, c.routes = s.exact.edit(), s.wild.edit(), s.routes.edit()
	return &c
}

// done ends editing.
func (s *source[T]) done() {
	s.exact.done()
	s.wild.done()
	s.routes.done()
}

// host returns the host entry of a canonical hostname ("" for none), or nil.
func (s *source[T]) host(hostname string) *hostRules[T] {
	if hostname == "" {
		return s.catchAll
	}
	var h *hostRules[T]
	if suffix, ok := strings.CutPrefix(hostname, "*."); ok {
		h, _ = s.wild.get(suffix)
	} else {
		h, _ = s.exact.get(hostname)
	}
	return h
}

// setHost files h under its hostname, replacing the entry there.
func (s *source[T]) setHost(h *hostRules[T]) {
	switch key, wild := h.hostKey(); {
	case h.name == "":
		s.catchAll = h
	case wild:
		s.wild.set(key, h)
	default:
		s.exact.set(key, h)
	}
}

// dropHost removes h, which holds no rules any more, and frees its number.
func (s *source[T]) dropHost(h *hostRules[T]) {
	switch key, wild := h.hostKey(); {
	case h.name == "":
		s.catchAll = nil
	case wild:
		s.wild.del(key)
	default:
		s.exact.del(key)
	}
	s.free = append(s.free[:len(s.free):len(s.free)], h.entry) // never into a shared array
}

// newEntry gives out a host entry number.
func (s *source[T]) newEntry() int32 {
	if n := len(s.free); n > 0 {
		e := s.free[n-1]
		s.free = s.free[:n-1]
		return e
	}
	s.entries++
	return int32(s.entries - 1)
}

// fallback returns the entry a host entry falls back to: the longest
// wildcard serving every host it serves, else the catch-all, else -1. A
// wildcard does not serve its own suffix, so "*.a.example.com" falls back
// to "*.example.com", never to itself.
func (s *source[T]) fallback(hostname string) int32 {
	if hostname == "" {
		return -1
	}
	name := strings.TrimPrefix(hostname, "*.")
	for i := wildDot(name, -1); i >= 0; i = wildDot(name, i) {
		if h, ok := s.wild.get(name[i+1:]); ok {
			return h.entry
		}
	}
	if s.catchAll != nil {
		return s.catchAll.entry
	}
	return -1
}

// byEntry returns every host entry indexed by its number; free numbers
// are nil.
func (s *source[T]) byEntry() []*hostRules[T] {
	all := make([]*hostRules[T], s.entries)
	for _, h := range s.exact.all() {
		all[h.entry] = h
	}
	for _, h := range s.wild.all() {
		all[h.entry] = h
	}
	if s.catchAll != nil {
		all[s.catchAll.entry] = s.catchAll
	}
	return all
}
