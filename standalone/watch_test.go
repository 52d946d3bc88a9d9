package standalone

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// pollFiles sees every edit a user can make, including those that keep a
// file's size and modification time (an edit within one timestamp tick),
// and does not report a save that changed nothing but the time's tick.
func TestPollFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	// All writes get the same modification time, as on a coarse clock.
	tick := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	write := func(path, content string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	var stamp filesStamp
	poll := func(now time.Time) bool {
		t.Helper()
		next, changed, err := pollFiles([]string{dir}, stamp, now)
		if err != nil {
			t.Fatal(err)
		}
		stamp = next
		return changed
	}
	write(a, "backend: two", tick)
	write(b, "b", tick)
	now := tick.Add(time.Second) // within the racy window

	if poll(now) {
		t.Error("the first poll reports a change")
	}
	if poll(now) {
		t.Error("nothing written, a change reported")
	}
	write(a, "backend: two", tick)
	if poll(now) {
		t.Error("the same bytes saved in the same tick: a change reported")
	}
	write(a, "backend: one", tick)
	if !poll(now) {
		t.Error("a same-size edit in the same tick is missed")
	}

	// The file leaves the racy window between two polls, and an edit in
	// its tick was made before the later one: still seen, since it was
	// hashed last time.
	write(a, "backend: six", tick)
	if !poll(tick.Add(racyWindow + time.Second)) {
		t.Error("a same-size edit in the tick, seen after the window, is missed")
	}
	if st := stamp[a]; st.hashed {
		t.Error("a file older than the racy window is still hashed")
	}
	if poll(tick.Add(racyWindow + 2*time.Second)) {
		t.Error("an old file, untouched: a change reported")
	}

	// A racy file left untouched while it ages out is not a change.
	write(b, "b", tick.Add(racyWindow))
	if !poll(tick.Add(racyWindow + 2*time.Second)) {
		t.Error("a new time: missed")
	}
	if poll(tick.Add(2*racyWindow + time.Second)) {
		t.Error("a file aged out of the racy window, untouched: a change reported")
	}

	later := tick.Add(10 * time.Second)
	now = later
	data, link := t.TempDir(), filepath.Join(dir, "link.yaml")
	for _, c := range []struct {
		what string
		edit func()
	}{
		{"a new time, the same bytes", func() { write(a, "backend: six", later) }},
		{"a new size", func() { write(a, "backend: seven", later) }},
		{"a file added", func() { write(filepath.Join(dir, "c.yaml"), "c", later) }},
		{"a file removed", func() {
			if err := os.Remove(b); err != nil {
				t.Fatal(err)
			}
		}},
		{"a symlink to a file added", func() {
			write(filepath.Join(data, "x.yaml"), "x: 1", later)
			if err := os.Symlink(filepath.Join(data, "x.yaml"), link); err != nil {
				t.Fatal(err)
			}
		}},
		{"the symlink pointed at a new file, as a ConfigMap mount is updated", func() {
			write(filepath.Join(data, "y.yaml"), "x: 2", later.Add(time.Second))
			if err := os.Remove(link); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(data, "y.yaml"), link); err != nil {
				t.Fatal(err)
			}
		}},
		{"a file in a new directory", func() {
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			write(filepath.Join(dir, "sub", "d.yaml"), "d", later)
		}},
	} {
		c.edit()
		if !poll(now) {
			t.Errorf("%s: missed", c.what)
		}
		if poll(now) {
			t.Errorf("%s: reported twice", c.what)
		}
	}
	// A file a load does not read is not a change.
	write(filepath.Join(dir, "notes.txt"), "n", later)
	if poll(now) {
		t.Error("a file that is not a manifest: a change reported")
	}

	if _, _, err := pollFiles([]string{filepath.Join(dir, "missing")}, stamp, now); err == nil {
		t.Error("a missing path: no error")
	}
}

// A burst of events is waited out; one that never ends is cut at the
// cap; a context ended ends the wait.
func TestDebounce(t *testing.T) {
	c := make(chan struct{}, 1)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case c <- struct{}{}:
			}
		}
	}()
	// Never quiet for an hour, but the cap is a few milliseconds.
	if !debounce(context.Background(), c, time.Hour, 5*time.Millisecond) {
		t.Error("a steady stream: the wait did not end at the cap")
	}
	close(stop)
	<-stopped
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if debounce(ctx, c, time.Hour, time.Hour) {
		t.Error("the context ended, and the wait reports quiet")
	}
}
