package architecture

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The map in docs/architecture.md is the code's: every package is in the
// rooms table, imports go downwards only, internal/ holds leaves, nothing
// of the product imports the test home, and what the page says a package
// needs is what it needs.
func TestArchitectureMap(t *testing.T) {
	root := filepath.Join("..", "..")
	page, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseMap(string(page))
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	// The sentences of this kind the page has today: rewording one so
	// that it no longer parses must not turn its check off.
	for _, p := range []string{"dataplane/compiled", "dataplane/configwatch"} {
		if _, ok := m.Needs[p]; !ok {
			t.Errorf("docs/architecture.md: no sentence \"`%s` needs only the standard library and ...\"", p)
		}
	}
	module, pkgs := goList(t, root)
	if len(pkgs) < 20 {
		t.Fatalf("go list reported %d packages of %s", len(pkgs), module)
	}
	for _, p := range Check(module, m, pkgs) {
		t.Errorf("docs/architecture.md: %s", p)
	}
}

// Every non-test Go file of a room says what it holds in a header (see
// CheckHeader), as the standard library's files do; a package's doc does
// not keep an index of its files, which drifted.
func TestEveryFileHasAHeader(t *testing.T) {
	root := filepath.Join("..", "..")
	page, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseMap(string(page))
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	files := 0
	for _, room := range m.Rows {
		dir := filepath.Join(root, filepath.FromSlash(room))
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			src, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			files++
			if p := CheckHeader(src); p != "" {
				t.Errorf("%s/%s: %s", room, name, p)
			}
			if strings.Contains(string(src), "\n// Files:") {
				t.Errorf("%s/%s: an index of the package's files (\"Files:\"): each file's header says what it holds", room, name)
			}
		}
	}
	if files < 100 {
		t.Errorf("found %d files in the rooms", files)
	}
}

// A room that is a doc alone (ctrl) names every package under it.
func TestRoomDocsNameTheirPackages(t *testing.T) {
	root := filepath.Join("..", "..")
	page, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseMap(string(page))
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	checked := 0
	for _, room := range m.Rows {
		dir := filepath.Join(root, filepath.FromSlash(room))
		code, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		code = slices.DeleteFunc(code, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
		if len(code) != 1 || filepath.Base(code[0]) != "doc.go" {
			continue
		}
		doc, err := os.ReadFile(code[0])
		if err != nil {
			t.Fatal(err)
		}
		words := strings.FieldsFunc(string(doc), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		for _, sub := range m.Rows {
			name, ok := strings.CutPrefix(sub, room+"/")
			if ok && !slices.Contains(words, name) {
				t.Errorf("%s/doc.go does not name %s", room, sub)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Error("no room is a doc alone: ctrl was")
	}
}

// goList returns the module's path and its packages, as go list -json ./...
// in dir reports them.
func goList(t *testing.T, dir string) (string, []Package) {
	t.Helper()
	run := func(args ...string) []byte {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
			}
			t.Fatalf("go %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	module := strings.TrimSpace(string(run("list", "-m")))
	dec := json.NewDecoder(bytes.NewReader(run("list", "-json", "./...")))
	var pkgs []Package
	for {
		var p Package
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list -json: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return module, pkgs
}
