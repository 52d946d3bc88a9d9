// This file lays host entries out into a Table's arrays.

package matcher

// arrays are a Table's flat arrays while host entries are laid out into
// them. Build fills empty ones; Update appends to the old table's (see
// "Updating a table" in the package comment for why that leaves the old
// table as it was).
type arrays[T any] struct {
	nodes  []node
	cands  []candidate[T]
	firsts []byte // first label byte of each node
	labels []byte // labels too long to inline
	queue  []layoutItem
}

type layoutItem struct {
	n      *pathNode
	parent int32
	depth  uint16
}

// freeze lays out one host entry's trie: its nodes side by side in
// breadth-first order (so a node's children are adjacent), its candidates
// by value, each list in rank order. It returns the entry's hostRef
// without its fallback.
func (a *arrays[T]) freeze(root *pathNode, rules []filed[T]) hostRef {
	rootAt := uint32(len(a.nodes))
	ref := hostRef{root: rootAt, start: rootAt, next: -1}
	if len(root.children) == 1 {
		ref.start = rootAt + 1 // breadth-first: right after the root
	}
	a.queue = append(a.queue[:0], layoutItem{root, -1, 0})
	a.nodes = append(a.nodes, node{})
	a.firsts = append(a.firsts, 0)
	for head, at := 0, int(rootAt); head < len(a.queue); head, at = head+1, at+1 {
		it := a.queue[head]
		n := &a.nodes[at]
		n.labelLen = uint16(len(it.n.label))
		if len(it.n.label) <= len(n.inline) {
			copy(n.inline[:], it.n.label)
		} else {
			n.labelOff = uint32(len(a.labels))
			a.labels = append(a.labels, it.n.label...)
		}
		n.depth = it.depth + uint16(len(it.n.label))

		// Candidates: exact, then prefix, then regex, each by rank.
		n.cands = uint32(len(a.cands))
		for _, list := range [...][]int32{it.n.exact, it.n.prefix, it.n.regex} {
			for _, rank := range list {
				c := rules[rank].p.cand
				c.rank = rank
				a.cands = append(a.cands, c)
			}
		}
		n.nexact, n.nprefix, n.nregex = uint16(len(it.n.exact)), uint16(len(it.n.prefix)), uint16(len(it.n.regex))

		// Nearest ancestors with prefix and regex rules: the parent
		// was laid out before its children.
		n.prefixUp, n.regexUp = -1, -1
		if p := it.parent; p >= 0 {
			pn := &a.nodes[p]
			n.prefixUp, n.regexUp = pn.prefixUp, pn.regexUp
			if pn.nprefix > 0 {
				n.prefixUp = p
			}
			if pn.nregex > 0 {
				n.regexUp = p
			}
		}

		// Reserve the children's slots side by side.
		n.child, n.nchild = uint32(len(a.nodes)), uint16(len(it.n.children))
		copy(n.firsts[:], it.n.firsts)
		depth := n.depth
		for _, c := range it.n.children {
			a.nodes = append(a.nodes, node{})
			a.firsts = append(a.firsts, c.label[0])
			a.queue = append(a.queue, layoutItem{c, int32(at), depth})
		}
	}
	return ref
}

// compacted returns t with its host entries moved side by side, leaving
// out the tries no entry uses any more. An entry's nodes, candidates and
// first bytes are each one run in t's arrays (freeze lays them out so), so
// an entry is moved by copying its runs and shifting the indices its nodes
// hold by how far they moved, not laid out again. The host lookup tables
// are made anew, since every entry's hostRef changes.
func (t *Table[T]) compacted() *Table[T] {
	s := t.src
	hosts := s.byEntry()
	nodes := make([]node, 0, s.nodes)
	cands := make([]candidate[T], 0, s.cands)
	firsts := make([]byte, 0, s.nodes)
	var labels []byte
	entries := newPaged[hostRef](len(hosts))
	for e, h := range hosts {
		ref := entries.set(uint64(e))
		*ref = hostRef{next: -1}
		if h == nil {
			continue
		}
		old := *t.hosts.entries.get(uint64(e))
		run := t.nodes[old.root : old.root+uint32(h.nodes)]
		moved := int32(len(nodes)) - int32(old.root)
		candsMoved := int32(len(cands)) - int32(run[0].cands) // the root's come first
		cands = append(cands, t.cands[run[0].cands:int(run[0].cands)+len(h.rules)]...)
		firsts = append(firsts, t.firsts[old.root:old.root+uint32(h.nodes)]...)
		for _, n := range run {
			if n.nchild > 0 {
				n.child = uint32(int32(n.child) + moved)
			}
			if n.prefixUp >= 0 {
				n.prefixUp += moved
			}
			if n.regexUp >= 0 {
				n.regexUp += moved
			}
			n.cands = uint32(int32(n.cands) + candsMoved)
			if int(n.labelLen) > len(n.inline) {
				label := t.labels[n.labelOff : n.labelOff+uint32(n.labelLen)]
				n.labelOff = uint32(len(labels))
				labels = append(labels, label...)
			}
			nodes = append(nodes, n)
		}
		*ref = hostRef{root: uint32(int32(old.root) + moved), start: uint32(int32(old.start) + moved), next: old.next}
	}
	return &Table[T]{
		hosts: newHostIndex(s, hosts, entries),
		nodes: nodes, cands: cands, firsts: firsts, labels: labels,
		rules: t.rules, src: s,
	}
}
