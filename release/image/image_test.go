package image

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var testMeta = Metadata{
	Version:  "1.2.3",
	Revision: "0123456789abcdef0123456789abcdef01234567",
	Created:  time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
}

func testPlatforms() []Platform {
	return []Platform{
		{Arch: "amd64", Binaries: testBinaries("amd64")},
		{Arch: "arm64", Binaries: testBinaries("arm64")},
	}
}

func testBinaries(arch string) []Binary {
	return []Binary{
		{Name: "tunnelgate", Data: []byte("\x7fELF " + arch + " binary")},
		{Name: "tunnelgate-proxy", Data: []byte("\x7fELF " + arch + " proxy binary")},
	}
}

func mustBuild(t *testing.T, m Metadata, p []Platform) v1.ImageIndex {
	t.Helper()
	idx, err := Build(m, p)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func mustDigest(t *testing.T, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// The same inputs give the same index digest; each input changes it.
func TestBuildIsReproducible(t *testing.T) {
	want := mustDigest(t, mustBuild(t, testMeta, testPlatforms()))
	if got := mustDigest(t, mustBuild(t, testMeta, testPlatforms())); got != want {
		t.Fatalf("two builds of the same inputs: %s and %s", want, got)
	}
	later := testMeta
	later.Created = later.Created.Add(time.Second)
	otherVersion := testMeta
	otherVersion.Version = "1.2.4"
	otherBinary := testPlatforms()
	otherBinary[1].Binaries[0].Data = []byte("\x7fELF another arm64 binary")
	otherProxy := testPlatforms()
	otherProxy[0].Binaries[1].Data = []byte("\x7fELF another amd64 proxy binary")
	for name, idx := range map[string]v1.ImageIndex{
		"created":  mustBuild(t, later, testPlatforms()),
		"version":  mustBuild(t, otherVersion, testPlatforms()),
		"binary":   mustBuild(t, testMeta, otherBinary),
		"proxy":    mustBuild(t, testMeta, otherProxy),
		"platform": mustBuild(t, testMeta, testPlatforms()[:1]),
	} {
		if mustDigest(t, idx) == want {
			t.Errorf("another %s gives the same digest", name)
		}
	}
}

func TestBuildRefusesIncompleteInput(t *testing.T) {
	noRevision := testMeta
	noRevision.Revision = ""
	for name, c := range map[string]struct {
		m Metadata
		p []Platform
	}{
		"no platform":   {testMeta, nil},
		"no revision":   {noRevision, testPlatforms()},
		"no binary":     {testMeta, []Platform{{Arch: "amd64"}}},
		"no entrypoint": {testMeta, []Platform{{Arch: "amd64", Binaries: testBinaries("amd64")[1:]}}},
		"empty binary":  {testMeta, []Platform{{Arch: "amd64", Binaries: []Binary{{Name: "tunnelgate"}}}}},
		"binary twice":  {testMeta, []Platform{{Arch: "amd64", Binaries: append(testBinaries("amd64"), testBinaries("amd64")[0])}}},
		"a path":        {testMeta, []Platform{{Arch: "amd64", Binaries: append(testBinaries("amd64"), Binary{Name: "bin/sh", Data: []byte("x")})}}},
		"twice amd64":   {testMeta, []Platform{testPlatforms()[0], testPlatforms()[0]}},
		"no arch name":  {testMeta, []Platform{{Binaries: testBinaries("amd64")}}},
	} {
		if _, err := Build(c.m, c.p); err == nil {
			t.Errorf("%s: Build returned no error", name)
		}
	}
}

// The index lists both platforms with the OCI media types, and each image
// runs the binary as nonroot, labelled, dated by the commit.
func TestBuildIndexAndImages(t *testing.T) {
	idx := mustBuild(t, testMeta, testPlatforms())
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex || len(im.Manifests) != 2 {
		t.Fatalf("index %s with %d manifests, want an OCI index of 2", im.MediaType, len(im.Manifests))
	}
	if im.Annotations["org.opencontainers.image.revision"] != testMeta.Revision {
		t.Errorf("index annotations %v lack the revision", im.Annotations)
	}
	for i, p := range testPlatforms() {
		d := im.Manifests[i]
		if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != p.Arch || d.MediaType != types.OCIManifestSchema1 {
			t.Fatalf("manifest %d: %+v, want linux/%s", i, d, p.Arch)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
			t.Errorf("linux/%s manifest: config %s, layers %+v", p.Arch, m.Config.MediaType, m.Layers)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != p.Arch || cfg.OS != "linux" || !cfg.Created.Equal(testMeta.Created) {
			t.Errorf("linux/%s config: %s/%s created %v", p.Arch, cfg.OS, cfg.Architecture, cfg.Created)
		}
		if cfg.Config.User != "65532:65532" || !slices.Equal(cfg.Config.Entrypoint, []string{"/tunnelgate"}) || len(cfg.Config.Cmd) != 0 {
			t.Errorf("linux/%s runs %v %v as %q, want /tunnelgate as 65532:65532", p.Arch, cfg.Config.Entrypoint, cfg.Config.Cmd, cfg.Config.User)
		}
		for k, v := range map[string]string{
			"org.opencontainers.image.source":   Source,
			"org.opencontainers.image.version":  "1.2.3",
			"org.opencontainers.image.revision": testMeta.Revision,
			"org.opencontainers.image.licenses": "Apache-2.0",
			"org.opencontainers.image.created":  "2026-03-04T05:06:07Z",
			"org.opencontainers.image.title":    "tunnelgate",
		} {
			if cfg.Config.Labels[k] != v {
				t.Errorf("linux/%s label %s = %q, want %q", p.Arch, k, cfg.Config.Labels[k], v)
			}
		}
		if len(cfg.History) != 1 || !cfg.History[0].Created.Equal(testMeta.Created) || len(cfg.RootFS.DiffIDs) != 1 {
			t.Errorf("linux/%s history %+v, diff IDs %v", p.Arch, cfg.History, cfg.RootFS.DiffIDs)
		}

		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		diffID, _ := layers[0].DiffID()
		if diffID != cfg.RootFS.DiffIDs[0] {
			t.Errorf("linux/%s: the config's diff ID %s is not the layer's %s", p.Arch, cfg.RootFS.DiffIDs[0], diffID)
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		entries := readTar(t, rc)
		for _, b := range p.Binaries {
			if !bytes.Equal(entries[b.Name].data, b.Data) {
				t.Errorf("linux/%s: /%s is not its binary", p.Arch, b.Name)
			}
		}
	}
}

type tarEntry struct {
	hdr  *tar.Header
	data []byte
}

// readTar reads a tar stream into its entries by name (without the
// trailing slash of directories), checking that names come sorted.
func readTar(t *testing.T, r io.ReadCloser) map[string]tarEntry {
	t.Helper()
	defer r.Close()
	entries := map[string]tarEntry{}
	tr := tar.NewReader(r)
	var last string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		if name <= last {
			t.Errorf("tar entry %s comes after %s: entries are not sorted", name, last)
		}
		last = name
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries[name] = tarEntry{h, data}
	}
}

// The layer holds the binaries, the accounts and the CA bundle and
// nothing else (no shell), all root's, at the commit time.
func TestLayerContents(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTar(&b, RootFS(testBinaries("amd64")), testMeta.Created); err != nil {
		t.Fatal(err)
	}
	entries := readTar(t, io.NopCloser(&b))
	want := map[string]int64{
		"etc": 0o755, "etc/ssl": 0o755, "etc/ssl/certs": 0o755,
		"etc/passwd": 0o644, "etc/group": 0o644, "etc/ssl/certs/ca-certificates.crt": 0o644,
		"tunnelgate": 0o755, "tunnelgate-proxy": 0o755,
	}
	if len(entries) != len(want) {
		names := make([]string, 0, len(entries))
		for n := range entries {
			names = append(names, n)
		}
		t.Errorf("layer entries %v, want exactly those of %v", names, want)
	}
	for name, mode := range want {
		e, ok := entries[name]
		if !ok {
			t.Errorf("%s missing from the layer", name)
			continue
		}
		h := e.hdr
		if h.Mode != mode || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(testMeta.Created) {
			t.Errorf("%s: mode %o uid %d gid %d (%q %q) mtime %v; want mode %o, 0:0 unnamed, %v",
				name, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime, mode, testMeta.Created)
		}
	}
	if !strings.Contains(string(entries["etc/passwd"].data), "\nnonroot:x:65532:65532:") ||
		!strings.Contains(string(entries["etc/group"].data), "\nnonroot:x:65532:") {
		t.Errorf("no nonroot 65532 in /etc/passwd or /etc/group:\n%s%s", entries["etc/passwd"].data, entries["etc/group"].data)
	}
	if entries["etc"].hdr.Typeflag != tar.TypeDir || entries["tunnelgate"].hdr.Typeflag != tar.TypeReg || entries["tunnelgate-proxy"].hdr.Typeflag != tar.TypeReg {
		t.Error("directories and files have the wrong tar types")
	}
}

// The bundle is Mozilla's roots, every one a CA certificate, and it
// verifies a chain to a root everyone trusts (Let's Encrypt's ISRG Root X1).
func TestCABundle(t *testing.T) {
	rest := CABundle()
	var n int
	names := map[string]bool{}
	for len(rest) > 0 {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			t.Fatalf("after %d certificates the bundle has bytes that are not PEM", n)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatalf("certificate %d: %v", n, err)
		}
		if !c.IsCA {
			t.Errorf("%s is not a CA", c.Subject)
		}
		names[c.Subject.CommonName] = true
		n++
	}
	if n < 100 {
		t.Errorf("the bundle holds %d roots; Mozilla's store has well over 100", n)
	}
	if !names["ISRG Root X1"] {
		t.Error("ISRG Root X1 is not in the bundle")
	}
	if !bytes.Equal(CABundle(), CABundle()) {
		t.Error("two calls give two bundles")
	}
}

// The layout on disk holds the index with the same digest, named by ref.
func TestWriteLayout(t *testing.T) {
	idx := mustBuild(t, testMeta, testPlatforms())
	dir := filepath.Join(t.TempDir(), "image")
	if err := WriteLayout(dir, idx, "1.2.3"); err != nil {
		t.Fatal(err)
	}
	if err := WriteLayout(dir, idx, "1.2.3"); err == nil {
		t.Error("writing over an existing layout did not fail")
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != mustDigest(t, idx) ||
		im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "1.2.3" {
		t.Fatalf("index.json lists %+v, want the index %s named 1.2.3", im.Manifests, mustDigest(t, idx))
	}
	got, err := top.ImageIndex(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if mustDigest(t, got) != mustDigest(t, idx) {
		t.Error("the index read back has another digest")
	}
}

// WriteDir makes the tree the Dockerfile copies: the same files with the
// same modes, whatever the umask.
func TestWriteDir(t *testing.T) {
	files := RootFS(testBinaries("amd64"))
	dir := filepath.Join(t.TempDir(), "rootfs")
	if err := WriteDir(dir, files); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		st, err := os.Stat(filepath.Join(dir, f.Path))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != f.Mode {
			t.Errorf("%s has mode %v, want %v", f.Path, st.Mode(), f.Mode)
		}
		if !f.Mode.IsDir() {
			b, _ := os.ReadFile(filepath.Join(dir, f.Path))
			if !bytes.Equal(b, f.Data) {
				t.Errorf("%s holds other bytes", f.Path)
			}
		}
	}
	var count int
	_ = filepath.WalkDir(dir, func(string, fs.DirEntry, error) error { count++; return nil })
	if count != len(files)+1 {
		t.Errorf("the tree has %d entries, want %d and its root", count, len(files))
	}
	if err := WriteDir(dir, files); err == nil {
		t.Error("writing into an existing directory did not fail")
	}
}
