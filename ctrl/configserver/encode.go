package configserver

import (
	"crypto/sha256"
	"encoding/json"
)

// list is one slice of a config (listeners, routes or clusters) as JSON,
// element by element, remembered from the last Publish.
//
// Encoding 5,000 routes takes tens of milliseconds; the controller
// publishes after every translation, and most change one cluster's
// endpoints. So an element is encoded (and hashed) again only when it is
// not Equal to the element at its position last time. Equal compares
// content, so what is reused never depends on how the config was built;
// that translate's outputs share what did not change only makes the
// comparisons quick (values in one place are equal without a look). The
// hash of the list is a hash of its elements' hashes, so an unchanged
// element costs a comparison and 32 bytes of hashing, and an unchanged
// list a pass of comparisons.
type list[T any, P element[T]] struct {
	encoded bool // update has run: the fields below describe last
	// last is Equal to what elems and sums were made from. It is the
	// caller's, which Publish's callers do not modify.
	last  []T
	elems [][]byte            // JSON of last[i]
	sums  [][sha256.Size]byte // SHA-256 of elems[i]
	sum   [sha256.Size]byte
}

// element is a config type that compares itself with another of its
// kind: *proxycfg.Route and the like.
type element[T any] interface {
	*T
	Equal(*T) bool
}

func (l *list[T, P]) update(s []T) error {
	if l.encoded && l.unchanged(s) {
		l.last = s // the same content; compare the next list with the newest
		return nil
	}
	elems := make([][]byte, len(s))
	sums := make([][sha256.Size]byte, len(s))
	for i := range s {
		if i < len(l.last) && P(&s[i]).Equal(&l.last[i]) {
			elems[i], sums[i] = l.elems[i], l.sums[i]
			continue
		}
		b, err := json.Marshal(&s[i])
		if err != nil {
			return err
		}
		elems[i], sums[i] = b, sha256.Sum256(b)
	}
	h := sha256.New()
	if s == nil { // JSON null, not []: the proxy sees the difference
		h.Write([]byte{0})
	} else {
		h.Write([]byte{1})
	}
	for i := range sums {
		h.Write(sums[i][:])
	}
	l.encoded, l.last, l.elems, l.sums = true, s, elems, sums
	h.Sum(l.sum[:0])
	return nil
}

// unchanged reports whether s is Equal to last, element by element and
// in being nil or not.
func (l *list[T, P]) unchanged(s []T) bool {
	if len(s) != len(l.last) || (s == nil) != (l.last == nil) {
		return false
	}
	for i := range s {
		if !P(&s[i]).Equal(&l.last[i]) {
			return false
		}
	}
	return true
}

// json is the list's JSON in pieces, for the document to assemble.
func (l *list[T, P]) json() jsonList {
	return jsonList{null: l.last == nil, elems: l.elems}
}
