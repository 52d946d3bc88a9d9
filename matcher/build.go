package matcher

import (
	"fmt"
	"slices"
	"strings"
)

// builder collects rules into pointer-linked tries that are easy to grow,
// then freezes them into the flat arrays a Table searches. Building and
// searching are kept apart: insertion wants pointers, matching wants every
// host's trie in a few adjacent cache lines.
type builder[T any] struct {
	entries  []*pathNode[T]   // path trie root of each host entry
	exact    map[string]int32 // hostname → entry
	wild     map[string]int32 // wildcard suffix ("example.com" for "*.example.com") → entry
	catchAll int32
	nodes    int // nodes in all tries, roots included
	filed    int // candidates filed, counting each hostname
}

func newBuilder[T any]() *builder[T] {
	return &builder[T]{exact: map[string]int32{}, wild: map[string]int32{}, catchAll: -1}
}

// pathNode is a node of a radix trie over path bytes while building.
type pathNode[T any] struct {
	label    string // the bytes on the edge from the parent
	firsts   string // first byte of each child's label
	children []*pathNode[T]

	exact  []*candidate[T] // Exact rules whose value is the key
	prefix []*candidate[T] // PathPrefix rules whose trimmed value is the key
	regex  []*candidate[T] // regex rules whose literal prefix is the key
}

// add files c under each of its host entries at its place in the path trie.
func (b *builder[T]) add(c *candidate[T], place placement) {
	for _, h := range place.hostnames {
		n, created := b.entries[b.entryFor(h)].insert(place.key)
		b.nodes += created
		b.filed++
		switch place.kind {
		case PathExact:
			n.exact = append(n.exact, c)
		case PathPrefix:
			n.prefix = append(n.prefix, c)
		case PathRegex:
			n.regex = append(n.regex, c)
		}
	}
}

// entryFor returns the entry of a validated, lower-case hostname ("" for the
// catch-all), creating it on first use.
func (b *builder[T]) entryFor(hostname string) int32 {
	if hostname == "" {
		if b.catchAll < 0 {
			b.catchAll = b.newEntry()
		}
		return b.catchAll
	}
	names, key := b.exact, hostname
	if suffix, ok := strings.CutPrefix(hostname, "*."); ok {
		names, key = b.wild, suffix
	}
	e, ok := names[key]
	if !ok {
		e = b.newEntry()
		names[key] = e
	}
	return e
}

func (b *builder[T]) newEntry() int32 {
	b.nodes++
	b.entries = append(b.entries, &pathNode[T]{})
	return int32(len(b.entries) - 1)
}

// fallback returns the entry a host entry falls back to: the longest
// wildcard serving every host it serves, else the catch-all. name is an
// exact hostname or a wildcard's suffix; for a suffix, wildDot skips the
// suffix itself, since a wildcard does not serve its own suffix.
func (b *builder[T]) fallback(name string) int32 {
	for i := wildDot(name, -1); i >= 0; i = wildDot(name, i) {
		if e, ok := b.wild[name[i+1:]]; ok {
			return e
		}
	}
	return b.catchAll
}

// insert returns the node whose key is n's key + rest, creating it (and
// splitting an edge) if needed, and how many nodes it created.
func (n *pathNode[T]) insert(rest string) (*pathNode[T], int) {
	created := 0
	for rest != "" {
		i := strings.IndexByte(n.firsts, rest[0])
		if i < 0 {
			leaf := &pathNode[T]{label: rest}
			n.firsts += rest[:1]
			n.children = append(n.children, leaf)
			return leaf, created + 1
		}
		child := n.children[i]
		common := commonPrefixLen(child.label, rest)
		if common < len(child.label) {
			// Split the edge: n → mid → child.
			mid := &pathNode[T]{
				label:    child.label[:common],
				firsts:   child.label[common : common+1],
				children: []*pathNode[T]{child},
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

// freeze lays the tries out in t: each host entry's nodes in breadth-first
// order (so a node's children are adjacent), edge labels in one string,
// candidates by value and sorted by rank within each list.
func (b *builder[T]) freeze(t *Table[T]) error {
	var labels strings.Builder
	firsts := make([]byte, 0, b.nodes)
	t.nodes = make([]node, 0, b.nodes)
	t.cands = make([]candidate[T], 0, b.filed)
	t.hosts.entries = make([]hostRef, len(b.entries))
	byRank := func(x, y *candidate[T]) int { return int(x.rank - y.rank) }

	for e, root := range b.entries {
		rootAt := uint32(len(t.nodes))
		t.hosts.entries[e] = hostRef{root: rootAt, start: rootAt, next: -1}
		if len(root.children) == 1 {
			t.hosts.entries[e].start = rootAt + 1 // breadth-first: right after the root
		}
		type item struct {
			n      *pathNode[T]
			parent int32
			depth  uint16
		}
		queue := []item{{root, -1, 0}}
		t.nodes = append(t.nodes, node{})
		firsts = append(firsts, 0)
		for at := len(t.nodes) - 1; len(queue) > 0; at++ {
			it := queue[0]
			queue = queue[1:]
			n := &t.nodes[at]
			n.labelLen = uint16(len(it.n.label))
			if len(it.n.label) <= len(n.inline) {
				copy(n.inline[:], it.n.label)
			} else {
				n.labelOff = uint32(labels.Len())
				labels.WriteString(it.n.label)
			}
			n.depth = it.depth + uint16(len(it.n.label))

			// Candidates: exact, then prefix, then regex, each by rank.
			n.cands = uint32(len(t.cands))
			for _, list := range [][]*candidate[T]{it.n.exact, it.n.prefix, it.n.regex} {
				if len(list) > maxListLen {
					return fmt.Errorf("%d rules share one hostname and path, more than the limit of %d: "+
						"split them across hostnames or paths", len(list), maxListLen)
				}
				slices.SortFunc(list, byRank)
				for _, c := range list {
					t.cands = append(t.cands, *c)
				}
			}
			n.nexact, n.nprefix, n.nregex = uint16(len(it.n.exact)), uint16(len(it.n.prefix)), uint16(len(it.n.regex))

			// Nearest ancestors with prefix and regex rules: the parent
			// was laid out before its children.
			n.prefixUp, n.regexUp = -1, -1
			if p := it.parent; p >= 0 {
				pn := &t.nodes[p]
				n.prefixUp, n.regexUp = pn.prefixUp, pn.regexUp
				if pn.nprefix > 0 {
					n.prefixUp = p
				}
				if pn.nregex > 0 {
					n.regexUp = p
				}
			}

			// Reserve the children's slots side by side.
			n.child, n.nchild = uint32(len(t.nodes)), uint16(len(it.n.children))
			copy(n.firsts[:], it.n.firsts)
			depth := n.depth
			for _, c := range it.n.children {
				t.nodes = append(t.nodes, node{})
				firsts = append(firsts, c.label[0])
				queue = append(queue, item{c, int32(at), depth})
			}
		}
	}
	t.labels = labels.String()
	t.firsts = string(firsts)

	// Host lookup structures, with every entry linked to its fallback.
	t.hosts.catchAll = b.catchAll
	t.hosts.exact = b.hostTable(b.exact, t.hosts.entries)
	t.hosts.wild = b.hostTable(b.wild, t.hosts.entries)
	return nil
}

// hostTable links the named entries to their fallbacks and indexes them.
func (b *builder[T]) hostTable(names map[string]int32, entries []hostRef) hostTable {
	refs := make(map[string]hostRef, len(names))
	for name, e := range names {
		entries[e].next = b.fallback(name)
		refs[name] = entries[e]
	}
	return newHostTable(refs)
}
