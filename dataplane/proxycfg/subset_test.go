// This file tests Rule.Clusters and Config.Split against every field.

package proxycfg

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Every field that names a cluster must be walked by Rule.Clusters, or a
// plane's config loses a cluster its rules send to. This finds each
// string field whose name ends in Cluster in the types reachable from
// Rule (as TestEqualComparesEveryField finds the fields Equal must
// compare), gives each a name of its own in a rule with every field set,
// and requires Clusters to yield every one of them and nothing else. A
// field that holds a cluster under another name breaks the rule config.go
// gives; the check on names below catches the common spellings.
func TestClustersYieldsEveryClusterField(t *testing.T) {
	rule := full(reflect.TypeFor[Rule]())
	var want []string
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			walk(path, v.Elem())
		case reflect.Slice:
			for i := range v.Len() {
				walk(path+"[0]", v.Index(i))
			}
		case reflect.Struct:
			for i := range v.NumField() {
				f := v.Type().Field(i)
				p := path + "." + f.Name
				switch {
				case strings.HasSuffix(f.Name, "Cluster") && f.Type.Kind() == reflect.String:
					v.Field(i).SetString(p)
					want = append(want, p)
				case isString(f.Type) && (strings.Contains(strings.ToLower(f.Name), "cluster") || strings.Contains(strings.ToLower(f.Name), "backend")):
					t.Errorf("%s looks like it names a cluster: call it …Cluster, so that Rule.Clusters must yield it", p)
				default:
					walk(p, v.Field(i))
				}
			}
		}
	}
	walk("Rule", rule)
	if len(want) < 3 {
		t.Fatalf("found only %v: the walk is broken", want)
	}
	r := rule.Addr().Interface().(*Rule)
	got := slices.Collect(r.Clusters)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Rule.Clusters yields\n\t%v\nthe rule names\n\t%v", got, want)
	}
	for n := 1; n <= len(want); n++ {
		seen := 0
		for range r.Clusters {
			if seen++; seen == n {
				break
			}
		}
		if seen != n {
			t.Errorf("told to stop after %d names, Clusters yielded %d", n, seen)
		}
	}
}

// isString says whether t holds names: a string or a list of them.
func isString(t reflect.Type) bool {
	return t.Kind() == reflect.String || t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String
}

// A Split into one part that serves every listener is the config itself
// but for what Split leaves to the publisher. A Config field added
// without Split carrying it (or saying here why not) fails.
func TestSplitCarriesEveryField(t *testing.T) {
	leftOut := map[string]string{
		"Version":     "computed by the publisher from the part's own content",
		"SessionKeys": "added by the publisher to every config",
	}
	c := full(reflect.TypeFor[Config]())
	want := deepCopy(c)
	for name := range leftOut {
		f := want.FieldByName(name)
		if !f.IsValid() {
			t.Fatalf("leftOut names %s, which Config has not", name)
		}
		f.SetZero()
	}
	cfg := c.Addr().Interface().(*Config)
	parts := cfg.Split(1, func(string) []int { return []int{0} })
	if len(parts) != 1 || !parts[0].Equal(want.Addr().Interface().(*Config)) {
		t.Errorf("Split(1, all) =\n\t%+v\nwant\n\t%+v", parts[0], want.Interface())
	}
}

func TestSplit(t *testing.T) {
	rule := func(cluster, mirror, team string) Rule {
		r := Rule{Backends: []BackendRef{{Cluster: cluster, Weight: 1}}}
		if mirror != "" {
			r.Filters = []Filter{{Type: FilterRequestMirror, RequestMirror: &Mirror{Cluster: mirror}}}
		}
		if team != "" {
			r.Access = &Access{Team: team}
		}
		return r
	}
	c := &Config{Schema: SchemaVersion, Version: "v", SessionKeys: [][]byte{[]byte("k")},
		Listeners: []Listener{{Name: "a"}, {Name: "b"}, {Name: "both"}},
		Routes: []Route{
			{Name: "ra", Listeners: []string{"a"}, Rules: []Rule{rule("c1", "m1", "")}},
			{Name: "rab", Listeners: []string{"a", "b"}, Rules: []Rule{rule("c2", "", "t1")}},
			{Name: "rboth", Listeners: []string{"both"}, Rules: []Rule{rule("c3", "", "")}},
		},
		Clusters:    []Cluster{{Name: "c3"}, {Name: "c2"}, {Name: "c1"}, {Name: "m1"}, {Name: "unused"}},
		AccessTeams: []AccessTeam{{Domain: "t0"}, {Domain: "t1"}},
	}
	in := map[string][]int{"a": {0}, "b": {1}, "both": {0, 1}}
	parts := c.Split(3, func(l string) []int { return in[l] })
	names := func(p *Config) (ls, rs, cs, ts string) {
		var l, r, cl, tm []string
		for _, x := range p.Listeners {
			l = append(l, x.Name)
		}
		for _, x := range p.Routes {
			r = append(r, x.Name+"@"+strings.Join(x.Listeners, "+"))
		}
		for _, x := range p.Clusters {
			cl = append(cl, x.Name)
		}
		for _, x := range p.AccessTeams {
			tm = append(tm, x.Domain)
		}
		return strings.Join(l, ","), strings.Join(r, ","), strings.Join(cl, ","), strings.Join(tm, ",")
	}
	for i, want := range [][4]string{
		{"a,both", "ra@a,rab@a,rboth@both", "c3,c2,c1,m1", "t1"},
		{"b,both", "rab@b,rboth@both", "c3,c2", "t1"},
		{"", "", "", ""},
	} {
		l, r, cl, tm := names(parts[i])
		if got := [4]string{l, r, cl, tm}; got != want {
			t.Errorf("part %d: %q, want %q", i, got, want)
		}
		if parts[i].Schema != SchemaVersion || parts[i].Version != "" || parts[i].SessionKeys != nil {
			t.Errorf("part %d: schema %q version %q session keys %q", i, parts[i].Schema, parts[i].Version, parts[i].SessionKeys)
		}
	}
	if p := parts[2]; p.Listeners == nil || p.Routes == nil || p.Clusters == nil || p.AccessTeams != nil {
		t.Errorf("an empty part writes lists as [] and no Access teams: %+v", p)
	}
	if &parts[0].Routes[2].Listeners[0] != &c.Routes[2].Listeners[0] {
		t.Error("a route whose listeners are all in a part is not carried whole")
	}
}
