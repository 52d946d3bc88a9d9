package sessionkeys

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

var (
	keyA = []byte("key A 0123456789abcdef0123456789")
	keyB = []byte("key B 0123456789abcdef0123456789")
)

func writeKeys(t *testing.T, dir string, current, previous []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, CurrentFile), current, 0o600); err != nil {
		t.Fatal(err)
	}
	prev := filepath.Join(dir, PreviousFile)
	if previous == nil {
		os.Remove(prev)
		return
	}
	if err := os.WriteFile(prev, previous, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(dir); err == nil {
		t.Error("no current key: read")
	}
	writeKeys(t, dir, keyA, nil)
	if keys, err := Read(dir); err != nil || len(keys) != 1 || string(keys[0]) != string(keyA) {
		t.Errorf("current only: %q, %v", keys, err)
	}
	writeKeys(t, dir, keyB, keyA)
	if keys, err := Read(dir); err != nil || len(keys) != 2 || string(keys[0]) != string(keyB) || string(keys[1]) != string(keyA) {
		t.Errorf("current and previous: %q, %v; want B then A", keys, err)
	}
	for name, bad := range map[string][2][]byte{
		"short current":  {[]byte("short"), nil},
		"short previous": {keyA, []byte("0123456789abcde")},
		"huge current":   {[]byte(strings.Repeat("k", maxKeyLen+1)), nil},
	} {
		writeKeys(t, dir, bad[0], bad[1])
		if _, err := Read(dir); err == nil {
			t.Errorf("%s: read", name)
		}
	}
}

// recorder is a Next that keeps what it was given.
type recorder struct{ got []*proxycfg.Config }

func (r *recorder) Publish(cfg *proxycfg.Config) string {
	r.got = append(r.got, cfg)
	return "v"
}

func TestPublisherAddsKeysAndRepublishesOnRotation(t *testing.T) {
	dir := t.TempDir()
	writeKeys(t, dir, keyA, nil)
	next := &recorder{}
	p, err := New(next, dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if p.Reload() {
		t.Error("nothing published yet and keys unchanged: Reload says they changed")
	}
	cfg := &proxycfg.Config{Schema: proxycfg.SchemaVersion}
	p.Publish(cfg)
	if len(next.got) != 1 || len(next.got[0].SessionKeys) != 1 || string(next.got[0].SessionKeys[0]) != string(keyA) {
		t.Fatalf("published %+v; want the config with key A", next.got)
	}
	if cfg.SessionKeys != nil {
		t.Error("Publish wrote the keys into the caller's config")
	}

	// A rotation reaches the proxies without a new translation.
	writeKeys(t, dir, keyB, keyA)
	if !p.Reload() {
		t.Fatal("rotation not noticed")
	}
	if len(next.got) != 2 || len(next.got[1].SessionKeys) != 2 || string(next.got[1].SessionKeys[0]) != string(keyB) {
		t.Fatalf("after rotation published %d configs, last keys %q; want B then A", len(next.got), next.got[len(next.got)-1].SessionKeys)
	}
	if p.Reload() {
		t.Error("keys unchanged: republished")
	}

	// Keys that cannot be read leave the last good ones.
	writeKeys(t, dir, []byte("short"), nil)
	if p.Reload() || len(next.got) != 2 {
		t.Fatal("unreadable keys were published")
	}
	p.Publish(cfg)
	if got := next.got[len(next.got)-1].SessionKeys; len(got) != 2 || string(got[0]) != string(keyB) {
		t.Errorf("after a bad key file the config carries %q; want the last good B, A", got)
	}
}

// A Secret volume as a kubelet writes it: the keys link into ..data, which
// links to the directory of the current version. Read takes both keys from
// the version ..data names, whatever the links of the files say.
func TestReadThroughDataLink(t *testing.T) {
	dir := t.TempDir()
	v1, v2 := filepath.Join(dir, "..v1"), filepath.Join(dir, "..v2")
	for _, v := range []string{v1, v2} {
		if err := os.Mkdir(v, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeKeys(t, v1, keyA, nil)
	writeKeys(t, v2, keyB, keyA)
	// A view mid-update: current still resolves to the old version, while
	// ..data already names the new one (which alone has previous).
	if err := os.Symlink(filepath.Join("..v1", CurrentFile), filepath.Join(dir, CurrentFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..v2", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	keys, err := Read(dir)
	if err != nil || len(keys) != 2 || string(keys[0]) != string(keyB) || string(keys[1]) != string(keyA) {
		t.Errorf("Read = %q, %v; want B then A from ..data's version", keys, err)
	}
}
