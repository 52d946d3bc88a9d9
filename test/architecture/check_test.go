package architecture

import (
	"slices"
	"strings"
	"testing"
)

const fakePage = "# A house\n\n## The rooms\n\nImports go downwards.\n\n" +
	"| package | its one job |\n| --- | --- |\n" +
	"| `cmd/app` | the binary |\n" +
	"| `core` | the core |\n" +
	"| `wire` | the wire types |\n" +
	"| `internal/leaf` | a utility |\n" +
	"\nAfter the table, `core` needs only the standard library and\n`wire` and `internal/leaf`, and the module `example.org/x.v1`. Then\nmore.\n\n" +
	"| `notaroom` | a later table is not the rooms table |\n\n## Next\n"

func fakeGraph() []Package {
	const m = "example.com/house/"
	return []Package{
		{ImportPath: m + "cmd/app", GoFiles: []string{"main.go"}, Imports: []string{m + "core", "fmt"}},
		{ImportPath: m + "core", GoFiles: []string{"core.go"}, Imports: []string{m + "wire", m + "internal/leaf"}, Deps: []string{"fmt", "vendor/golang.org/x/net/idna", m + "internal/leaf", m + "wire", "example.org/x.v1/sub"}},
		{ImportPath: m + "wire", GoFiles: []string{"wire.go"}},
		{ImportPath: m + "internal/leaf", GoFiles: []string{"leaf.go"}},
		{ImportPath: m + "test/fake", GoFiles: []string{"fake.go"}, Imports: []string{m + "core"}},
		{ImportPath: m + "fuzz"}, // test files alone
	}
}

func TestParseMap(t *testing.T) {
	m, err := ParseMap(fakePage)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cmd/app", "core", "wire", "internal/leaf"}; !slices.Equal(m.Rows, want) {
		t.Errorf("rows %q, want %q", m.Rows, want)
	}
	if want := []string{"wire", "internal/leaf", "example.org/x.v1"}; len(m.Needs) != 1 || !slices.Equal(m.Needs["core"], want) {
		t.Errorf("needs %q, want core: %q", m.Needs, want)
	}
	if _, err := ParseMap("# no rooms\n"); err == nil {
		t.Error("a page without the rooms table parsed")
	}
}

func TestCheckPassesTheFakeHouse(t *testing.T) {
	m, err := ParseMap(fakePage)
	if err != nil {
		t.Fatal(err)
	}
	if p := Check("example.com/house", m, fakeGraph()); len(p) > 0 {
		t.Errorf("the fake house, as drawn, fails:\n%s", strings.Join(p, "\n"))
	}
}

// Each way the map can drift from the code fails the check.
func TestCheckFails(t *testing.T) {
	const m = "example.com/house/"
	for _, c := range []struct {
		name string
		edit func(*Map, *[]Package)
		want string
	}{
		{"upward import", func(_ *Map, g *[]Package) {
			(*g)[2].Imports = append((*g)[2].Imports, m+"core")
		}, "wire imports core, which the rooms table lists above it"},
		{"package missing from the table", func(_ *Map, g *[]Package) {
			*g = append(*g, Package{ImportPath: m + "extra", GoFiles: []string{"x.go"}})
		}, "extra is not in the rooms table"},
		{"row without a package", func(mp *Map, _ *[]Package) {
			mp.Rows = append(mp.Rows, "gone")
		}, "the rooms table lists gone, which is no package"},
		{"product imports the test home", func(_ *Map, g *[]Package) {
			(*g)[1].Imports = append((*g)[1].Imports, m+"test/fake")
		}, "core imports test/fake: nothing outside test/ imports the test home"},
		{"internal is not a leaf", func(_ *Map, g *[]Package) {
			(*g)[3].Imports = append((*g)[3].Imports, m+"wire")
		}, "internal/leaf imports wire: a package under internal/ is a leaf"},
		{"needs more than said", func(_ *Map, g *[]Package) {
			(*g)[1].Deps = append((*g)[1].Deps, m+"cmd/app")
		}, "go list -deps says cmd/app, internal/leaf, wire"},
		{"needs a module outside the standard library", func(_ *Map, g *[]Package) {
			(*g)[1].Deps = append((*g)[1].Deps, "golang.org/x/net/http2")
		}, "but it needs golang.org/x/net/http2"},
		{"does not need a module said", func(_ *Map, g *[]Package) {
			(*g)[1].Deps = slices.DeleteFunc((*g)[1].Deps, func(d string) bool { return strings.HasPrefix(d, "example.org/") })
		}, "the page says core needs example.org/x.v1, but it does not"},
		{"needs less than said", func(mp *Map, _ *[]Package) {
			mp.Needs["core"] = append(mp.Needs["core"], "cmd/app")
		}, "needs only the standard library and cmd/app, internal/leaf, wire of the module; go list -deps says internal/leaf, wire"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mp, err := ParseMap(fakePage)
			if err != nil {
				t.Fatal(err)
			}
			g := fakeGraph()
			c.edit(&mp, &g)
			problems := Check("example.com/house", mp, g)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, c.want) }) {
				t.Errorf("problems %q, want one saying %q", problems, c.want)
			}
		})
	}
}

func TestCheckHeader(t *testing.T) {
	for _, c := range []struct {
		src  string
		fine bool
	}{
		{"// This file implements the long poll.\n\npackage x\n", true},
		{"//go:build linux\n\n// This file reads sockets with raw system calls.\n\npackage x\n", true},
		{"// Package x does things.\npackage x\n", true}, // the package doc says it
		{"package x\n\n// This file is too late.\nfunc f() {}\n", false},
		{"package x\n", false},
		{"//go:build linux\n\npackage x\n", false},
		{"// The long poll.\n\npackage x\n", false},
	} {
		if got := CheckHeader([]byte(c.src)); (got == "") != c.fine {
			t.Errorf("%q: %q, want fine %v", c.src, got, c.fine)
		}
	}
}
