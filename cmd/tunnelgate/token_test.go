package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The config token file is read again when it is rotated, even by a token
// of the same length written within the same timestamp tick; an
// unreadable or empty file keeps the last good token.
func TestFileTokenRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	write := func(content string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	tok := &fileToken{path: path, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	expect := func(what, want string) {
		t.Helper()
		if got := tok.get(); got != want {
			t.Errorf("%s: token %q, want %q", what, got, want)
		}
	}
	tick := time.Now().Truncate(time.Second)
	write("first\n", tick)
	expect("first read", "first")
	write("secnd\n", tick)
	expect("a same-length token in the same tick", "secnd")
	write("third\n", tick.Add(-time.Hour))
	expect("an older time", "third")
	write("fouth\n", tick.Add(-time.Hour))
	expect("an old time kept: not read again, as a real write moves the time", "third")
	write("fifth\n", tick.Add(time.Second))
	expect("a new time", "fifth")
	write("\n", tick.Add(2*time.Second))
	expect("an empty file", "fifth")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	expect("a removed file", "fifth")
}
