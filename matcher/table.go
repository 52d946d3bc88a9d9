// This file implements the Table and Match.

package matcher

import (
	"bytes"
	"sync"
	"sync/atomic"
)

// Table is a compiled, immutable rule set. Match is safe for concurrent use.
type Table[T any] struct {
	hosts  hostIndex
	nodes  []node         // every host's path trie, each breadth-first
	firsts []byte         // firsts[i] is the first byte of node i's label
	labels []byte         // edge labels too long to inline, see node.labelOff
	cands  []candidate[T] // see node.cands
	rules  int
	bufs   sync.Pool // scratch for regexes on joined or decoded values

	// src is what Update redoes host entries from; Match never reads it.
	src *source[T]
	// grown is set by the Update that appends to nodes, firsts and cands
	// in place, past their length, which no other may do (see "Updating a
	// table" in the package comment).
	grown atomic.Bool
}

// node is a path trie node. Its key (the bytes from the root to here) is
// never stored: it is the first depth bytes of any path that reaches it.
// Fields are sized and ordered so that a node is one 64-byte cache line,
// edge labels of up to 24 bytes included.
type node struct {
	child    uint32 // children are nodes[child:child+nchild]
	labelOff uint32 // where a label too long for inline starts in Table.labels
	// The rules filed here start at cands[cands], each list sorted by rank:
	// nexact Exact rules whose value is the key, then nprefix PathPrefix
	// rules whose trimmed value is the key, then nregex regex rules whose
	// literal prefix is the key.
	cands                   uint32
	prefixUp, regexUp       int32 // nearest proper ancestors holding prefix and regex rules, or -1
	nexact, nprefix, nregex uint16
	labelLen                uint16
	depth                   uint16 // length of the key; keys are at most maxPathLen
	nchild                  uint16 // at most 256: children differ in their first byte
	// firsts holds the first label byte of up to 8 children, so the common
	// small fan-out is searched without touching another cache line;
	// wider nodes use Table.firsts.
	firsts [8]byte
	inline [24]byte // the edge from the parent, when labelLen fits
}

// maxListLen bounds each of a node's three rule lists.
const maxListLen = 1<<16 - 1

func (n *node) exactRange() (uint32, uint32) {
	return n.cands, n.cands + uint32(n.nexact)
}

func (n *node) prefixRange() (uint32, uint32) {
	from := n.cands + uint32(n.nexact)
	return from, from + uint32(n.nprefix)
}

func (n *node) regexRange() (uint32, uint32) {
	from := n.cands + uint32(n.nexact) + uint32(n.nprefix)
	return from, from + uint32(n.nregex)
}

// Match returns the reference of the rule that wins r, or ok == false when
// no rule matches (the data plane answers 404).
func (t *Table[T]) Match(r *Request) (ref T, ok bool) {
	var e hostRef
	var found bool
	if host, ok := plainHost(r.Host); ok {
		e, found = lookupHost(&t.hosts, host)
	} else {
		var buf [maxHostLen]byte
		e, found = lookupHost(&t.hosts, hostKey(r.Host, &buf))
	}
	for found {
		if c := t.matchPath(e, r); c != nil {
			return c.ref, true
		}
		if e.next < 0 {
			break
		}
		e = *t.hosts.entries.get(uint64(e.next))
	}
	return ref, false
}

// Len returns the number of rules the table was compiled from.
func (t *Table[T]) Len() int { return t.rules }

// matchPath returns the best rule of one host entry's trie for r, or nil:
// Exact rules on the whole path, then the best regex rule, then prefix rules
// deepest first.
func (t *Table[T]) matchPath(e hostRef, r *Request) *candidate[T] {
	path := r.Path
	at := e.root
	if start := &t.nodes[e.start]; e.start != e.root && len(path) >= int(start.labelLen) && t.labelIs(start, path[:start.labelLen]) {
		at = e.start
	}
	at = t.walk(at, path)
	n := &t.nodes[at]
	if int(n.depth) == len(path) {
		from, to := n.exactRange()
		if c := t.firstMatch(from, to, r); c != nil {
			return c
		}
	}
	if c := t.bestRegex(at, r); c != nil {
		return c
	}
	up := int32(at)
	if n.nprefix == 0 {
		up = n.prefixUp
	}
	for up >= 0 {
		m := &t.nodes[up]
		// "/abc" covers "/abc" and "/abc/…", not "/abcd".
		if int(m.depth) == len(path) || path[m.depth] == '/' {
			from, to := m.prefixRange()
			if c := t.firstMatch(from, to, r); c != nil {
				return c
			}
		}
		up = m.prefixUp
	}
	return nil
}

// walk descends from node at, whose key must be a prefix of path, and
// returns the deepest node whose key is a prefix of path.
func (t *Table[T]) walk(at uint32, path string) uint32 {
	nodes := t.nodes
	for pos := int(nodes[at].depth); pos < len(path); {
		n := &nodes[at]
		// Find the child whose label starts with the next byte: in the
		// node itself for up to 8 children, else in Table.firsts.
		b, i := path[pos], -1
		if k := int(n.nchild); k <= len(n.firsts) {
			for j, f := range n.firsts[:k] {
				if f == b {
					i = j
					break
				}
			}
		} else {
			i = bytes.IndexByte(t.firsts[n.child:n.child+uint32(k)], b)
		}
		if i < 0 {
			break
		}
		c := n.child + uint32(i)
		cn := &nodes[c]
		end := pos + int(cn.labelLen)
		if end > len(path) || !t.labelIs(cn, path[pos:end]) {
			break
		}
		at, pos = c, end
	}
	return at
}

// labelIs reports whether n's edge label is s. (The conversions in the
// comparisons do not copy.)
func (t *Table[T]) labelIs(n *node, s string) bool {
	if int(n.labelLen) <= len(n.inline) {
		return string(n.inline[:n.labelLen]) == s
	}
	return string(t.labels[n.labelOff:n.labelOff+uint32(n.labelLen)]) == s
}

// firstMatch returns the first candidate in cands[from:to] that matches r.
func (t *Table[T]) firstMatch(from, to uint32, r *Request) *candidate[T] {
	for i := from; i < to; i++ {
		if c := &t.cands[i]; c.matches(r, &t.bufs) {
			return c
		}
	}
	return nil
}

// bestRegex returns the best matching regex rule on node at and its
// ancestors. They all tie on path kind, so each node's list (sorted by rank)
// is searched only while it can still beat the best found so far.
func (t *Table[T]) bestRegex(at uint32, r *Request) *candidate[T] {
	var best *candidate[T]
	up := int32(at)
	if n := &t.nodes[at]; n.nregex == 0 {
		up = n.regexUp
	}
	for up >= 0 {
		n := &t.nodes[up]
		from, to := n.regexRange()
		for i := from; i < to; i++ {
			c := &t.cands[i]
			if best != nil && c.rank > best.rank {
				break
			}
			if c.matches(r, &t.bufs) {
				best = c
				break
			}
		}
		up = n.regexUp
	}
	return best
}
