// This file implements a compiled rule's conditions as Match checks them.

package matcher

import (
	"regexp"
	"sync"
)

// candidate is one compiled rule as Match sees it: what to return, its
// rank (its position in the precedence order of its host entry's rules,
// lower wins; see precedence.go: Match only compares candidates of one
// host entry) and its conditions beyond the path's trie position.
// Most rules have none, so they sit behind one pointer and a candidate is
// three words for a pointer-sized T.
type candidate[T any] struct {
	ref  T
	more *conditions // nil when the rule has no method, header, query or regex condition
	rank int32
}

// conditions are what a rule checks beyond its place in the trie.
type conditions struct {
	method string
	path   *regexp.Regexp // RegularExpression paths only
	header []headerCond
	query  []queryCond
}

func (c *candidate[T]) matches(r *Request, bufs *sync.Pool) bool {
	return c.more == nil || c.more.matches(r, bufs)
}

// matches checks method, headers, query and, for regex rules, the path
// expression. Cheapest checks first.
func (cs *conditions) matches(r *Request, bufs *sync.Pool) bool {
	if cs.method != "" && cs.method != r.Method {
		return false
	}
	for i := range cs.header {
		if !cs.header[i].matches(r, bufs) {
			return false
		}
	}
	for i := range cs.query {
		if !cs.query[i].matches(r.RawQuery, bufs) {
			return false
		}
	}
	return cs.path == nil || cs.path.MatchString(r.Path)
}

// headerCond is one header condition, with its name canonicalised at compile
// time so the lookup is a plain map index.
type headerCond struct {
	key   string // canonical, e.g. "X-Version"
	host  bool   // the condition is on Host, which net/http keeps apart
	value string
	re    *regexp.Regexp
}

func (h *headerCond) matches(r *Request, bufs *sync.Pool) bool {
	if h.host {
		return h.matchValue(r.Host)
	}
	vals := r.Header[h.key]
	switch len(vals) {
	case 0:
		return false
	case 1:
		return h.matchValue(vals[0])
	}
	// Several field lines are one value joined with ", " (RFC 9110 §5.3).
	if h.re == nil {
		return joinedEquals(vals, h.value)
	}
	bp := getBuf(bufs)
	b := (*bp)[:0]
	for i, v := range vals {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, v...)
	}
	ok := h.re.Match(b)
	putBuf(bufs, bp, b)
	return ok
}

func (h *headerCond) matchValue(v string) bool {
	if h.re != nil {
		return h.re.MatchString(v)
	}
	return v == h.value
}

// joinedEquals reports whether strings.Join(vals, ", ") == want without
// building the joined string.
func joinedEquals(vals []string, want string) bool {
	for i, v := range vals {
		if i > 0 {
			if len(want) < 2 || want[0] != ',' || want[1] != ' ' {
				return false
			}
			want = want[2:]
		}
		if len(want) < len(v) || want[:len(v)] != v {
			return false
		}
		want = want[len(v):]
	}
	return want == ""
}

// getBuf and putBuf lend scratch space for the rare regex comparison that
// needs a value assembled from pieces; pooling keeps Match allocation-free
// once warm.
func getBuf(p *sync.Pool) *[]byte {
	if bp, ok := p.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, 0, 256)
	return &b
}

func putBuf(p *sync.Pool, bp *[]byte, b []byte) {
	if cap(b) <= 64<<10 { // do not pin huge buffers
		*bp = b[:0]
		p.Put(bp)
	}
}
