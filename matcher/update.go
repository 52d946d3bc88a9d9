// This file implements Update.

package matcher

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrUnknownKey is the error Update wraps when asked to remove a Key that
// no rule of the table has: the caller's idea of the table is wrong, and
// it should Build the table anew from the rules it means it to hold.
var ErrUnknownKey = errors.New("no rule of the table has this key")

// Update returns a new Table holding t's rules except every rule whose Key
// is in remove, followed by the rules in add, in add's order. Match on it
// answers every request as a Table built by Build from that list would,
// and Update fails where that Build would pass a table limit, with the
// same error (and on a nil rule, or a Key t does not hold). See
// "Updating a table" in the package comment for how, and what it costs.
//
// Update never changes t: requests may go on matching against t while,
// and after, it runs, and t may be updated again, differently.
//
// A Key is a rule's identity, not its position: the proxy gives each
// match the Key of its route and rule (the identities and stamps
// contract in dataplane/proxycfg's package doc), so removing and adding
// the rules of one route leaves every other rule where it is.
func (t *Table[T]) Update(remove []Key, add []*Prepared[T]) (*Table[T], error) {
	if t == nil || t.src == nil {
		return nil, errors.New("Update needs a table made by Build or Compile")
	}
	if len(remove) == 0 && len(add) == 0 {
		return t, nil
	}
	s := t.src.edit()
	c := change[T]{gone: make(map[keyID]int, len(remove)), adds: map[string][]filed[T]{}}
	if err := c.touchAll(s, remove, add); err != nil {
		return nil, err
	}
	c.refile(s)
	if err := c.reindex(s, remove, add); err != nil {
		return nil, err
	}

	// Build the new tries before anything is laid out: a list too long
	// fails the Update with t untouched.
	tries, newNodes, newCands, err := buildTries(c.rebuilt)
	if err != nil {
		return nil, err
	}
	s.nodes, s.cands = s.nodes+newNodes, s.cands+newCands
	s.done()

	nt := c.apply(t, s, tries, newNodes, newCands)
	// Once the tries no host uses outweigh the live ones, move the live
	// ones together.
	if len(nt.nodes)-s.nodes > s.nodes || len(nt.cands)-s.cands > s.cands {
		nt = nt.compacted()
	}
	return nt, nil
}

// change is what an Update does to the host entries it touches.
type change[T any] struct {
	gone    map[keyID]int           // keys removed, and how many rules each removed
	adds    map[string][]filed[T]   // rules added, by hostname
	touched []string                // hostnames whose rules may change, in order of first touch
	seen    map[string]bool         // touched, as a set
	rebuilt []*hostRules[T]         // new host entries, and new versions of old ones
	dropped []*hostRules[T]         // host entries left without rules
	entries map[int32]*hostRules[T] // entries whose hostRef changes, by number

	relinkAll  bool     // the catch-all came or went: every fallback may change
	wildSuffix []string // wildcards that came or went: fallbacks under them may change
}

// touchAll finds the hosts the change may touch: those a removed Key's
// route is filed under, and those of the added rules, which it numbers
// after every rule of the table.
func (c *change[T]) touchAll(s *source[T], remove []Key, add []*Prepared[T]) error {
	for i := range remove {
		id := idOf(&remove[i])
		if _, seen := c.gone[id]; seen {
			continue
		}
		route, ok := s.routes.get(routeOf(&remove[i]))
		if !ok {
			return unknownKey(&remove[i])
		}
		c.gone[id] = 0
		for _, h := range route.hostnames {
			c.touch(h)
		}
	}
	for i, pr := range add {
		if pr == nil {
			return fmt.Errorf("added rule %d is nil: Update takes rules from Prepare", i)
		}
		r := filed[T]{pr, s.input + i}
		for _, h := range pr.place.hostnames {
			c.touch(h)
			c.adds[h] = append(c.adds[h], r)
		}
	}
	return nil
}

func (c *change[T]) touch(hostname string) {
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	if !c.seen[hostname] {
		c.seen[hostname] = true
		c.touched = append(c.touched, hostname)
	}
}

// refile gives every touched host whose rules change its new rule list in
// s: the old rules not removed, then the added ones, sorted by precedence.
// It counts the rules each removed Key takes away, each once, on its
// first hostname.
func (c *change[T]) refile(s *source[T]) {
	for _, name := range c.touched {
		old := s.host(name)
		adds := c.adds[name]
		var rules []filed[T]
		if old != nil {
			rules = make([]filed[T], 0, len(old.rules)+len(adds))
			for _, r := range old.rules {
				n, gone := c.gone[r.p.id]
				if !gone {
					rules = append(rules, r)
				} else if r.p.place.hostnames[0] == name {
					c.gone[r.p.id] = n + 1
				}
			}
			if len(rules) == len(old.rules) && len(adds) == 0 {
				continue // a host the route no longer uses
			}
			s.nodes, s.cands = s.nodes-old.nodes, s.cands-len(old.rules)
		}
		if len(adds) > 0 {
			rules = append(rules, adds...)
			slices.SortFunc(rules, compareFiled)
		}
		comesOrGoes := old == nil || len(rules) == 0
		switch {
		case len(rules) == 0 && old == nil:
			continue
		case len(rules) == 0:
			s.dropHost(old)
			c.dropped = append(c.dropped, old)
		default:
			h := &hostRules[T]{name: name, rules: rules}
			if old != nil {
				h.entry = old.entry
			} else {
				h.entry = s.newEntry()
			}
			s.setHost(h)
			c.rebuilt = append(c.rebuilt, h)
		}
		if suffix, wild := strings.CutPrefix(name, "*."); comesOrGoes && wild {
			c.wildSuffix = append(c.wildSuffix, suffix)
		}
		if comesOrGoes && name == "" {
			c.relinkAll = true
		}
	}
}

// reindex fails the change if a removed Key removed no rule; else it
// takes the removed rules out of the route index and puts the added ones
// in.
func (c *change[T]) reindex(s *source[T], remove []Key, add []*Prepared[T]) error {
	for i := range remove {
		if c.gone[idOf(&remove[i])] == 0 {
			return unknownKey(&remove[i])
		}
	}
	for id, n := range c.gone {
		r := routeOf(&Key{Namespace: id.namespace, Name: id.name})
		route, _ := s.routes.get(r)
		if route.rules -= n; route.rules == 0 {
			s.routes.del(r)
		} else {
			s.routes.set(r, route)
		}
		s.rules -= n
	}
	for _, pr := range add {
		s.addRoute(pr.order.nsName, pr.place.hostnames, 1)
	}
	s.input += len(add)
	s.rules += len(add)
	return nil
}

// apply lays out the rebuilt host entries after t's arrays and returns
// the new table: t's host lookup tables copied, with the entries that
// changed, came or went, and the fallback links they change.
func (c *change[T]) apply(t *Table[T], s *source[T], tries []*pathNode, newNodes, newCands int) *Table[T] {
	// The first Update of t appends in place, past the end of t's
	// arrays, which t never reads; any other copies them first.
	a := arrays[T]{nodes: t.nodes, cands: t.cands, firsts: t.firsts, labels: t.labels}
	if !t.grown.CompareAndSwap(false, true) {
		a.nodes, a.cands, a.firsts, a.labels = slices.Clip(a.nodes), slices.Clip(a.cands), slices.Clip(a.firsts), slices.Clip(a.labels)
	}
	a.nodes, a.cands, a.firsts = slices.Grow(a.nodes, newNodes), slices.Grow(a.cands, newCands), slices.Grow(a.firsts, newNodes)

	x := t.hosts
	x.entries = t.hosts.entries.edit()
	x.entries.extend(s.entries)
	c.entries = map[int32]*hostRules[T]{}
	for _, h := range c.dropped {
		*x.entries.set(uint64(h.entry)) = hostRef{next: -1}
	}
	for i, h := range c.rebuilt {
		ref := x.entries.set(uint64(h.entry))
		*ref = a.freeze(tries[i], h.rules)
		ref.next = s.fallback(h.name) // relink below changes those that hosts coming or going change
		c.entries[h.entry] = h
	}
	c.relink(s, &x.entries)

	// The lookup tables hold copies of the hostRefs: write the changed ones.
	var exact, wild *hostTable
	table := func(isWild bool) *hostTable {
		if isWild {
			if wild == nil {
				x.wild = t.hosts.wild.edit()
				wild = &x.wild
			}
			return wild
		}
		if exact == nil {
			x.exact = t.hosts.exact.edit()
			exact = &x.exact
		}
		return exact
	}
	for _, h := range c.dropped {
		if key, isWild := h.hostKey(); h.name != "" {
			table(isWild).del(key)
		}
	}
	for e, h := range c.entries {
		if key, isWild := h.hostKey(); h.name != "" {
			table(isWild).set(key, *x.entries.get(uint64(e)))
		}
	}
	x.entries.done()
	x.exact.done()
	x.wild.done()
	x.catchAll = -1
	if s.catchAll != nil {
		x.catchAll = s.catchAll.entry
	}

	return &Table[T]{hosts: x, nodes: a.nodes, firsts: a.firsts, cands: a.cands, labels: a.labels, rules: s.rules, src: s}
}

// relink recomputes the fallbacks that hosts coming or going may change:
// every one when the catch-all came or went, else those of the hosts under
// a wildcard that came or went.
func (c *change[T]) relink(s *source[T], entries *paged[hostRef]) {
	if !c.relinkAll && len(c.wildSuffix) == 0 {
		return
	}
	relink := func(h *hostRules[T]) {
		if next := s.fallback(h.name); next != entries.get(uint64(h.entry)).next {
			entries.set(uint64(h.entry)).next = next
			if c.entries[h.entry] == nil {
				c.entries[h.entry] = h
			}
		}
	}
	for _, m := range []*shardedMap[string, *hostRules[T]]{&s.exact, &s.wild} {
		for name, h := range m.all() {
			if c.relinkAll || slices.ContainsFunc(c.wildSuffix, func(suffix string) bool { return under(name, suffix) }) {
				relink(h)
			}
		}
	}
}

// under reports whether a wildcard on suffix serves name, a hostname or
// another wildcard's suffix: name ends in "." + suffix, with a label
// before.
func under(name, suffix string) bool {
	n := len(name) - len(suffix)
	return n >= 2 && name[n-1] == '.' && name[n:] == suffix
}

func unknownKey(k *Key) error {
	return fmt.Errorf("remove %s: %w; build the table anew", describeKey(k), ErrUnknownKey)
}

// describeKey names a removed rule the way describe names a rule.
func describeKey(k *Key) string {
	return fmt.Sprintf("route %s/%s rule %d match %d (created %s)", k.Namespace, k.Name, k.Rule, k.Match, k.Created.Format("2006-01-02T15:04:05.999999999Z07:00"))
}
