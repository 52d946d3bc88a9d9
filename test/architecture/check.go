// This file implements the checks: the rooms table and the needs
// sentences read from the page, and the rules held against the graph.

package architecture

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strings"
)

// Package is what the checks need of one package that `go list -json`
// reports. Paths are full import paths.
type Package struct {
	ImportPath string
	GoFiles    []string // non-test files; none for a package of tests alone
	Imports    []string // direct imports of the non-test files
	Deps       []string // every package the non-test files need, transitively
}

// Map is what docs/architecture.md says. Paths are relative to the
// module ("ctrl/translate").
type Map struct {
	// Rows are the rooms table's packages, from the top row down.
	Rows []string
	// Needs holds each "`P` needs only the standard library and ..."
	// sentence: P, and what the sentence names after those words in
	// backquotes: packages of the module (relative) and, for what P needs
	// from other modules, their module paths ("github.com/a/b").
	Needs map[string][]string
}

// Packages not in the rooms table: the test home (fakes, test helpers and
// the tests that run the product whole), and programs of their own that
// nothing of the product imports.
var (
	testHome   = "test"
	notInTable = []string{testHome, "bench", "examples"}
)

// under reports whether rel is dir or a package below it.
func under(rel, dir string) bool { return rel == dir || strings.HasPrefix(rel, dir+"/") }

var (
	roomRow  = regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|")
	needs    = regexp.MustCompile("`([^`]+)` needs only the standard library and ((?:[^.]|\\.\\S)*)\\.(?:\\s|$)")
	codeSpan = regexp.MustCompile("`([^`]+)`")
)

// ParseMap reads the rooms table (the first table after the heading
// "## The rooms") and the needs sentences of the whole page.
func ParseMap(page string) (Map, error) {
	m := Map{Needs: map[string][]string{}}
	sc := bufio.NewScanner(strings.NewReader(page))
	in, table := false, false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			if in && table {
				in = false
			}
			in = in || strings.TrimSpace(line) == "## The rooms"
			continue
		case !in:
			continue
		}
		if !strings.HasPrefix(line, "|") {
			if table {
				in = false // the first table ended
			}
			continue
		}
		table = true
		if sub := roomRow.FindStringSubmatch(line); sub != nil {
			if slices.Contains(m.Rows, sub[1]) {
				return m, fmt.Errorf("the rooms table lists %s twice", sub[1])
			}
			m.Rows = append(m.Rows, sub[1])
		}
	}
	if len(m.Rows) == 0 {
		return m, fmt.Errorf(`no rooms table: want a table after "## The rooms" whose rows start with a package in backquotes`)
	}
	flat := strings.Join(strings.Fields(page), " ")
	for _, sub := range needs.FindAllStringSubmatch(flat, -1) {
		var named []string
		for _, c := range codeSpan.FindAllStringSubmatch(sub[2], -1) {
			named = append(named, c[1])
		}
		m.Needs[sub[1]] = named
	}
	return m, nil
}

// Check holds m against the packages of module (its path) and returns
// what does not hold, one sentence each.
func Check(module string, m Map, pkgs []Package) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	rel := func(path string) (string, bool) {
		if path == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(path, module+"/")
		return r, ok
	}
	row := map[string]int{}
	for i, r := range m.Rows {
		row[r] = i
	}
	byRel := map[string]Package{}
	for _, p := range pkgs {
		if r, ok := rel(p.ImportPath); ok && len(p.GoFiles) > 0 {
			byRel[r] = p
		}
	}

	for _, r := range m.Rows {
		if _, ok := byRel[r]; !ok {
			bad("the rooms table lists %s, which is no package of the module (or one of test files alone)", r)
		}
	}
	for _, p := range pkgs {
		r, ok := rel(p.ImportPath)
		if !ok || len(p.GoFiles) == 0 {
			continue
		}
		i, listed := row[r]
		excluded := slices.ContainsFunc(notInTable, func(d string) bool { return under(r, d) })
		if !listed && !excluded {
			bad("%s is not in the rooms table", r)
		}
		for _, imp := range p.Imports {
			ir, ok := rel(imp)
			if !ok {
				continue
			}
			if under(ir, testHome) && !under(r, testHome) {
				bad("%s imports %s: nothing outside %s/ imports the test home", r, ir, testHome)
				continue
			}
			if under(r, "internal") {
				bad("%s imports %s: a package under internal/ is a leaf and imports nothing of the module", r, ir)
			}
			j, ilisted := row[ir]
			if listed && ilisted && j <= i {
				bad("%s imports %s, which the rooms table lists above it: imports go downwards only", r, ir)
			}
		}
	}

	for p, named := range m.Needs {
		pkg, ok := byRel[p]
		if !ok {
			bad("the page says what %s needs, but it is no package of the module", p)
			continue
		}
		var wantMod, otherMods []string
		for _, n := range named {
			if first, _, _ := strings.Cut(n, "/"); strings.Contains(first, ".") {
				otherMods = append(otherMods, n)
			} else {
				wantMod = append(wantMod, n)
			}
		}
		var mod []string
		usedOther := map[string]bool{}
		for _, d := range pkg.Deps {
			if dr, ok := rel(d); ok {
				mod = append(mod, dr)
				continue
			}
			if first, _, _ := strings.Cut(d, "/"); !strings.Contains(first, ".") {
				continue // the standard library
			}
			i := slices.IndexFunc(otherMods, func(o string) bool { return d == o || strings.HasPrefix(d, o+"/") })
			if i < 0 {
				bad("the page says %s needs only the standard library and %s, but it needs %s", p, strings.Join(named, ", "), d)
				continue
			}
			usedOther[otherMods[i]] = true
		}
		for _, o := range otherMods {
			if !usedOther[o] {
				bad("the page says %s needs %s, but it does not", p, o)
			}
		}
		slices.Sort(mod)
		slices.Sort(wantMod)
		if !slices.Equal(mod, wantMod) {
			bad("the page says %s needs only the standard library and %s of the module; go list -deps says %s", p, strings.Join(wantMod, ", "), strings.Join(mod, ", "))
		}
	}
	return problems
}

// CheckHeader holds one non-test Go file of a room to the header every
// such file starts with, in the standard library's style: a comment
// saying what the file holds ("This file implements ..."), above the
// package clause and apart from it by a blank line, so that it is not the
// package doc. A file with the package doc needs none: the doc says it.
// It returns "" when the file has its header, else what is wrong.
func CheckHeader(src []byte) string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		return err.Error()
	}
	if f.Doc != nil {
		return ""
	}
	for _, c := range f.Comments {
		if c.Pos() > f.Package {
			break
		}
		if strings.HasPrefix(c.Text(), "This file ") {
			return ""
		}
	}
	return `no header: start the file with a line comment "// This file implements ..." (or holds, defines ...), then a blank line, then the package clause`
}
