package chart

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tunnelgate/tunnelgate/release/chartpkg"
	"github.com/tunnelgate/tunnelgate/release/gobuild"
	"github.com/tunnelgate/tunnelgate/release/image"
	"github.com/tunnelgate/tunnelgate/release/publish"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// `make release` against a real OCI registry on loopback, then what a
// user does with what it pushed: pull the image index and look inside
// (both architectures, the user, the entrypoint, the labels, the binary,
// which runs), read the SBOM attached to it, and install the chart with
// `helm install oci://...` on the API server: its Deployments must run
// the pushed image by digest.
func TestReleaseInstallsFromARegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New(
		registry.WithReferrersSupport(true),
		registry.Logger(log.New(io.Discard, "", 0)),
	))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	const version = "0.0.0-release-test"
	prefix := host + "/acme"

	dist := t.TempDir()
	mk := exec.Command("make", "--no-print-directory", "release", "REGISTRY="+prefix, "VERSION=v"+version, "DIST="+dist)
	mk.Dir = "../.."
	out, err := mk.CombinedOutput()
	if err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	t.Logf("make release:\n%s", out)
	if !strings.Contains(string(out), "the release is not signed") {
		t.Errorf("make release without COSIGN_KEY or SIGN does not say the release is not signed")
	}
	revision := git(t, "rev-parse", "HEAD")
	epoch, err := strconv.ParseInt(git(t, "log", "-1", "--format=%ct"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Unix(epoch, 0).UTC().Format(time.RFC3339)

	// The image, as a user pulls it by tag.
	imageRepo, err := name.NewRepository(prefix + "/tunnelgate")
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(imageRepo.Tag(version))
	if err != nil {
		t.Fatalf("pulling the index: %v", err)
	}
	digest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), digest.String()) {
		t.Errorf("make release did not print the index digest %s", digest)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var archs []string
	binaries := map[string]map[string][]byte{} // arch -> name -> binary
	for _, d := range im.Manifests {
		archs = append(archs, d.Platform.OS+"/"+d.Platform.Architecture)
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		binaries[d.Platform.Architecture] = checkPlatformImage(t, img, d.Platform.Architecture, map[string]string{
			"org.opencontainers.image.version":  version,
			"org.opencontainers.image.revision": revision,
			"org.opencontainers.image.created":  created,
			"org.opencontainers.image.source":   image.Source,
			"org.opencontainers.image.licenses": image.Licenses,
			"org.opencontainers.image.title":    image.Title,
		})
	}
	if !slices.Equal(archs, []string{"linux/amd64", "linux/arm64"}) {
		t.Fatalf("the index holds %v, want linux/amd64 and linux/arm64", archs)
	}

	// The binaries of this machine's architecture, taken out of its layer,
	// are static, run as the image's user and say the release's version.
	// (In a directory the image's user may enter.)
	binDir, err := testproc.OwnedTempDir("tunnelgate-release-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(binDir) })
	if err := os.Chmod(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range binaries[runtime.GOARCH] {
		bin := filepath.Join(binDir, name)
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
		checkStaticBinary(t, bin, version)
	}

	checkSBOM(t, imageRepo, digest, version, binaries)

	// The chart, installed from the registry as docs/install.md says.
	env := clusterEnv(t)
	const release, ns = "oci", "oci-system"
	chartRef := "oci://" + prefix + "/charts/tunnelgate"
	if _, err := helm(t, []string{"KUBECONFIG=" + env.Kubeconfig()}, "install", release, chartRef,
		"--version", version, "--plain-http", "--namespace", ns, "--create-namespace",
		"-f", valuesFiles(t)["default"], "--set", "gatewayClass.name=oci"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = helm(t, []string{"KUBECONFIG=" + env.Kubeconfig()}, "uninstall", release, "--namespace", ns)
	})
	kube := kubernetes.NewForConfigOrDie(env.Config)
	checkPinned(t, kube, ns, imageRepo.String()+"@"+digest.String())

	// The next release's chart pins another digest; an upgrade as
	// docs/install.md says (--reset-then-reuse-values) moves to it and
	// keeps the values given at install.
	next := version + ".next"
	nextDigest := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(next)))
	nextChart, err := chartpkg.Package(os.DirFS(chartDir), chartpkg.Release{
		Version: next, ImageRepository: imageRepo.String(), ImageDigest: nextDigest, Created: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	chartRepo, err := name.NewRepository(prefix + "/charts/tunnelgate")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := publish.Chart(t.Context(), chartRepo.Tag(next), nextChart.Config, nextChart.Archive,
		chartpkg.ConfigMediaType, chartpkg.LayerMediaType, nextChart.Annotations); err != nil {
		t.Fatal(err)
	}
	if _, err := helm(t, []string{"KUBECONFIG=" + env.Kubeconfig()}, "upgrade", release, chartRef,
		"--version", next, "--plain-http", "--namespace", ns, "--reset-then-reuse-values"); err != nil {
		t.Fatal(err)
	}
	checkPinned(t, kube, ns, imageRepo.String()+"@"+nextDigest)
	if vals, err := helm(t, []string{"KUBECONFIG=" + env.Kubeconfig()}, "get", "values", release, "--namespace", ns); err != nil || !strings.Contains(vals, "name: oci") {
		t.Errorf("after the upgrade the install's values are %q (%v); want gatewayClass.name oci kept", vals, err)
	}

	// The archive make release wrote is the chart it pushed.
	local, err := os.ReadFile(filepath.Join(dist, "tunnelgate-"+version+".tgz"))
	if err != nil {
		t.Fatal(err)
	}
	pulled := t.TempDir()
	if _, err := helm(t, nil, "pull", chartRef, "--version", version, "--plain-http", "--destination", pulled); err != nil {
		t.Fatal(err)
	}
	if remoteTgz, err := os.ReadFile(filepath.Join(pulled, "tunnelgate-"+version+".tgz")); err != nil || !bytes.Equal(remoteTgz, local) {
		t.Errorf("helm pull gives another archive than make release wrote to %s (%v)", dist, err)
	}
}

// checkPinned checks that the release's Deployments run pinned (the
// tunnelgate containers; cloudflared is another image) and that dedicated
// planes would too.
func checkPinned(t *testing.T, kube kubernetes.Interface, ns, pinned string) {
	t.Helper()
	for _, d := range []string{"oci-tunnelgate-controller", "oci-tunnelgate-proxy"} {
		dep, err := kube.AppsV1().Deployments(ns).Get(t.Context(), d, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("after helm install oci://: %v", err)
		}
		var ours int
		for _, c := range append(dep.Spec.Template.Spec.InitContainers, dep.Spec.Template.Spec.Containers...) {
			if strings.Contains(c.Image, "cloudflared") {
				continue
			}
			ours++
			if c.Image != pinned {
				t.Errorf("%s container %s runs %s, want %s", d, c.Name, c.Image, pinned)
			}
		}
		if ours == 0 {
			t.Errorf("%s has no tunnelgate container", d)
		}
	}
	planes, err := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "oci-tunnelgate-controller-planes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(planes.Data["planes.json"], pinned) {
		t.Errorf("dedicated planes would run another image than %s: planes.json is %s", pinned, planes.Data["planes.json"])
	}
}

// checkPlatformImage checks one image of the index (config, labels, the
// files of its layer) and returns its binaries by name.
func checkPlatformImage(t *testing.T, img v1.Image, arch string, labels map[string]string) map[string][]byte {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != arch {
		t.Errorf("linux/%s: its config says %s/%s", arch, cfg.OS, cfg.Architecture)
	}
	if cfg.Config.User != "65532:65532" || !slices.Equal(cfg.Config.Entrypoint, []string{"/tunnelgate"}) {
		t.Errorf("linux/%s runs %v as %q, want /tunnelgate as 65532:65532", arch, cfg.Config.Entrypoint, cfg.Config.User)
	}
	for k, v := range labels {
		if cfg.Config.Labels[k] != v {
			t.Errorf("linux/%s label %s = %q, want %q", arch, k, cfg.Config.Labels[k], v)
		}
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("linux/%s: %d layers (%v), want 1", arch, len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("linux/%s: %s is owned by %d:%d; everything is root's, read by nonroot", arch, h.Name, h.Uid, h.Gid)
		}
		b, _ := io.ReadAll(tr)
		files[strings.TrimSuffix(h.Name, "/")] = b
	}
	for _, f := range append(gobuild.Binaries(), "etc/passwd", "etc/group", "etc/ssl/certs/ca-certificates.crt") {
		if _, ok := files[f]; !ok {
			t.Errorf("linux/%s: /%s is not in the image", arch, f)
		}
	}
	for _, f := range []string{"bin/sh", "bin", "usr"} {
		if _, ok := files[f]; ok {
			t.Errorf("linux/%s: /%s is in the image; it has no shell", arch, f)
		}
	}
	if !strings.Contains(string(files["etc/passwd"]), "\nnonroot:x:65532:65532:") {
		t.Errorf("linux/%s: /etc/passwd has no nonroot 65532:\n%s", arch, files["etc/passwd"])
	}
	binaries := map[string][]byte{}
	for _, name := range gobuild.Binaries() {
		f, err := elf.NewFile(bytes.NewReader(files[name]))
		if err != nil {
			t.Fatalf("linux/%s: /%s is not an ELF binary: %v", arch, name, err)
		}
		if want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]; f.Machine != want {
			t.Errorf("linux/%s: /%s is for %v", arch, name, f.Machine)
		}
		binaries[name] = files[name]
	}
	return binaries
}

// checkSBOM finds the SBOM as docs/install.md says (a referrer of the
// index, also under the tag VERSION.sbom) and checks it describes the
// pushed index and its binaries.
func checkSBOM(t *testing.T, repo name.Repository, digest v1.Hash, version string, binaries map[string]map[string][]byte) {
	t.Helper()
	refs, err := remote.Referrers(repo.Digest(digest.String()))
	if err != nil {
		t.Fatal(err)
	}
	rm, err := refs.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	tagged, err := remote.Get(repo.Tag(version + ".sbom"))
	if err != nil {
		t.Fatalf("the SBOM's tag: %v", err)
	}
	if len(rm.Manifests) != 1 || rm.Manifests[0].Digest != tagged.Digest {
		t.Fatalf("the index's referrers are %+v; want the SBOM tagged %s.sbom (%s)", rm.Manifests, version, tagged.Digest)
	}
	var m v1.Manifest
	if err := json.Unmarshal(tagged.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	if m.ArtifactType != "application/spdx+json" || m.Subject == nil || m.Subject.Digest != digest || len(m.Layers) != 1 {
		t.Fatalf("SBOM manifest %s", tagged.Manifest)
	}
	layer, err := remote.Layer(repo.Digest(m.Layers[0].Digest.String()))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layer.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var doc struct {
		SPDXVersion string
		Packages    []struct {
			SPDXID, Name, VersionInfo string
			Checksums                 []struct{ Algorithm, ChecksumValue string }
			ExternalRefs              []struct{ ReferenceLocator string }
		}
		Relationships []struct{ SPDXElementID, RelationshipType, RelatedSPDXElement string }
	}
	if err := json.NewDecoder(rc).Decode(&doc); err != nil {
		t.Fatalf("the SBOM is not JSON: %v", err)
	}
	if doc.SPDXVersion != "SPDX-2.3" {
		t.Errorf("SBOM version %q", doc.SPDXVersion)
	}
	sums := map[string]string{}
	var purls []string
	for _, p := range doc.Packages {
		for _, c := range p.Checksums {
			sums[p.Name] = c.ChecksumValue
		}
		for _, r := range p.ExternalRefs {
			purls = append(purls, r.ReferenceLocator)
		}
	}
	if sums["tunnelgate"] != digest.Hex {
		t.Errorf("the SBOM describes image %s, not the pushed %s", sums["tunnelgate"], digest.Hex)
	}
	for arch, named := range binaries {
		for name, b := range named {
			pkg := name + " linux/" + arch
			if want := fmt.Sprintf("%x", sha256.Sum256(b)); sums[pkg] != want {
				t.Errorf("the SBOM's %s has sha256 %q, the image's %s", pkg, sums[pkg], want)
			}
		}
	}
	for _, want := range []string{"pkg:golang/k8s.io/client-go@", "pkg:golang/stdlib@" + strings.TrimPrefix(runtime.Version(), "go")} {
		if !slices.ContainsFunc(purls, func(p string) bool { return strings.HasPrefix(p, want) }) {
			t.Errorf("the SBOM lists no %s", want)
		}
	}
}

// git runs git in the repository and returns its output, trimmed.
func git(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}
