// This file lists the rules a request for a host could reach, whatever its path.

package matcher

import "iter"

// Serving yields the reference of every rule a request for host could
// match, whatever its path, method, headers and query: the rules of the
// most specific host entry serving host, then those of each less
// specific entry it falls back to (the longer wildcards first, the rules
// without hostnames last), as Match searches them, each entry's in
// precedence order. A rule filed under several of those hostnames is
// yielded for each. host is read as Request.Host is (port, one trailing
// dot and ASCII case ignored).
//
// It walks those rules, not Match's few cache lines: it is for rare
// questions about a host (a load balancer monitor's health request), not
// for routing.
func (t *Table[T]) Serving(host string) iter.Seq[T] {
	return func(yield func(T) bool) {
		if t == nil || t.src == nil {
			return
		}
		s := t.src
		var buf [maxHostLen]byte
		key := string(hostKey(host, &buf)) // "" for a host too long to be a DNS name
		var entries []*hostRules[T]
		if key != "" {
			if h, ok := s.exact.get(key); ok {
				entries = append(entries, h)
			}
			if s.wild.len() > 0 {
				for i := wildDot(key, -1); i >= 0; i = wildDot(key, i) {
					if h, ok := s.wild.get(key[i+1:]); ok {
						entries = append(entries, h)
					}
				}
			}
		}
		if s.catchAll != nil {
			entries = append(entries, s.catchAll)
		}
		for _, h := range entries {
			for _, f := range h.rules {
				if !yield(f.p.cand.ref) {
					return
				}
			}
		}
	}
}
