// This file implements the tests of file events on Linux.

package standalone

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// noPoll is a Poll that never comes in a test: what is seen is seen by
// events.
const noPoll = time.Hour

// Every way a file changes is seen by events, polling aside: written in
// place, replaced by a rename, added and removed, in a new
// subdirectory too.
func TestServeSeesFileEvents(t *testing.T) {
	s := serveDir(t, watchedDir(t), Options{Poll: noPoll})
	s.waitServed("the first config", "a.example.com", "one")

	s.write("a.yaml", hostRoute("a", "a.example.com", "two"))
	s.waitServed("an edit in place", "a.example.com", "two")

	s.replace("a.yaml", hostRoute("a", "a.example.com", "one"))
	s.waitServed("a rename over the file", "a.example.com", "one")

	s.write("b.yaml", hostRoute("b", "b.example.com", "two"))
	s.waitServed("a file added", "b.example.com", "two")
	if err := os.Remove(filepath.Join(s.dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	s.waitServed("a file removed", "b.example.com", "")

	// A new directory is watched as soon as it is loaded: a file written
	// in it later is seen too.
	s.write("sub/c.yaml", hostRoute("c", "c.example.com", "one"))
	s.waitServed("a file in a new directory", "c.example.com", "one")
	s.write("sub/c.yaml", hostRoute("c", "c.example.com", "two"))
	s.waitServed("an edit in the new directory", "c.example.com", "two")
	if err := os.RemoveAll(filepath.Join(s.dir, "sub")); err != nil {
		t.Fatal(err)
	}
	s.waitServed("a directory removed", "c.example.com", "")
}

// A Kubernetes ConfigMap volume: each file is a link through "..data",
// a link to a directory of the files, which an update replaces by
// renaming a new link over "..data".
func TestServeSeesConfigMapUpdate(t *testing.T) {
	dir := watchedDir(t)
	gen := 0
	// publish writes a generation of the files and points ..data at it.
	publish := func(files map[string]string) {
		t.Helper()
		gen++
		g := fmt.Sprintf("..2026_11_29_%02d", gen)
		if err := os.Mkdir(filepath.Join(dir, g), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, g, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(g, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	publish(map[string]string{"routes.yaml": hostRoute("cm", "cm.example.com", "one")})
	if err := os.Symlink(filepath.Join("..data", "routes.yaml"), filepath.Join(dir, "routes.yaml")); err != nil {
		t.Fatal(err)
	}
	s := serveDir(t, dir, Options{Poll: noPoll})
	s.waitServed("the ConfigMap's route", "cm.example.com", "one")
	publish(map[string]string{"routes.yaml": hostRoute("cm", "cm.example.com", "two")})
	s.waitServed("the ConfigMap updated", "cm.example.com", "two")
	// The old generation goes, as kubelet removes it.
	if err := os.RemoveAll(filepath.Join(dir, "..2026_11_29_01")); err != nil {
		t.Fatal(err)
	}
	publish(map[string]string{"routes.yaml": hostRoute("cm", "cm.example.com", "one")})
	s.waitServed("the ConfigMap updated again", "cm.example.com", "one")
}

// A burst of writes is one reload, or a few: while a reload runs, the
// events of any number of writes wait as one.
func TestServeCoalescesBursts(t *testing.T) {
	s := serveDir(t, watchedDir(t), Options{Poll: noPoll})
	s.waitServed("the first config", "a.example.com", "one")

	// Hold the next reload in its Loaded call, and write meanwhile.
	gate, entered := make(chan struct{}), make(chan struct{})
	s.mu.Lock()
	s.gate, s.entered = gate, entered
	s.mu.Unlock()
	s.write("b.yaml", hostRoute("b", "b.example.com", "one"))
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no reload 30 s after a write")
	}
	before, _ := s.counts()
	const writes = 50
	for i := range writes {
		backend := []string{"one", "two"}[i%2]
		s.write("b.yaml", hostRoute("b", "b.example.com", backend)+fmt.Sprintf("# write %d\n", i))
	}
	close(gate)
	s.waitServed("the last write", "b.example.com", "two")
	after, _ := s.counts()
	// One reload for the burst, give or take events read late; never
	// one a write.
	if n := after - before; n > writes/5 {
		t.Errorf("%d writes made %d reloads", writes, n)
	}
}
