// This file implements the Encoder: versions, hashes and JSON.

package proxycfg

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"slices"
)

// A config's version, and the two hashes it is made of, are defined here
// and computed nowhere else: the config server publishes them, standalone
// mode stamps them, and a proxy compares them, so two configs of the same
// content have the same version wherever they were made, and a proxy's
// cache and the controller agree on what "the same" is.
//
//   - The routes hash covers everything Proxy.Apply compiles that a
//     cluster-only change (applied without compiling) cannot change: the schema,
//     listeners, routes, session keys, and the set of cluster names
//     (routes resolve to one slot per name, and a cluster update only
//     replaces what is in a slot).
//   - The clusters hash covers the clusters' definitions, in order.
//   - The version is a hash of the two.
//
// Config.Version itself is not content: it is what is being computed, and
// the version of a config does not depend on it.
//
// Each is the first hashLen bytes of a SHA-256, in hex, over a label and
// length-framed fields (digest). A list (listeners, routes, clusters)
// enters as the SHA-256 of its elements' SHA-256s, each over the
// element's JSON as json.Marshal writes it, after a byte telling a nil
// list from an empty one; the cluster names as the SHA-256 of the sorted
// names, each after its length. Changing any of this changes every
// version: proxies asking with the version they have (from their cache
// after a restart too) are then sent their config again, and load it
// whole. The labels carry "v1" so that a change of scheme is a change of
// label.

// Encoder computes configs' versions and hashes, and their JSON in pieces,
// remembering the last config it encoded so that the next one costs only
// what changed.
//
// Encoding 5,000 routes takes tens of milliseconds, and the controller
// publishes after every translation, most of which change one cluster's
// endpoints. So an element (a listener, route or cluster) is encoded and
// hashed again only when it is not Equal to the element of its identity
// last time (the package doc's contract): the one at its position, or,
// when a route or cluster added or removed before it moved it, the one
// of its ID. Equal compares content, so what is reused never depends on
// how the config was built; that translate's outputs share what did not
// change only makes the comparisons quick (values in one place are equal
// without a look). The hash of a list is a hash of its elements' hashes,
// so an unchanged element costs a comparison and 32 bytes of hashing, and
// an unchanged list a pass of comparisons.
//
// The zero Encoder is ready to use. An Encoder is not safe for concurrent
// use.
type Encoder struct {
	listeners list[Listener, string, *Listener]
	routes    list[Route, RouteID, *Route]
	clusters  list[Cluster, string, *Cluster]
	names     clusterNames
}

// Encoded is a config as an Encoder encoded it.
type Encoded struct {
	// Version is the config's version: what Config.Version should say.
	Version string
	// RoutesHash and ClustersHash are the hashes Version is made of. They
	// say at a glance what changed between two versions (the config
	// server logs and sends them with each): configs with the same
	// RoutesHash differ at most in their clusters' definitions and order.
	RoutesHash, ClustersHash string
	// The lists' JSON, element by element, as json.Marshal writes the
	// config's fields of the same name.
	Listeners, Routes, Clusters JSONList
}

// JSONList is a JSON array as its elements' JSON. The elements are the
// Encoder's own, shared with later Encodes that find them unchanged:
// nothing may write to them.
type JSONList struct {
	Null  bool     // the slice was nil: JSON null
	Elems [][]byte // each element's JSON
	Sums  []Stamp  // each element's stamp: the SHA-256 of its JSON
}

// Len is the length of the array's JSON.
func (l JSONList) Len() int {
	if l.Null {
		return len("null")
	}
	n := 2 + max(len(l.Elems)-1, 0) // brackets and commas
	for _, e := range l.Elems {
		n += len(e)
	}
	return n
}

// AppendTo appends the array's JSON to b.
func (l JSONList) AppendTo(b []byte) []byte {
	if l.Null {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, e := range l.Elems {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	return append(b, ']')
}

// Encode computes cfg's version and hashes and encodes its lists,
// reusing the JSON and hash of every element Equal to the one of its
// identity in the last config encoded. cfg.Version is ignored, and cfg is
// not modified.
//
// Encode keeps cfg's Listeners, Routes and Clusters to compare the next
// config with, so neither they nor anything they point to may be modified
// afterwards: a kept element changed in place would be taken for
// unchanged, and its old JSON and hash reused. translate's outputs are
// never modified.
//
// Encode fails only where json.Marshal does (a time outside years
// 0–9999); the Encoder is then still usable.
func (e *Encoder) Encode(cfg *Config) (Encoded, error) {
	if err := e.listeners.update(cfg.Listeners); err != nil {
		return Encoded{}, err
	}
	if err := e.routes.update(cfg.Routes); err != nil {
		return Encoded{}, err
	}
	if err := e.clusters.update(cfg.Clusters); err != nil {
		return Encoded{}, err
	}
	e.names.update(cfg.Clusters)
	routing := [][]byte{[]byte(cfg.Schema), e.listeners.sum[:], e.routes.sum[:], framed(cfg.SessionKeys), e.names.sum[:]}
	if len(cfg.AccessTeams) > 0 { // a field only when set: the versions of configs without one stay as they were
		routing = append(routing, framedAccessTeams(cfg.AccessTeams))
	}
	rh := digest("tunnelgate routes v1", routing...)
	ch := digest("tunnelgate clusters v1", e.clusters.sum[:])
	return Encoded{
		Version:    digest("tunnelgate version v1", []byte(rh), []byte(ch)),
		RoutesHash: rh, ClustersHash: ch,
		Listeners: e.listeners.json(), Routes: e.routes.json(), Clusters: e.clusters.json(),
	}, nil
}

// ContentVersion is cfg's version, for a config encoded once (a file): a
// fresh Encoder's. Whoever computes versions of one config after another
// keeps an Encoder instead, which encodes only what changed.
func ContentVersion(cfg *Config) (string, error) {
	var e Encoder
	enc, err := e.Encode(cfg)
	return enc.Version, err
}

// list is one of a config's lists (listeners, routes or clusters) as
// JSON, element by element, remembered from the last Encode.
type list[T any, K comparable, P element[T, K]] struct {
	encoded bool // update has run: the fields below describe last
	// last is Equal to what elems and sums were made from. It is the
	// caller's, which Encode's callers do not modify.
	last  []T
	elems [][]byte // JSON of last[i]
	sums  []Stamp  // SHA-256 of elems[i]
	sum   [sha256.Size]byte
}

// element is a config type that compares itself with another of its
// kind and has an identity: *Route and the like.
type element[T any, K comparable] interface {
	*T
	Equal(*T) bool
	ID() K
}

func (l *list[T, K, P]) update(s []T) error {
	if l.encoded && l.unchanged(s) {
		l.last = s // the same content; compare the next list with the newest
		return nil
	}
	elems := make([][]byte, len(s))
	sums := make([]Stamp, len(s))
	var at map[K]int // last's indexes by identity, made at the first element found moved
	for i := range s {
		e := P(&s[i])
		if k, ok := l.previous(e, i, &at); ok {
			elems[i], sums[i] = l.elems[k], l.sums[k]
			continue
		}
		b, err := json.Marshal(e)
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

// previous returns the index in last of the element Equal to e, which is
// at index i of the new list, if it is the one at i or the one of e's
// identity. An element at i of the same identity but not Equal is an
// edit in place: then nothing is looked up. *at indexes last by identity
// (the first of each), made on the first call that needs it.
func (l *list[T, K, P]) previous(e P, i int, at *map[K]int) (int, bool) {
	if i < len(l.last) {
		p := P(&l.last[i])
		if e.Equal(&l.last[i]) {
			return i, true
		}
		if e.ID() == p.ID() {
			return 0, false
		}
	}
	if *at == nil {
		*at = make(map[K]int, len(l.last))
		for j := len(l.last) - 1; j >= 0; j-- {
			(*at)[P(&l.last[j]).ID()] = j
		}
	}
	k, ok := (*at)[e.ID()]
	return k, ok && e.Equal(&l.last[k])
}

// unchanged reports whether s is Equal to last, element by element and
// in being nil or not.
func (l *list[T, K, P]) unchanged(s []T) bool {
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

// json is the list's JSON in pieces.
func (l *list[T, K, P]) json() JSONList {
	return JSONList{Null: l.last == nil, Elems: l.elems, Sums: l.sums}
}

// clusterNames is the hash of the set of cluster names, remembered with
// the names in config order: an endpoint change gives a new Clusters
// slice with the same names, which a pass of string comparisons finds
// (cheap: the strings are mostly the very same), so the names are
// sorted and hashed only when they change.
type clusterNames struct {
	names []string
	sum   [sha256.Size]byte
}

func (c *clusterNames) update(clusters []Cluster) {
	if c.names != nil && len(clusters) == len(c.names) {
		same := true
		for i := range clusters {
			if clusters[i].Name != c.names[i] {
				same = false
				break
			}
		}
		if same {
			return
		}
	}
	names := make([]string, len(clusters))
	for i := range clusters {
		names[i] = clusters[i].Name
	}
	// Sorted: the order of clusters means nothing to the router.
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	var buf []byte
	for _, n := range sorted {
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(n)))
		buf = append(buf, n...)
	}
	c.names, c.sum = names, sha256.Sum256(buf)
}

// hashLen is how many bytes of SHA-256 a hash keeps: 128 bits make a
// collision between two configs of one cluster out of the question, and
// 32 hex digits stay readable in logs and metric labels.
const hashLen = 16

// digest hashes its fields, each framed by its length so that no two
// different field lists hash alike, under a label that keeps hashes of
// different things apart.
func digest(label string, fields ...[]byte) string {
	h := sha256.New()
	frame(h, []byte(label))
	for _, f := range fields {
		frame(h, f)
	}
	return hex.EncodeToString(h.Sum(nil)[:hashLen])
}

// framed is the fields one after the other, each after its length, as
// frame writes them: one hash input that tells every list apart.
func framed(fields [][]byte) []byte {
	var out []byte
	for _, f := range fields {
		out = binary.BigEndian.AppendUint64(out, uint64(len(f)))
		out = append(out, f...)
	}
	return out
}

// framedAccessTeams is every team's domain and keys, framed.
func framedAccessTeams(teams []AccessTeam) []byte {
	fields := make([][]byte, 0, 2*len(teams))
	for _, t := range teams {
		fields = append(fields, []byte(t.Domain), []byte(t.Keys))
	}
	return framed(fields)
}

func frame(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}
