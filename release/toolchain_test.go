package main

import (
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
