package kubelet

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// An image mapped to an executable runs it, unless the container's
// command names another file of the image: one found beside the
// executable, the image's root, given the command's other arguments.
func TestImageExecutable(t *testing.T) {
	root := t.TempDir()
	for name, mode := range map[string]os.FileMode{"tunnelgate": 0o755, "tunnelgate-proxy": 0o755, "data": 0o644} {
		if err := os.WriteFile(filepath.Join(root, name), []byte("#!/bin/true\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	entrypoint := filepath.Join(root, "tunnelgate")
	for _, c := range []struct {
		command []string
		exe     string
		rest    []string
		fails   bool
	}{
		{command: nil, exe: entrypoint},
		{command: []string{"/tunnelgate-proxy"}, exe: filepath.Join(root, "tunnelgate-proxy")},
		{command: []string{"/tunnelgate", "proxy"}, exe: entrypoint, rest: []string{"proxy"}},
		{command: []string{"tunnelgate-proxy"}, fails: true}, // not absolute
		{command: []string{"/missing"}, fails: true},
		{command: []string{"/data"}, fails: true}, // not executable
		{command: []string{"/"}, fails: true},     // a directory
	} {
		exe, rest, err := imageExecutable(entrypoint, corev1.Container{Command: c.command, Args: []string{"-x"}})
		if c.fails {
			if err == nil {
				t.Errorf("command %q: runs %s, want an error", c.command, exe)
			}
			continue
		}
		if err != nil || exe != c.exe || !slices.Equal(rest, c.rest) {
			t.Errorf("command %q: %s %q, %v; want %s %q", c.command, exe, rest, err, c.exe, c.rest)
		}
	}
}
