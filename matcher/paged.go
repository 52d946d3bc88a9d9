// This file implements arrays kept in pages that tables share.

package matcher

import "slices"

// paged is an array kept in pages of 256 elements, so that a table updated
// from another shares every page it does not write to: a one-route Update
// copies the list of pages and the pages it changes, not the array. A read
// costs one more memory access than a flat array's, to the list of pages.
// Pages are large so that the list stays small (24 bytes a page, 1.5 KiB
// for 16,384 host slots) and in the nearest cache: with 64-slot pages the
// list of a 10,000-route table left it, and Match grew 5% slower.
//
// A paged array is immutable once its Table is returned; only a copy made
// by edit, or a new one, is written to.
type paged[E any] struct {
	pages [][]E  // element i is pages[i>>pageBits][i&pageMask]; only the last page may be short
	owned []bool // pages this copy may write to; nil when it may write to none
}

const (
	pageBits = 8
	pageLen  = 1 << pageBits
	pageMask = pageLen - 1
)

// newPaged returns n zero elements, all writable.
func newPaged[E any](n int) paged[E] {
	p := paged[E]{pages: make([][]E, (n+pageMask)>>pageBits)}
	p.owned = make([]bool, len(p.pages))
	for i := range p.pages {
		p.pages[i] = make([]E, min(n-i*pageLen, pageLen))
		p.owned[i] = true
	}
	return p
}

// get returns element i to read.
func (p *paged[E]) get(i uint64) *E {
	return &p.pages[i>>pageBits][i&pageMask]
}

// set returns element i to write, copying its page first if it may be
// shared.
func (p *paged[E]) set(i uint64) *E {
	n := i >> pageBits
	if !p.owned[n] {
		p.pages[n] = slices.Clone(p.pages[n])
		p.owned[n] = true
	}
	return &p.pages[n][i&pageMask]
}

// len returns the number of elements.
func (p *paged[E]) len() int {
	if len(p.pages) == 0 {
		return 0
	}
	return (len(p.pages)-1)*pageLen + len(p.pages[len(p.pages)-1])
}

// extend appends zero elements up to n.
func (p *paged[E]) extend(n int) {
	for m := p.len(); m < n; {
		last := len(p.pages) - 1
		if last < 0 || len(p.pages[last]) == pageLen {
			p.pages = append(p.pages, nil)
			p.owned = append(p.owned, true)
			last++
		}
		page := p.pages[last]
		if !p.owned[last] {
			page = slices.Clip(page) // the append below must not write into a shared page
		}
		add := min(n-m, pageLen-len(page))
		p.pages[last] = append(page, make([]E, add)...)
		p.owned[last] = true
		m += add
	}
}

// edit returns a copy of p that may be written to without changing p.
func (p *paged[E]) edit() paged[E] {
	return paged[E]{pages: slices.Clone(p.pages), owned: make([]bool, len(p.pages))}
}

// done ends writing: p is about to be published.
func (p *paged[E]) done() { p.owned = nil }
