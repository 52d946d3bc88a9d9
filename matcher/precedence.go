// This file implements the order of rules that tie on host and path kind.

package matcher

import (
	"cmp"
	"time"
)

// order holds what ranks a rule against others that tie on host and path
// kind: criterion 3 of the package comment, Rule.Precedence, then criteria
// 4 to 6 up to match index. It is kept with each prepared rule, so that
// Update can rank a changed host's rules again; Match compares the ranks
// derived from it.
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
}

// compare returns a negative number when a takes precedence over b, and 0
// when they tie on everything but input order.
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
	}
	return a.match - b.match
}

// filed is a rule as one table holds it: prepared, and numbered in the
// order it joined the table, the last tie-breaker. Build numbers its rules
// by their position; Update numbers the rules it adds after every rule
// the table already has.
type filed[T any] struct {
	p     *Prepared[T]
	input int
}

// compareFiled orders two rules of one host entry by precedence. It never
// returns 0 for two rules of one table, because their inputs differ.
func compareFiled[T any](a, b filed[T]) int {
	if c := a.p.order.compare(&b.p.order); c != 0 {
		return c
	}
	return cmp.Compare(a.input, b.input)
}
