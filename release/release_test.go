package main

import (
	"bytes"
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

const (
	testRevision = "0123456789abcdef0123456789abcdef01234567"
	testEpoch    = "1767225600" // 2026-01-01T00:00:00Z
)

// layoutDigest is the digest of the index an OCI layout holds.
func layoutDigest(t *testing.T, dir string) string {
	t.Helper()
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("%s/index.json lists %d manifests, want the image index alone", dir, len(im.Manifests))
	}
	return im.Manifests[0].Digest.String()
}

// Two builds of the same commit, in two directories, give the same index
// digest and the same SBOM, from binaries built the release's way. The
// command runs as its own process, built without the race detector, which
// would make compressing 140 MB of binaries take minutes.
func TestImageIsReproducible(t *testing.T) {
	cmd := filepath.Join(t.TempDir(), "release")
	if out, err := exec.Command("go", "build", "-o", cmd, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build ./release: %v\n%s", err, out)
	}
	var dists [2]string
	for i := range dists {
		dists[i] = filepath.Join(t.TempDir(), "dist")
		image := exec.Command(cmd, "image", "-version", "v9.8.7-test", "-revision", testRevision, "-source-date-epoch", testEpoch, "-dist", dists[i])
		if out, err := image.CombinedOutput(); err != nil {
			t.Fatalf("release image: %v\n%s", err, out)
		}
	}
	first, second := layoutDigest(t, filepath.Join(dists[0], "image")), layoutDigest(t, filepath.Join(dists[1], "image"))
	if first != second {
		t.Fatalf("two builds of one commit: index %s and %s", first, second)
	}
	t.Logf("index digest %s, both times", first)

	sbom1, err := os.ReadFile(filepath.Join(dists[0], sbomFile))
	if err != nil {
		t.Fatal(err)
	}
	sbom2, _ := os.ReadFile(filepath.Join(dists[1], sbomFile))
	if !bytes.Equal(sbom1, sbom2) || !bytes.Contains(sbom1, []byte(strings.TrimPrefix(first, "sha256:"))) {
		t.Error("the SBOMs differ, or do not name the index digest")
	}

	for _, bin := range []string{"linux-amd64/tunnelgate", "linux-amd64/tunnelgate-proxy", "linux-arm64/tunnelgate", "linux-arm64/tunnelgate-proxy"} {
		arch := strings.TrimPrefix(filepath.Dir(bin), "linux-")
		info, err := buildinfo.ReadFile(filepath.Join(dists[0], binDir, bin))
		if err != nil {
			t.Fatal(err)
		}
		if want := "github.com/tunnelgate/tunnelgate/cmd/" + filepath.Base(bin); info.Path != want {
			t.Errorf("%s is %s, want %s", bin, info.Path, want)
		}
		got := map[string]string{}
		for _, s := range info.Settings {
			got[s.Key] = s.Value
		}
		for k, v := range map[string]string{"-trimpath": "true", "CGO_ENABLED": "0", "GOOS": "linux", "GOARCH": arch} {
			if got[k] != v {
				t.Errorf("%s build setting %s = %q, want %q (all: %v)", bin, k, got[k], v, got)
			}
		}
		if _, stamped := got["vcs.revision"]; stamped {
			t.Errorf("%s is stamped with version control information, which differs between checkouts", bin)
		}
	}
}

func TestUsage(t *testing.T) {
	ok := []string{"-version", "1.2.3", "-revision", testRevision, "-source-date-epoch", testEpoch}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{nil, 2, "usage:"},
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{"image"}, 2, "-version is required"},
		{[]string{"image", "-version", "1.2.3", "-revision", "abc", "-source-date-epoch", testEpoch}, 2, "not a full commit hash"},
		{[]string{"image", "-version", "1.2.3", "-revision", testRevision, "-source-date-epoch", "yesterday"}, 2, "not a time in Unix seconds"},
		{append([]string{"image", "-arch", ","}, ok...), 2, "names no architecture"},
		{append(append([]string{"image"}, ok...), "extra"), 2, `unexpected argument "extra"`},
		{append([]string{"publish"}, ok...), 2, "-registry is required"},
		{[]string{"publish", "-registry", "127.0.0.1:1", "-version", "e49b9af-dirty", "-revision", testRevision, "-source-date-epoch", testEpoch}, 2, "not a semantic version"},
		{append([]string{"publish", "-registry", "Not A Registry"}, ok...), 2, "registry"},
		{append([]string{"publish", "-registry", "127.0.0.1:1", "-sign", "gpg"}, ok...), 2, `SIGN="gpg"`},
		// Signing asked without cosign fails before minutes of building.
		{append([]string{"publish", "-registry", "127.0.0.1:1", "-sign-key", "cosign.key", "-cosign", "/nonexistent/cosign"}, ok...), 2, "needs cosign"},
		{[]string{"rootfs"}, 2, "-out is required"},
		{[]string{"binaries", "-arch", ""}, 2, "names no architecture"},
		{[]string{"help"}, 0, ""},
	} {
		var stdout, stderr bytes.Buffer
		code := run(c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.says) {
			t.Errorf("release %v: exit %d, stderr %q; want exit %d saying %q", c.args, code, stderr.String(), c.code, c.says)
		}
	}
}

func TestReleaseVersion(t *testing.T) {
	for in, want := range map[string]string{"v0.2.0": "0.2.0", "0.2.0": "0.2.0", "dev": "dev", "v": "v", "vnext": "vnext"} {
		if got := releaseVersion(in); got != want {
			t.Errorf("releaseVersion(%q) = %q, want %q", in, got, want)
		}
	}
}
