package matcher

import (
	"slices"
	"time"
)

// order holds what ranks a rule against others that tie on host and path
// kind: criterion 3 of the package comment, Rule.Precedence, then criteria
// 4 to 6. It exists only while
// compiling; Match compares the ranks derived from it.
type order struct {
	prefixLen  int
	precedence int
	method     bool
	headers    int
	queries    int
	created    time.Time
	nsName     string // "{namespace}/{name}", compared as one string
	rule       int
	match      int
	input      int // position in Compile's input: the last tie-breaker
}

// compare returns a negative number when a takes precedence over b. It
// never returns 0 for two different rules, because inputs differ.
func (a *order) compare(b *order) int {
	switch {
	case a.prefixLen != b.prefixLen:
		return b.prefixLen - a.prefixLen // longer first
	case a.precedence != b.precedence:
		return b.precedence - a.precedence // higher first
	case a.method != b.method:
		if a.method {
			return -1
		}
		return 1
	case a.headers != b.headers:
		return b.headers - a.headers // more first
	case a.queries != b.queries:
		return b.queries - a.queries
	case !a.created.Equal(b.created):
		return a.created.Compare(b.created) // older first
	case a.nsName != b.nsName:
		if a.nsName < b.nsName {
			return -1
		}
		return 1
	case a.rule != b.rule:
		return a.rule - b.rule
	case a.match != b.match:
		return a.match - b.match
	}
	return a.input - b.input
}

// rankAll sets each candidate's rank to its position when all are sorted by
// precedence, so Match orders any two candidates with one comparison.
func rankAll[T any](cands []candidate[T], orders []order) {
	idx := make([]int, len(cands))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return orders[a].compare(&orders[b]) })
	for rank, i := range idx {
		cands[i].rank = int32(rank)
	}
}
