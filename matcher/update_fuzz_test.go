package matcher

import (
	"errors"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"
)

// The fuzz target draws rules from a small universe, so that hostnames,
// paths and Keys collide as often as a fuzzer likes: wildcards nested in
// each other and over exact hosts, the catch-all, every path kind on
// overlapping values, repeated Keys and whole duplicates.
var (
	fuzzHosts = [][]string{nil, {"a.example.com"}, {"b.a.example.com"}, {"*.example.com"},
		{"*.a.example.com"}, {"*.com"}, {"example.com"}, {"a.example.com", "*.a.example.com"}}
	fuzzPaths = []Path{{PathPrefix, "/"}, {PathPrefix, "/a"}, {PathPrefix, "/a/"}, {PathExact, "/a"},
		{PathExact, "/a/b"}, {PathRegex, "/a/[0-9]+"}, {PathPrefix, "/a/b"}, {PathRegex, ".*"}}
	fuzzNames = []string{"r0", "r1", "r2", "r3"}
)

// fuzzReader hands out bytes, then zeros.
type fuzzReader []byte

func (b *fuzzReader) next() int {
	if len(*b) == 0 {
		return 0
	}
	c := (*b)[0]
	*b = (*b)[1:]
	return int(c)
}

// rule decodes one rule from two bytes; ref makes its Ref unique.
func (b *fuzzReader) rule(ref *int) Rule[int] {
	x, y := b.next(), b.next()
	r := Rule[int]{
		Hostnames: fuzzHosts[x&7],
		Path:      fuzzPaths[x>>3&7],
		Key: Key{Created: t0.Add(time.Duration(y>>6&1) * time.Hour), Namespace: "ns",
			Name: fuzzNames[y&3], Rule: y >> 2 & 1, Match: y >> 3 & 1},
		Ref: *ref,
	}
	*ref++
	if x&64 != 0 {
		r.Method = "GET"
	}
	if x&128 != 0 {
		r.Headers = []ValueMatch{{Name: "X", Value: "1"}}
	}
	if y&16 != 0 {
		r.Query = []ValueMatch{{Name: "q", Value: "1"}}
	}
	return r
}

// fuzzRequests is every combination of hosts, paths, methods, a header and
// a query the universe above distinguishes.
func fuzzRequests() []Request {
	var reqs []Request
	for _, host := range []string{"a.example.com", "b.a.example.com", "c.a.example.com", "x.example.com", "example.com", "foo.com", "other.org"} {
		for _, path := range []string{"/", "/a", "/a/", "/a/b", "/a/12", "/b"} {
			for _, method := range []string{"GET", "POST"} {
				for i := range 4 {
					q := Request{Host: host, Path: path, Method: method, Header: http.Header{}}
					if i&1 != 0 {
						q.Header.Set("X", "1")
					}
					if i&2 != 0 {
						q.RawQuery = "q=1"
					}
					reqs = append(reqs, q)
				}
			}
		}
	}
	return reqs
}

// FuzzUpdate runs a chain of Updates decoded from data, each removing
// Keys (held or not) and adding rules, and checks each against Build over
// the rule list the contract defines, and the table it started from
// against a snapshot: unchanged, whether the Update succeeded or not.
func FuzzUpdate(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{4, 0x01, 0x00, 0x0b, 0x01, 0x12, 0x02, 0x03, 0x03, 0x15, 0x00, 0x02, 0x04, 0x0c})
	f.Add([]byte{3, 0x03, 0x00, 0x01, 0x01, 0x04, 0x02, 0x25, 0x01, 0x00, 0x03, 0x02, 0x00, 0x05, 0x00, 0x31, 0x00})
	f.Add([]byte{6, 0x00, 0x00, 0x03, 0x41, 0x05, 0x02, 0x07, 0x83, 0x04, 0x10, 0x06, 0x03, 0x33, 0x11, 0x00, 0x01, 0x05, 0x22, 0x40, 0x05, 0x00, 0x06})
	f.Add([]byte{2, 0x07, 0x00, 0x07, 0x00, 0x22, 0x00, 0x01, 0x11, 0x00, 0x22, 0x00, 0x0f, 0x03, 0x00, 0x00, 0x00})
	reqs := fuzzRequests()
	f.Fuzz(func(t *testing.T, data []byte) { updateChain(t, data, reqs) })
}

// updateChain is FuzzUpdate's body.
func updateChain(t *testing.T, data []byte, reqs []Request) {
	{
		b := fuzzReader(data)
		ref := 0
		var m model
		for range b.next() & 15 {
			m.rules = append(m.rules, b.rule(&ref))
		}
		var err error
		if m.prepared, err = prepareAll(m.rules); err != nil {
			t.Fatal(err)
		}
		table, err := Build(m.prepared)
		if err != nil {
			t.Fatal(err)
		}
		for step := 0; len(b) > 0 && step < 16; step++ {
			op := b.next()
			var remove []Key
			var add []Rule[int]
			unknown := false
			for range op & 3 {
				var k Key
				if x := b.next(); x < 200 && len(m.rules) > 0 {
					k = m.rules[x%len(m.rules)].Key
				} else {
					k = b.rule(&ref).Key // held or not
				}
				unknown = unknown || !slices.ContainsFunc(m.rules, func(r Rule[int]) bool { return idOf(&r.Key) == idOf(&k) })
				remove = append(remove, k)
			}
			for range op >> 2 & 3 {
				add = append(add, b.rule(&ref))
			}
			if op&16 != 0 && len(add) > 0 {
				add = append(add, add[0]) // a whole duplicate
				add[len(add)-1].Ref = ref
				ref++
			}
			addPrepared, err := prepareAll(add)
			if err != nil {
				t.Fatal(err)
			}
			before := snap(table)
			got, err := table.Update(remove, addPrepared)
			if !reflect.DeepEqual(snap(table), before) {
				t.Fatalf("step %d: Update changed the table it started from", step)
			}
			if unknown {
				if !errors.Is(err, ErrUnknownKey) {
					t.Fatalf("step %d: removing a Key no rule has: %v", step, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			next := m.update(remove, add, addPrepared)
			want, err := Build(next.prepared)
			if err != nil {
				t.Fatal(err)
			}
			checkSame(t, "step", got, want, reqs)
			if t.Failed() {
				t.FailNow()
			}
			if op&32 == 0 { // else the next step forks from this table
				table, m = got, next
			}
		}
	}
}
