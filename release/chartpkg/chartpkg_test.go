package chartpkg

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"sigs.k8s.io/yaml"
)

var testRelease = Release{
	Version:         "1.2.3-rc.1",
	ImageRepository: "127.0.0.1:5000/acme/tunnelgate",
	ImageDigest:     "sha256:" + strings.Repeat("0f", 32),
	Created:         time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
}

// readArchive returns the archive's files by name, checking every entry
// is a 0644 file of root's at the commit time.
func readArchive(t *testing.T, archive []byte) (map[string][]byte, []string) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	var order []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, order
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg || h.Mode != 0o644 || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(testRelease.Created) {
			t.Errorf("%s: type %c mode %o owner %d:%d mtime %v", h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.ModTime)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = b
		order = append(order, h.Name)
	}
}

// The repository's chart, packaged: every file under tunnelgate/, equal
// to chart/'s but for the version lines and the image, which name the
// release's.
func TestPackageTheChart(t *testing.T) {
	dir := os.DirFS("../../chart")
	c, err := Package(dir, testRelease)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "tunnelgate" || c.Version != "1.2.3-rc.1" || c.FileName() != "tunnelgate-1.2.3-rc.1.tgz" {
		t.Errorf("chart %s %s (%s)", c.Name, c.Version, c.FileName())
	}
	files, order := readArchive(t, c.Archive)
	for i := 1; i < len(order); i++ {
		if order[i] <= order[i-1] {
			t.Errorf("%s comes after %s: entries are not sorted", order[i], order[i-1])
		}
	}

	var meta struct{ Name, Version, AppVersion, KubeVersion string }
	if err := yaml.Unmarshal(files["tunnelgate/Chart.yaml"], &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Version != "1.2.3-rc.1" || meta.AppVersion != "1.2.3-rc.1" || meta.KubeVersion == "" {
		t.Errorf("packaged Chart.yaml: %+v", meta)
	}
	var values struct {
		Image       struct{ Repository, Tag, Digest string }
		Cloudflared struct {
			Image struct{ Repository, Digest string }
		}
	}
	if err := yaml.Unmarshal(files["tunnelgate/values.yaml"], &values); err != nil {
		t.Fatal(err)
	}
	if values.Image.Repository != testRelease.ImageRepository || values.Image.Digest != testRelease.ImageDigest {
		t.Errorf("packaged image values: %+v", values.Image)
	}
	if values.Cloudflared.Image.Digest != "" || strings.Contains(values.Cloudflared.Image.Repository, "acme") {
		t.Errorf("cloudflared's image was changed too: %+v", values.Cloudflared.Image)
	}
	// Comments stay: only the value lines changed.
	orig, _ := os.ReadFile("../../chart/values.yaml")
	if d := lineDiff(string(orig), string(files["tunnelgate/values.yaml"])); d != 2 {
		t.Errorf("%d lines of values.yaml differ, want 2 (repository and digest)", d)
	}

	var walked int
	err = walkFiles(dir, func(p string, b []byte) {
		walked++
		if p == "Chart.yaml" || p == "values.yaml" {
			return
		}
		if got, ok := files["tunnelgate/"+p]; !ok || !bytes.Equal(got, b) {
			t.Errorf("chart/%s is not packaged as it is", p)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if walked != len(files) {
		t.Errorf("the archive has %d files, chart/ %d", len(files), walked)
	}

	var config map[string]any
	if err := json.Unmarshal(c.Config, &config); err != nil || config["name"] != "tunnelgate" || config["version"] != "1.2.3-rc.1" || config["apiVersion"] != "v2" {
		t.Errorf("config %s (%v)", c.Config, err)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.title":   "tunnelgate",
		"org.opencontainers.image.version": "1.2.3-rc.1",
		"org.opencontainers.image.created": "2026-03-04T05:06:07Z",
		"gateway-api-version":              "v1.7.0",
	} {
		if c.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, c.Annotations[k], v)
		}
	}

	again, err := Package(dir, testRelease)
	if err != nil || !bytes.Equal(again.Archive, c.Archive) {
		t.Error("packaging twice gives two archives")
	}
}

func lineDiff(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(al) != len(bl) {
		return -1
	}
	n := 0
	for i := range al {
		if al[i] != bl[i] {
			n++
		}
	}
	return n
}

func TestPackageRefusesBadReleases(t *testing.T) {
	dir := os.DirFS("../../chart")
	for name, mutate := range map[string]func(*Release){
		"leading v":         func(r *Release) { r.Version = "v1.2.3" },
		"git describe":      func(r *Release) { r.Version = "e49b9af-dirty" },
		"short digest":      func(r *Release) { r.ImageDigest = "sha256:abc" },
		"repository tagged": func(r *Release) { r.ImageRepository = "127.0.0.1:5000/tunnelgate:1.2.3" },
		"no repository":     func(r *Release) { r.ImageRepository = "" },
	} {
		r := testRelease
		mutate(&r)
		if _, err := Package(dir, r); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// A repository with a port and no tag is fine.
	if _, err := Package(dir, testRelease); err != nil {
		t.Errorf("127.0.0.1:5000/acme/tunnelgate: %v", err)
	}
}

func TestPackageRefusesAChartItCannotSetTheImageIn(t *testing.T) {
	chart := "apiVersion: v2\nname: c\nversion: 0.1.0\nappVersion: \"0.1.0\"\n"
	for name, values := range map[string]string{
		"no image block":  "replicas: 1\n",
		"no digest key":   "image:\n  repository: x\n",
		"two image keys":  "image:\n  repository: x\n  digest: \"\"\nimage:\n  repository: y\n",
		"digest nested":   "image:\n  repository: x\n  more:\n    digest: \"\"\n",
		"digest in other": "image:\n  repository: x\nother:\n  digest: \"\"\n",
	} {
		_, err := Package(fstest.MapFS{
			"Chart.yaml":  {Data: []byte(chart)},
			"values.yaml": {Data: []byte(values)},
		}, testRelease)
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	c, err := Package(fstest.MapFS{
		"Chart.yaml":  {Data: []byte(chart)},
		"values.yaml": {Data: []byte("image:\n  repository: x\n  # a comment\n  digest: \"\"\n\n# next\nother:\n  digest: \"\"\n")},
	}, testRelease)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := readArchive(t, c.Archive)
	want := "image:\n  repository: 127.0.0.1:5000/acme/tunnelgate\n  # a comment\n  digest: \"" + testRelease.ImageDigest + "\"\n\n# next\nother:\n  digest: \"\"\n"
	if got := string(files["c/values.yaml"]); got != want {
		t.Errorf("values.yaml:\n%s\nwant\n%s", got, want)
	}
}

// walkFiles calls f with every regular file of dir and its bytes.
func walkFiles(dir fs.FS, f func(path string, b []byte)) error {
	return fs.WalkDir(dir, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(dir, p)
		f(p, b)
		return err
	})
}
