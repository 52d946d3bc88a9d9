package realnode

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/tunnelgate/tunnelgate/release/image"
)

// Images the node holds from the start. There is no registry: every image
// is made here, FROM scratch, and imported into containerd.
const (
	// ProbeImage holds /probe (test/realnode/internal/probe): the Pod
	// sandboxes' process (containerd's sandbox_image) and a program for
	// tests (`probe pause`, `probe resolve NAME`). It runs as 65532.
	ProbeImage = "tunnelgate.test/probe:1"
	// CoreDNSImage holds /coredns, built by `make realnode`.
	CoreDNSImage = "tunnelgate.test/coredns:" + CoreDNSVersion
	// TunnelgateImage is the project's own image, as `make image` builds
	// it but for this machine's architecture alone; see ImportTunnelgateImage.
	TunnelgateImage = "tunnelgate.test/tunnelgate:realnode"
)

// probePackage is the probe's import path, built from any directory of
// the module.
const probePackage = "github.com/tunnelgate/tunnelgate/test/realnode/internal/probe"

// buildProbe builds the probe, static, into dir.
func buildProbe(ctx context.Context, dir string) (string, error) {
	return buildProgram(ctx, dir, probePackage)
}

// buildProgram builds the Go package pkg as a static binary, named as its
// last element, into dir.
func buildProgram(ctx context.Context, dir, pkg string) (string, error) {
	out := filepath.Join(dir, path.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("realnode: building %s: %w\n%s", pkg, err, b)
	}
	return out, nil
}

// ImportProgram builds the Go package pkg (a main package the test's
// module can build) as a static binary, and imports, for each reference
// of images, a FROM-scratch image holding it alone at /NAME (pkg's last
// element), run as 65532:65532, whose entrypoint is /NAME followed by the
// reference's arguments: one binary of several programs chosen by their
// first argument makes an image for each. The layers are the release
// code's (release/image), uncompressed.
func (n *Node) ImportProgram(ctx context.Context, pkg string, images map[string][]string) error {
	dir, err := os.MkdirTemp(n.Dir, "program-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := buildProgram(ctx, dir, pkg)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	name := "/" + path.Base(pkg)
	for _, ref := range slices.Sorted(maps.Keys(images)) {
		imgDir := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(ref))
		entrypoint := append([]string{name}, images[ref]...)
		if err := scratchImage(imgDir, ref, "65532:65532", entrypoint, map[string][]byte{name: data}); err != nil {
			return fmt.Errorf("realnode: the image %s: %w", ref, err)
		}
		if err := n.ImportImage(ctx, ref, imgDir); err != nil {
			return err
		}
	}
	return nil
}

// scratchImage writes an OCI image layout to dir holding one image whose
// only layer has the given files (regular files; their directories are
// added), run as user with entrypoint.
func scratchImage(dir, ref, user string, entrypoint []string, files map[string][]byte) error {
	var rootfs []image.File
	dirs := map[string]bool{}
	for p, data := range files {
		rootfs = append(rootfs, image.File{Path: p, Mode: 0o755, Data: data})
		for d := filepath.Dir(p); d != "/"; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		rootfs = append(rootfs, image.File{Path: d, Mode: fs.ModeDir | 0o755})
	}
	// Parents sort before what they hold.
	slices.SortFunc(rootfs, func(a, b image.File) int { return cmp.Compare(a.Path, b.Path) })
	var tarball bytes.Buffer
	created := time.Unix(0, 0)
	if err := image.WriteTar(&tarball, rootfs, created); err != nil {
		return err
	}
	img, err := imageOf(tarball.Bytes(), v1.Config{User: user, Entrypoint: entrypoint, WorkingDir: "/"})
	if err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref}))
}

// imageOf is an OCI image for this machine's architecture with one
// layer, left uncompressed: compressing tens of megabytes in a test
// binary built with -race takes ten times as long, for no use here.
func imageOf(layerTar []byte, cfg v1.Config) (v1.Image, error) {
	l := static.NewLayer(layerTar, types.OCIUncompressedLayer)
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: runtime.GOARCH, OS: "linux", Config: cfg, RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, err
	}
	return mutate.AppendLayers(img, l)
}

// ImportImage imports the OCI image layout in dir (as `make image` writes
// dist/image, or as ImportTunnelgateImage makes) into the node's containerd
// under ref, a full reference (host/name:tag) that Pods name as their
// image with any imagePullPolicy but Always.
func (n *Node) ImportImage(ctx context.Context, ref, dir string) error {
	tarPath := filepath.Join(n.Dir, "import-"+strings.NewReplacer("/", "_", ":", "_").Replace(ref)+".tar")
	if err := tarDir(tarPath, dir); err != nil {
		return fmt.Errorf("realnode: packing %s: %w", dir, err)
	}
	defer os.Remove(tarPath)
	// --index-name names the layout's index itself: without a full
	// reference the CRI does not see the image until containerd restarts.
	// tarDir drops the index's ref.name annotations, of which ctr would
	// make second names (import-DATE:TAG) that confuse the CRI's cache.
	cmd := exec.CommandContext(ctx, n.bin.ctr(), "--address", n.containerdSocket, "--namespace", "k8s.io",
		"images", "import", "--index-name", ref, tarPath)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("realnode: ctr images import %s: %w\n%s", ref, err, b)
	}
	return nil
}

// tarDir writes the files under dir to a tar file at path.
func tarDir(path, dir string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			h.Name += "/"
		}
		if rel == "index.json" {
			b, err := withoutRefNames(p)
			if err != nil {
				return err
			}
			h.Size = int64(len(b))
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			_, err = tw.Write(b)
			return err
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.Type().IsRegular() {
			src, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, src)
			src.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// withoutRefNames returns an OCI layout's index.json without the
// org.opencontainers.image.ref.name annotations of its manifests.
func withoutRefNames(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var idx map[string]any
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	manifests, _ := idx["manifests"].([]any)
	for _, m := range manifests {
		if desc, ok := m.(map[string]any); ok {
			if ann, ok := desc["annotations"].(map[string]any); ok {
				delete(ann, "org.opencontainers.image.ref.name")
			}
		}
	}
	return json.Marshal(idx)
}

// ImportTunnelgateImage builds the project's image as `make image` does
// (go run ./release image: release/gobuild, release/image and the SBOM),
// for this machine's architecture alone, into Dir, and imports it as
// TunnelgateImage. The release command runs as a program of its own,
// not in the test binary, whose -race would make compressing the layer
// ten times slower. With the Go build cache warm (`make chart-check`
// builds the same binaries first) it takes about 7 s.
func (n *Node) ImportTunnelgateImage(ctx context.Context) error {
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(gomod)), "go.mod") {
		return fmt.Errorf("realnode: finding the module root for go run ./release: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	dist := filepath.Join(n.Dir, "images", "tunnelgate")
	cmd := exec.CommandContext(ctx, "go", "run", "./release", "image", "-version", TunnelgateVersion,
		"-revision", revision(ctx, root), "-source-date-epoch", "1", "-arch", runtime.GOARCH, "-dist", dist)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("realnode: go run ./release image: %w\n%s", err, out)
	}
	return n.ImportImage(ctx, TunnelgateImage, filepath.Join(dist, "image"))
}

// TunnelgateVersion is the version ImportTunnelgateImage builds in.
const TunnelgateVersion = "0.0.0-realnode"

// revision is the commit checked out in root, or zeros outside git.
func revision(ctx context.Context, root string) string {
	cmd := exec.CommandContext(ctx, "git", "rev-parse", "HEAD")
	cmd.Dir = root
	out, err := cmd.Output()
	if rev := strings.TrimSpace(string(out)); err == nil && len(rev) == 40 {
		return rev
	}
	return strings.Repeat("0", 40)
}
