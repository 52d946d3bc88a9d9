// This file implements the fuzz target and allocation bounds of choosing a TLSRoute by server name.

package dataplane

import (
	"strings"
	"testing"
)

// referenceSNI is the TLSRoute precedence spelt out the slow way, over
// routes' hostnames in config order ("" for a route without): the first
// route with the name exactly, else the first with the longest wildcard
// taking it (one label or more before its suffix), else the first without
// hostnames; -1 for none, and for no name.
func referenceSNI(hostnames [][]string, name string) int {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if name == "" {
		return -1
	}
	best, bestLen, every := -1, -1, -1
	for i, hs := range hostnames {
		for _, h := range hs {
			h = strings.ToLower(strings.TrimSuffix(h, "."))
			switch {
			case h == "":
				if every < 0 {
					every = i
				}
			case h == name:
				if bestLen != 1<<30 {
					best, bestLen = i, 1<<30
				}
			case strings.HasPrefix(h, "*.") && strings.HasSuffix(name, h[1:]) && len(name) > len(h)-1 && len(h) > bestLen:
				best, bestLen = i, len(h)
			}
		}
	}
	if best >= 0 {
		return best
	}
	return every
}

// FuzzSNIRoute files routes under hostnames the fuzzer writes (";"
// between routes, "," between a route's hostnames) and checks that the
// route a server name finds is the reference's, whatever the bytes.
func FuzzSNIRoute(f *testing.F) {
	for _, s := range [][2]string{
		{"*.example.com;a.example.com", "a.example.com"},
		{"*.example.com;*.b.example.com", "x.b.example.com"},
		{"*.example.com", "example.com"},
		{";a.example.com", "other"},
		{"a.example.com;a.example.com", "A.EXAMPLE.com."},
		{"*.a", ".a"},
		{"*..", "x.."},
		{"", ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, routes, name string) {
		var t0 sniTable
		var hostnames [][]string
		var filed []*streamRoute
		for i, hs := range strings.Split(routes, ";") {
			r := &streamRoute{name: string(rune('a' + i%26))}
			filed = append(filed, r)
			hostnames = append(hostnames, strings.Split(hs, ","))
			for _, h := range hostnames[i] {
				t0.add(h, r)
			}
		}
		want := referenceSNI(hostnames, name)
		got := t0.lookup(name)
		if (want < 0) != (got == nil) || want >= 0 && filed[want] != got {
			t.Fatalf("routes %q, server name %q: got %v, want route %d", routes, name, got, want)
		}
	})
}

// Choosing a route by server name, and a backend by weight, allocates
// nothing (a server name in lower case, as clients send it).
func TestStreamChoiceAllocs(t *testing.T) {
	var tbl sniTable
	r := &streamRoute{backends: []streamBackend{{weight: 1}, {weight: 3}}, total: 4}
	for _, h := range []string{"a.example.com", "*.example.com", "*.b.example.com", ""} {
		tbl.add(h, r)
	}
	if n := testing.AllocsPerRun(100, func() {
		tbl.lookup("x.y.b.example.com")
		tbl.lookup("a.example.com")
		r.pick()
	}); n != 0 {
		t.Errorf("%v allocations; want none", n)
	}
}
