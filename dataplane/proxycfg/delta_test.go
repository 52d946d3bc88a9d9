package proxycfg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// deltaOf is the delta from base to next as the config server makes it:
// both encoded by one Encoder, base first. It returns the delta's JSON
// and base with its version set.
func deltaOf(t testing.TB, base, next *Config) ([]byte, *Config, Encoded) {
	t.Helper()
	var e Encoder
	be, err := e.Encode(base)
	if err != nil {
		t.Fatal(err)
	}
	ne, err := e.Encode(next)
	if err != nil {
		t.Fatal(err)
	}
	b, err := AppendDelta(nil, be, ne, next)
	if err != nil {
		t.Fatal(err)
	}
	stamped := *base
	stamped.Version = be.Version
	return b, &stamped, ne
}

// checkDelta applies the delta from base to next and holds the result to
// next, and the delta's JSON to what json.Marshal writes for it.
func checkDelta(t testing.TB, base, next *Config) *Delta {
	t.Helper()
	raw, stamped, ne := deltaOf(t, base, next)
	d, err := DecodeDelta(raw)
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	if again, err := json.Marshal(d); err != nil || !bytes.Equal(again, raw) {
		t.Fatalf("AppendDelta wrote\n%s\njson.Marshal writes\n%s", raw, again)
	}
	got, err := d.Apply(stamped)
	if err != nil {
		t.Fatal(err)
	}
	want := *next
	want.Version = ne.Version
	if !got.Equal(&want) || got.Version != want.Version {
		t.Fatalf("the delta applied gives another config:\n%s", raw)
	}
	if (got.Routes == nil) != (next.Routes == nil) || (got.Clusters == nil) != (next.Clusters == nil) {
		t.Fatal("a nil list and an empty one are told apart")
	}
	return d
}

// adds counts the elements a list's runs bring.
func adds[T any](l ListDelta[T]) int {
	n := 0
	for _, op := range l.Ops {
		n += len(op.Add)
	}
	return n
}

// A delta makes the next config from the base, whatever changed, and
// carries only the elements the base lacks.
func TestDelta(t *testing.T) {
	base := scaleConfig(200)
	edited := func(edit func(c *Config)) *Config {
		c := *base
		c.Listeners, c.Routes, c.Clusters = slices.Clone(base.Listeners), slices.Clone(base.Routes), slices.Clone(base.Clusters)
		edit(&c)
		return &c
	}
	cases := []struct {
		name   string
		next   *Config
		routes int // route elements the delta brings
	}{
		{"unchanged", edited(func(c *Config) {}), 0},
		{"one route edited", edited(func(c *Config) {
			c.Routes[41].Rules = slices.Clone(c.Routes[41].Rules)
			c.Routes[41].Rules[0].Filters = []Filter{{ResponseHeaderModifier: &HeaderModifier{Set: []Header{{Name: "X-Op", Value: "1"}}}}}
		}), 1},
		{"a route added in the middle", edited(func(c *Config) {
			r := c.Routes[10]
			r.Name = "new"
			c.Routes = slices.Insert(c.Routes, 100, r)
		}), 1},
		{"routes deleted", edited(func(c *Config) { c.Routes = slices.Delete(c.Routes, 5, 50) }), 0},
		{"routes moved", edited(func(c *Config) {
			c.Routes = append(slices.Clone(c.Routes[150:]), c.Routes[:150]...)
		}), 0},
		{"an endpoint changed", edited(func(c *Config) {
			c.Clusters[7].Endpoints = []Endpoint{{Address: "10.9.9.9:80"}}
		}), 0},
		{"lists emptied", edited(func(c *Config) { c.Routes, c.Clusters = []Route{}, nil }), 0},
		{"keys and teams", edited(func(c *Config) {
			c.SessionKeys = [][]byte{[]byte("another key, 16+ bytes")}
			c.AccessTeams = []AccessTeam{{Domain: "t.cloudflareaccess.com", Keys: `{"keys":[]}`}}
		}), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := checkDelta(t, base, tc.next)
			if n := adds(d.Routes); n != tc.routes {
				t.Errorf("the delta brings %d routes, want %d", n, tc.routes)
			}
		})
	}
	// From nothing: every element is added.
	empty := &Config{Schema: SchemaVersion}
	if d := checkDelta(t, empty, base); adds(d.Routes) != len(base.Routes) {
		t.Errorf("from an empty config: %d routes added, want %d", adds(d.Routes), len(base.Routes))
	}
}

// One route changed at 5,000 routes is a delta of a few hundred bytes.
func TestDeltaSize(t *testing.T) {
	base := scaleConfig(5000)
	next := *base
	next.Routes = slices.Clone(base.Routes)
	next.Routes[2500].Hostnames = []string{"moved.example.com"}
	raw, _, _ := deltaOf(t, base, &next)
	if len(raw) > 2048 {
		t.Errorf("the delta of one route is %d bytes:\n%s", len(raw), raw)
	}
}

// A delta that does not fit its base, or is not one, is refused, and no
// delta makes a list longer than the bound.
func TestDeltaRefused(t *testing.T) {
	base := smallConfig("10.0.0.1:80")
	base.Version = "v1"
	for name, doc := range map[string]string{
		"another base":      `{"base":"v0","version":"v2","schema":"s","listeners":{},"routes":{},"clusters":{}}`,
		"keep outside":      `{"base":"v1","version":"v2","schema":"s","listeners":{},"routes":{"ops":[{"keep":[0,2]}]},"clusters":{}}`,
		"keep negative":     `{"base":"v1","version":"v2","schema":"s","listeners":{},"routes":{"ops":[{"keep":[-1,1]}]},"clusters":{}}`,
		"keep nothing":      `{"base":"v1","version":"v2","schema":"s","listeners":{},"routes":{"ops":[{"keep":[0,0]}]},"clusters":{}}`,
		"keep and add":      `{"base":"v1","version":"v2","schema":"s","listeners":{},"routes":{"ops":[{"keep":[0,1],"add":[{}]}]},"clusters":{}}`,
		"neither":           `{"base":"v1","version":"v2","schema":"s","listeners":{},"routes":{"ops":[{}]},"clusters":{}}`,
		"null with runs":    `{"base":"v1","version":"v2","schema":"s","listeners":{},"routes":{"null":true,"ops":[{"keep":[0,1]}]},"clusters":{}}`,
		"kept too often":    `{"base":"v1","version":"v2","schema":"s","listeners":{},"routes":{"ops":[` + strings.Repeat(`{"keep":[0,1]},`, maxDeltaList) + `{"keep":[0,1]}]},"clusters":{}}`,
		"an unknown field":  `{"base":"v1","version":"v2","schema":"s","listeners":{},"routes":{},"clusters":{},"more":1}`,
		"no version":        `{"base":"v1","schema":"s","listeners":{},"routes":{},"clusters":{}}`,
		"data after":        `{"base":"v1","version":"v2","schema":"s","listeners":{},"routes":{},"clusters":{}} {}`,
		"an element's type": `{"base":"v1","version":"v2","schema":"s","listeners":{},"routes":{"ops":[{"add":[{"rules":7}]}]},"clusters":{}}`,
	} {
		t.Run(name, func(t *testing.T) {
			d, err := DecodeDelta([]byte(doc))
			if err == nil {
				_, err = d.Apply(base)
			}
			if err == nil {
				t.Fatal("taken")
			}
		})
	}
}

// FuzzDelta feeds Apply deltas decoded from any bytes, on a fixed base:
// it never panics, and what it makes stays within the bound.
func FuzzDelta(f *testing.F) {
	base := scaleConfig(3)
	next := *base
	next.Routes = append(slices.Clone(base.Routes[1:]), base.Routes[0])
	next.Routes[0].Name = "edited"
	raw, stamped, _ := deltaOf(f, base, &next)
	f.Add(raw)
	f.Add([]byte(`{"base":"` + stamped.Version + `","version":"v","schema":"s","listeners":{"null":true},"routes":{"ops":[{"keep":[2,1]},{"keep":[0,3]}]},"clusters":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDelta(b)
		if err != nil {
			return
		}
		d.Base = stamped.Version
		got, err := d.Apply(stamped)
		if err != nil {
			return
		}
		if len(got.Listeners) > maxDeltaList || len(got.Routes) > maxDeltaList || len(got.Clusters) > maxDeltaList {
			t.Fatalf("lists of %d, %d, %d elements", len(got.Listeners), len(got.Routes), len(got.Clusters))
		}
	})
}

// FuzzDeltaRoundTrip edits a config as the fuzzer's bytes say (delete,
// insert, edit, duplicate, move routes and clusters) and checks that the
// delta from it to the edited one makes the edited one.
func FuzzDeltaRoundTrip(f *testing.F) {
	f.Add([]byte{0, 3, 1, 5, 2, 7, 3, 1, 4, 2})
	f.Add([]byte{4, 0, 4, 1, 4, 2, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			return
		}
		base := scaleConfig(12)
		next := *base
		next.Routes, next.Clusters = slices.Clone(base.Routes), slices.Clone(base.Clusters)
		for i := 0; i+1 < len(ops); i += 2 {
			op, at := ops[i]%6, int(ops[i+1])
			switch n := len(next.Routes); {
			case op == 0 && n > 0:
				next.Routes = slices.Delete(next.Routes, at%n, at%n+1)
			case op == 1:
				r := base.Routes[at%len(base.Routes)]
				r.Name = fmt.Sprint("inserted-", i)
				next.Routes = slices.Insert(next.Routes, at%(n+1), r)
			case op == 2 && n > 0:
				next.Routes[at%n].Hostnames = []string{fmt.Sprintf("edited-%d.example.com", i)}
			case op == 3 && n > 0:
				next.Routes = slices.Insert(next.Routes, at%(n+1), next.Routes[at%n])
			case op == 4 && len(next.Clusters) > 0:
				k := at % len(next.Clusters)
				next.Clusters = append(slices.Delete(next.Clusters, k, k+1), base.Clusters[k])
			case op == 5:
				next.Routes = nil
			}
		}
		checkDelta(t, base, &next)
	})
}

// A list a delta keeps whole is the base's own array, so that the proxy
// comparing the two configs sees one array and looks no further; a list
// with an edit is made anew, and appending to either leaves the other.
func TestDeltaSharesListsKeptWhole(t *testing.T) {
	base := scaleConfig(4)
	whole := [2]int{0, len(base.Clusters)}
	head := [2]int{0, len(base.Routes) - 1}
	d := &Delta{Base: base.Version, Version: "next", Schema: base.Schema,
		Listeners: ListDelta[Listener]{Ops: []ListOp[Listener]{{Keep: &[2]int{0, len(base.Listeners)}}}},
		Routes:    ListDelta[Route]{Ops: []ListOp[Route]{{Keep: &head}, {Add: []Route{{Kind: KindHTTP, Name: "new"}}}}},
		Clusters:  ListDelta[Cluster]{Ops: []ListOp[Cluster]{{Keep: &whole}}},
	}
	next, err := d.Apply(base)
	if err != nil {
		t.Fatal(err)
	}
	if &next.Clusters[0] != &base.Clusters[0] || len(next.Clusters) != len(base.Clusters) {
		t.Error("clusters kept whole were copied")
	}
	if &next.Routes[0] == &base.Routes[0] || next.Routes[len(next.Routes)-1].Name != "new" {
		t.Error("routes with an edit share the base's array")
	}
	n := len(base.Clusters)
	_ = append(next.Clusters, Cluster{Name: "appended"})
	if len(base.Clusters) != n || cap(next.Clusters) != n {
		t.Error("appending to a kept list may write into the base's")
	}
}
