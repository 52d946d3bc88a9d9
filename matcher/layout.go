package matcher

// arrays are a Table's flat arrays while host entries are laid out into
// them. Build fills empty ones; Update appends to the old table's (see
// "Updating a table" in the package comment for why that leaves the old
// table as it was). labels holds only what is appended, to be added to
// the old table's string.
type arrays[T any] struct {
	nodes      []node
	cands      []candidate[T]
	firsts     []byte // first label byte of each node
	labels     []byte // labels too long to inline, appended
	labelsBase int    // length of the old table's labels
	queue      []layoutItem
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
			n.labelOff = uint32(a.labelsBase + len(a.labels))
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
