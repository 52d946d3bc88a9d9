package architecture

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
	// The one sentence of this kind the page has today: rewording it so
	// that it no longer parses must not turn its check off.
	if _, ok := m.Needs["dataplane/compiled"]; !ok {
		t.Error("docs/architecture.md: no sentence \"`dataplane/compiled` needs only the standard library and ...\"")
	}
	module, pkgs := goList(t, root)
	if len(pkgs) < 20 {
		t.Fatalf("go list reported %d packages of %s", len(pkgs), module)
	}
	for _, p := range Check(module, m, pkgs) {
		t.Errorf("docs/architecture.md: %s", p)
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
