package configserver

import (
	"crypto/sha256"
	"encoding/json"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// list is one slice of a config (listeners, routes or clusters) as JSON,
// element by element, remembered from the last Publish.
//
// Encoding 5,000 routes takes tens of milliseconds; the controller
// publishes after every translation, and most change one cluster's
// endpoints. So an element is encoded (and hashed) again only when it is
// not the same as the element at its position last time, where "the
// same" is decided by identity (same backing arrays), which the
// read-only rule for translate's outputs makes as good as equality. The
// hash of the list is a hash of its elements' hashes, so an unchanged
// element costs a comparison and 32 bytes of hashing.
type list[T any] struct {
	// same reports whether two elements are the same definition.
	same func(a, b *T) bool

	last  []T
	elems [][]byte            // JSON of last[i]
	sums  [][sha256.Size]byte // SHA-256 of elems[i]
	sum   [sha256.Size]byte
}

func (l *list[T]) update(s []T) error {
	if len(s) > 0 && len(s) == len(l.last) && &s[0] == &l.last[0] {
		return nil // the very slice of last time
	}
	elems := make([][]byte, len(s))
	sums := make([][sha256.Size]byte, len(s))
	for i := range s {
		if i < len(l.last) && l.same(&s[i], &l.last[i]) {
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
	l.last, l.elems, l.sums = s, elems, sums
	h.Sum(l.sum[:0])
	return nil
}

// json is the list's JSON in pieces, for the document to assemble.
func (l *list[T]) json() jsonList {
	return jsonList{null: l.last == nil, elems: l.elems}
}

// The element comparisons. Each names every field of its type;
// TestSameCoversEveryField fails when a field is added, so that it is
// added here too.

func sameListener(a, b *proxycfg.Listener) bool {
	return a.Name == b.Name && a.Hostname == b.Hostname && a.Port == b.Port && a.Protocol == b.Protocol &&
		a.Address == b.Address && sameArray(a.Certificates, b.Certificates) && a.ClientValidation.Equal(b.ClientValidation)
}

func sameRoute(a, b *proxycfg.Route) bool {
	return a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name && a.Created.Equal(b.Created) &&
		a.Created.Location() == b.Created.Location() &&
		sameArray(a.Listeners, b.Listeners) && sameArray(a.Hostnames, b.Hostnames) && sameArray(a.Rules, b.Rules)
}

func sameCluster(a, b *proxycfg.Cluster) bool {
	return a.Name == b.Name && a.Protocol == b.Protocol && a.TLS == b.TLS && sameArray(a.Endpoints, b.Endpoints)
}

// sameArray reports whether a and b are the same slice of the same
// array. Empty slices have no array; they are the same when both are nil
// or both are not, which is what JSON tells apart (null or []).
func sameArray[T any](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return (a == nil) == (b == nil)
	}
	return &a[0] == &b[0]
}
