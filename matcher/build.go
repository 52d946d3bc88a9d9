// This file implements Build.

package matcher

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Build files prepared rules into an immutable Table. Their order in
// rules is the last tie-breaker of precedence, as in Compile. It fails
// only on a nil rule or when a table limit is passed (maxListLen rules on
// one hostname and path), and then names every list over the limit.
func Build[T any](rules []*Prepared[T]) (*Table[T], error) {
	s := newSource[T](len(rules))
	f := filer[T]{s: s}
	for i, pr := range rules {
		if pr == nil {
			return nil, fmt.Errorf("rule %d is nil: Build takes rules from Prepare", i)
		}
		f.count(pr)
	}
	f.endRoute()
	f.file(rules)
	s.rules, s.input = len(rules), len(rules)
	for _, h := range f.hosts {
		slices.SortFunc(h.rules, compareFiled)
	}
	s.done()
	return layoutAll(s, f.hosts)
}

// filer files rules into a source Build is filling, in two passes: count
// finds each rule's host entries (creating them) and counts their rules;
// file then carves every entry's rule list out of one array and fills it.
// The matches of one route come one after another and share a hostnames
// slice, so count keeps the last rule's host entries and the route being
// filed at hand.
type filer[T any] struct {
	s       *source[T]
	hosts   []*hostRules[T] // every host entry, by number
	entries []*hostRules[T] // the host entries of every rule, one after another
	sizes   []int           // the rule count of every host entry, by number

	hostnames []string // the last rule's; its entries end entries
	last      int      // how many entries they have
	block     []hostRules[T]

	route      routeID
	routeHosts []string // the hostnames of its rules so far
	routeRules int
}

func (f *filer[T]) count(p *Prepared[T]) {
	names := p.place.hostnames
	if sameSlice(names, f.hostnames) {
		f.entries = append(f.entries, f.entries[len(f.entries)-f.last:]...)
	} else {
		f.hostnames, f.last = names, len(names)
		for _, name := range names {
			h := f.s.host(name)
			if h == nil {
				h = f.newHost(name)
			}
			f.entries = append(f.entries, h)
		}
	}
	for _, h := range f.entries[len(f.entries)-f.last:] {
		f.sizes[h.entry]++
	}

	if route := p.order.nsName; route != f.route || f.routeRules == 0 {
		f.endRoute()
		f.route, f.routeHosts = route, names
	} else if !sameSlice(names, f.routeHosts) {
		f.routeHosts = union(f.routeHosts, names)
	}
	f.routeRules++
}

// newHost makes a host entry; they are allocated in blocks.
func (f *filer[T]) newHost(name string) *hostRules[T] {
	if len(f.hosts)%64 == 0 {
		f.block = make([]hostRules[T], 64)
	}
	h := &f.block[len(f.hosts)%64]
	*h = hostRules[T]{name: name, entry: f.s.newEntry()}
	f.s.setHost(h)
	f.hosts = append(f.hosts, h)
	f.sizes = append(f.sizes, 0)
	return h
}

// file fills the host entries' rule lists, in input order.
func (f *filer[T]) file(rules []*Prepared[T]) {
	all := make([]filed[T], len(f.entries))
	for _, h := range f.hosts {
		n := f.sizes[h.entry]
		h.rules, all = all[:0:n], all[n:]
	}
	at := 0
	for i, pr := range rules {
		for _, h := range f.entries[at : at+len(pr.place.hostnames)] {
			h.rules = append(h.rules, filed[T]{pr, i})
		}
		at += len(pr.place.hostnames)
	}
}

// endRoute records where the route being filed is.
func (f *filer[T]) endRoute() {
	if f.routeRules > 0 {
		f.s.addRoute(f.route, f.routeHosts, f.routeRules)
		f.routeRules = 0
	}
}

// sameSlice reports whether a and b are the same slice, as the matches of
// a route share one.
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// union returns a with the strings of b it lacks appended, never writing
// into a's array, which may be shared.
func union(a, b []string) []string {
	for _, x := range b {
		if !slices.Contains(a, x) {
			a = append(a[:len(a):len(a)], x)
		}
	}
	return a
}

// layoutAll lays out every host entry of s, which Build has just filled,
// into a new Table. hosts is s.byEntry().
func layoutAll[T any](s *source[T], hosts []*hostRules[T]) (*Table[T], error) {
	tries, nodes, cands, err := buildTries(hosts)
	if err != nil {
		return nil, err
	}
	s.nodes, s.cands = nodes, cands

	t := &Table[T]{rules: s.rules, src: s}
	a := arrays[T]{
		nodes:  make([]node, 0, s.nodes),
		cands:  make([]candidate[T], 0, s.cands),
		firsts: make([]byte, 0, s.nodes),
	}
	entries := newPaged[hostRef](len(hosts))
	for e, h := range hosts {
		ref := entries.set(uint64(e))
		*ref = hostRef{next: -1}
		if h != nil {
			*ref = a.freeze(tries[e], h.rules)
			ref.next = s.fallback(h.name)
		}
	}
	t.nodes, t.cands = a.nodes, a.cands
	t.firsts, t.labels = a.firsts, a.labels
	t.hosts = newHostIndex(s, hosts, entries)
	return t, nil
}

// buildTries builds the path trie of each host entry of hosts (none for a
// nil one), counting its nodes into it, and returns them with the nodes
// and candidates they hold in all; or every list over a table limit.
func buildTries[T any](hosts []*hostRules[T]) (tries []*pathNode, nodes, cands int, err error) {
	tries = make([]*pathNode, len(hosts))
	var over []overflow
	for i, h := range hosts {
		if h == nil {
			continue
		}
		tries[i], h.nodes, over = buildTrie(h, over)
		nodes, cands = nodes+h.nodes, cands+len(h.rules)
	}
	if err := overflowError(over); err != nil {
		return nil, 0, 0, err
	}
	return tries, nodes, cands, nil
}

// newHostIndex makes the host lookup tables of hosts (s.byEntry()), whose
// entries are laid out.
func newHostIndex[T any](s *source[T], hosts []*hostRules[T], entries paged[hostRef]) hostIndex {
	x := hostIndex{
		exact:    newHostTable(s.exact.len()),
		wild:     newHostTable(s.wild.len()),
		catchAll: -1,
		entries:  entries,
	}
	for _, h := range hosts {
		if h == nil {
			continue
		}
		switch key, wild := h.hostKey(); {
		case h.name == "":
			x.catchAll = h.entry
		case wild:
			x.wild.set(key, *entries.get(uint64(h.entry)))
		default:
			x.exact.set(key, *entries.get(uint64(h.entry)))
		}
	}
	x.entries.done()
	x.exact.done()
	x.wild.done()
	return x
}

// pathNode is a node of one host entry's radix trie over path bytes while
// it is built. Its lists hold ranks: indices into the entry's rules, which
// are inserted in rank order, so every list is sorted.
type pathNode struct {
	label    string // the bytes on the edge from the parent
	firsts   string // first byte of each child's label
	children []*pathNode

	exact  []int32 // Exact rules whose value is the key
	prefix []int32 // PathPrefix rules whose trimmed value is the key
	regex  []int32 // regex rules whose literal prefix is the key
}

// overflow is a list longer than a node can hold, found while building.
type overflow struct {
	hostname string
	kind     PathKind
	key      string
	list     *[]int32
}

// buildTrie builds h's path trie and returns it with its number of nodes,
// appending the lists it finds too long to over.
func buildTrie[T any](h *hostRules[T], over []overflow) (*pathNode, int, []overflow) {
	root := &pathNode{}
	nodes := 1
	for rank, r := range h.rules {
		n, created := root.insert(r.p.place.key)
		nodes += created
		list := &n.prefix
		switch r.p.place.kind {
		case PathExact:
			list = &n.exact
		case PathRegex:
			list = &n.regex
		}
		*list = append(*list, int32(rank))
		if len(*list) == maxListLen+1 {
			over = append(over, overflow{h.name, r.p.place.kind, r.p.place.key, list})
		}
	}
	return root, nodes, over
}

// overflowError reports the lists too long, all of them, in an order that
// does not depend on how the table was built, so that Build and Update
// fail alike.
func overflowError(over []overflow) error {
	if len(over) == 0 {
		return nil
	}
	slices.SortFunc(over, func(a, b overflow) int {
		return cmp.Or(strings.Compare(a.hostname, b.hostname), cmp.Compare(a.kind, b.kind), strings.Compare(a.key, b.key))
	})
	errs := make([]error, len(over))
	for i, o := range over {
		where := fmt.Sprintf("hostname %q", o.hostname)
		if o.hostname == "" {
			where = "no hostname"
		}
		errs[i] = fmt.Errorf("%d rules on %s share the %s path %q, more than the limit of %d: "+
			"split them across hostnames or paths", len(*o.list), where, o.kind, o.key, maxListLen)
	}
	return errors.Join(errs...)
}

// insert returns the node whose key is n's key + rest, creating it (and
// splitting an edge) if needed, and how many nodes it created.
func (n *pathNode) insert(rest string) (*pathNode, int) {
	created := 0
	for rest != "" {
		i := strings.IndexByte(n.firsts, rest[0])
		if i < 0 {
			leaf := &pathNode{label: rest}
			n.firsts += rest[:1]
			n.children = append(n.children, leaf)
			return leaf, created + 1
		}
		child := n.children[i]
		common := commonPrefixLen(child.label, rest)
		if common < len(child.label) {
			// Split the edge: n → mid → child.
			mid := &pathNode{
				label:    child.label[:common],
				firsts:   child.label[common : common+1],
				children: []*pathNode{child},
			}
			child.label = child.label[common:]
			n.children[i] = mid
			child = mid
			created++
		}
		n, rest = child, rest[common:]
	}
	return n, created
}

func commonPrefixLen(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
