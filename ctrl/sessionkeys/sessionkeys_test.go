package sessionkeys

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
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

// The config server is what a Publisher hands on to.
var _ Next = (*configserver.Server)(nil)

// recorder is a Next that keeps what it was given.
type recorder struct {
	got    []*proxycfg.Config
	planes []map[string]configserver.Plane
}

func (r *recorder) Publish(cfg *proxycfg.Config) string {
	r.got = append(r.got, cfg)
	return "v"
}

func (r *recorder) PublishPlanes(planes map[string]configserver.Plane) {
	r.planes = append(r.planes, planes)
}

// newPublisher is a Publisher of dir's keys handing configs to a recorder.
func newPublisher(t *testing.T, dir string) (*Publisher, *recorder) {
	t.Helper()
	next := &recorder{}
	p, err := New(next, dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return p, next
}

func TestPublisherAddsKeysAndRepublishesOnRotation(t *testing.T) {
	dir := t.TempDir()
	writeKeys(t, dir, keyA, nil)
	p, next := newPublisher(t, dir)
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

// A plane's config carries the keys derived for it, not the directory's,
// and a rotation republishes the planes with the new derived keys.
func TestPublisherDerivesPlaneKeys(t *testing.T) {
	dir := t.TempDir()
	writeKeys(t, dir, keyA, nil)
	p, next := newPublisher(t, dir)
	cfgA, cfgB := &proxycfg.Config{Schema: proxycfg.SchemaVersion}, &proxycfg.Config{Schema: proxycfg.SchemaVersion}
	planes := map[string]configserver.Plane{
		"ns/a": {Token: "ta", Config: cfgA},
		"ns/b": {Token: "tb", Config: cfgB},
		"ns/c": {Token: "tc"}, // no config yet
	}
	p.PublishPlanes(planes)
	if len(next.planes) != 1 {
		t.Fatalf("handed on %d sets of planes, want 1", len(next.planes))
	}
	check := func(got map[string]configserver.Plane, keys [][]byte) {
		t.Helper()
		if len(got) != 3 {
			t.Fatalf("handed on %d planes, want 3", len(got))
		}
		for _, key := range []string{"ns/a", "ns/b"} {
			pl := got[key]
			if pl.Token != planes[key].Token {
				t.Errorf("%s: token changed", key)
			}
			if want := PlaneKeys(keys, key); !equalKeys(pl.Config.SessionKeys, want) {
				t.Errorf("%s: keys %q, want the ones derived for it", key, pl.Config.SessionKeys)
			}
			for _, k := range pl.Config.SessionKeys {
				for _, dk := range keys {
					if string(k) == string(dk) {
						t.Errorf("%s carries a key of the directory", key)
					}
				}
			}
		}
		if got["ns/c"].Config != nil || got["ns/c"].Token != "tc" {
			t.Errorf("a plane without a config: %+v", got["ns/c"])
		}
	}
	check(next.planes[0], [][]byte{keyA})
	if cfgA.SessionKeys != nil || cfgB.SessionKeys != nil || next.planes[0]["ns/a"].Config == cfgA {
		t.Error("PublishPlanes wrote the keys into the caller's configs")
	}

	writeKeys(t, dir, keyB, keyA)
	if !p.Reload() {
		t.Fatal("rotation not noticed")
	}
	if len(next.planes) != 2 {
		t.Fatalf("after rotation handed on %d sets of planes, want 2", len(next.planes))
	}
	check(next.planes[1], [][]byte{keyB, keyA})
	// The old signing key's derivation is still accepted, second.
	if string(next.planes[1]["ns/a"].Config.SessionKeys[1]) != string(next.planes[0]["ns/a"].Config.SessionKeys[0]) {
		t.Error("after rotation the plane's old key is not kept second")
	}
	if len(next.got) != 0 {
		t.Errorf("no shared config was given, yet %d were published", len(next.got))
	}

	// A plane given no config keeps its last one, which a rotation
	// republishes with the new keys rather than leaving the old ones.
	p.PublishPlanes(map[string]configserver.Plane{"ns/a": {Token: "ta"}})
	if got := next.planes[2]["ns/a"].Config; got == nil || !equalKeys(got.SessionKeys, PlaneKeys([][]byte{keyB, keyA}, "ns/a")) {
		t.Fatalf("a plane given no config: handed on %+v, want its last config", got)
	}
	writeKeys(t, dir, keyA, keyB)
	if !p.Reload() {
		t.Fatal("rotation not noticed")
	}
	if got := next.planes[3]; len(got) != 1 || got["ns/a"].Config == nil || !equalKeys(got["ns/a"].Config.SessionKeys, PlaneKeys([][]byte{keyA, keyB}, "ns/a")) {
		t.Errorf("after rotation handed on %+v; want plane a's last config with keys derived from A, B", got)
	}
}
