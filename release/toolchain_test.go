package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// The Go toolchain is part of a release's identity: the same commit built
// by another Go gives other binaries and another image digest. go.mod's
// toolchain line names it; a machine's own go command ignores that line
// (GOTOOLCHAIN=local), so every entry point that runs go exports
// GOTOOLCHAIN from it. This test keeps them in step.

// toolchain is go.mod's toolchain line.
func toolchain(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^toolchain (go\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod has no toolchain line")
	}
	return string(m[1])
}

func TestToolchainIsGoMods(t *testing.T) {
	if want := toolchain(t); runtime.Version() != want {
		t.Errorf("tests run on %s, go.mod's toolchain is %s: run them through make, or export GOTOOLCHAIN=%s", runtime.Version(), want, want)
	}
}

// Every script that runs go takes GOTOOLCHAIN from go.mod, as the
// Makefile, .ci/run and the Dockerfile do.
func TestScriptsSetToolchain(t *testing.T) {
	fromGoMod := regexp.MustCompile(`GOTOOLCHAIN\s*:?=.*sed -n 's/\^toolchain //p' .*go\.mod`)
	runsGo := regexp.MustCompile(`(?m)^[^#\n]*\bgo (build|run|test|list|mod|env|install|vet|tool|generate)\b`)
	var scripts []string
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".sh") {
			scripts = append(scripts, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	scripts = append(scripts, "../Makefile", "../.ci/run", "../Dockerfile")
	checked := 0
	for _, path := range scripts {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !runsGo.Match(b) && !strings.HasSuffix(path, ".ci/run") {
			continue
		}
		checked++
		if !fromGoMod.Match(b) {
			t.Errorf("%s runs go but does not set GOTOOLCHAIN from go.mod's toolchain line", path)
		}
	}
	if checked < 8 {
		t.Errorf("checked %d files that run go; the walk is missing some", checked)
	}
}

// The Makefile's own reading of go.mod gives the toolchain.
func TestMakefileToolchain(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	out, err := exec.Command("make", "-s", "-C", "..", "--eval", "print-toolchain: ; @echo $(GOTOOLCHAIN)", "print-toolchain").CombinedOutput()
	if err != nil {
		t.Fatalf("make: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), toolchain(t); got != want {
		t.Errorf("the Makefile exports GOTOOLCHAIN=%q, go.mod's toolchain is %q", got, want)
	}
}

// The repository's other modules (test/conformance, test/tools/...) run
// under the same GOTOOLCHAIN: one that names a toolchain names go.mod's, and
// none asks for a newer Go than that toolchain.
func TestModulesShareToolchain(t *testing.T) {
	want := toolchain(t)
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`)
	tcLine := regexp.MustCompile(`(?m)^toolchain (go\S+)$`)
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.mod" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if m := tcLine.FindSubmatch(b); m != nil && string(m[1]) != want {
			t.Errorf("%s names toolchain %s, go.mod %s", path, m[1], want)
		}
		if m := goLine.FindSubmatch(b); m != nil && goVersionLess(want, "go"+string(m[1])) {
			t.Errorf("%s asks for go %s, newer than go.mod's toolchain %s", path, m[1], want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// goVersionLess compares two Go versions of the form goX.Y[.Z].
func goVersionLess(a, b string) bool {
	parse := func(v string) [3]int {
		var n [3]int
		for i, f := range strings.SplitN(strings.TrimPrefix(v, "go"), ".", 3) {
			fmt.Sscanf(f, "%d", &n[i])
		}
		return n
	}
	x, y := parse(a), parse(b)
	for i := range x {
		if x[i] != y[i] {
			return x[i] < y[i]
		}
	}
	return false
}
