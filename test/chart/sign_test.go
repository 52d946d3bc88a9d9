// This file tests a signed release: `make release` with a cosign key, then
// the stock cosign verifying what it pushed, and refusing what it did not.

package chart

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// `make release COSIGN_KEY=... COSIGN_TLOG=false` against a registry on
// loopback (the test has no network, so no transparency log), with a key
// pair of the cosign built from its Go module; then, as docs/install.md
// tells a user: `cosign verify --key` accepts the index and the chart by
// digest, with payloads naming those digests, and `cosign
// verify-attestation --type spdxjson` the SBOM attested to the index, whose
// predicate is the SBOM make release wrote; helm pulls the chart by the
// digest verified. Refused: another key; a tag moved to a tampered
// manifest; and that manifest with the signatures copied to it.
func TestSignedReleaseVerifies(t *testing.T) {
	srv := httptest.NewServer(registry.New(
		registry.WithReferrersSupport(true),
		registry.Logger(log.New(io.Discard, "", 0)),
	))
	t.Cleanup(srv.Close)
	prefix := strings.TrimPrefix(srv.URL, "http://") + "/acme"
	const version = "0.0.0-sign-test"

	c := newCosign(t)
	keys := c.keyPair(t, "release")
	other := c.keyPair(t, "other")

	dist := t.TempDir()
	mk := exec.Command("make", "--no-print-directory", "release", "REGISTRY="+prefix, "VERSION="+version, "DIST="+dist,
		"COSIGN_KEY="+filepath.Join(keys, "cosign.key"), "COSIGN_TLOG=false", "COSIGN="+c.path)
	mk.Dir = "../.."
	mk.Env = append(os.Environ(), "COSIGN_PASSWORD="+c.password)
	out, err := mk.CombinedOutput()
	if err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	t.Logf("make release:\n%s", out)

	imageRepo, err := name.NewRepository(prefix + "/tunnelgate")
	if err != nil {
		t.Fatal(err)
	}
	chartRepo, err := name.NewRepository(prefix + "/charts/tunnelgate")
	if err != nil {
		t.Fatal(err)
	}
	index, chart := headDigest(t, imageRepo.Tag(version)), headDigest(t, chartRepo.Tag(version))
	pub := filepath.Join(keys, "cosign.pub")
	for _, want := range []string{
		"cosign verify --key cosign.pub --insecure-ignore-tlog=true " + index.String(),
		"cosign verify --key cosign.pub --insecure-ignore-tlog=true " + chart.String(),
		"cosign verify-attestation --key cosign.pub --insecure-ignore-tlog=true --type spdxjson " + index.String(),
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make release does not print %q", want)
		}
	}

	// Verified, each payload naming the digest asked for.
	for _, ref := range []name.Digest{index, chart} {
		stdout, stderr, err := c.run(t, "verify", "--key", pub, "--insecure-ignore-tlog=true", ref.String())
		if err != nil {
			t.Fatalf("cosign verify %s: %v\n%s", ref, err, stderr)
		}
		var payloads []struct {
			Critical struct {
				Identity struct {
					DockerReference string `json:"docker-reference"`
				}
				Image struct {
					DockerManifestDigest string `json:"docker-manifest-digest"`
				}
			}
		}
		if err := json.Unmarshal([]byte(stdout), &payloads); err != nil || len(payloads) == 0 {
			t.Fatalf("cosign verify %s printed no payloads (%v):\n%s", ref, err, stdout)
		}
		for _, p := range payloads {
			if p.Critical.Image.DockerManifestDigest != ref.DigestStr() || p.Critical.Identity.DockerReference != ref.String() {
				t.Errorf("cosign verify %s: a payload signs %s (%s)", ref, p.Critical.Image.DockerManifestDigest, p.Critical.Identity.DockerReference)
			}
		}
	}

	// The attestation's predicate is the SBOM, its subject the index.
	sbom, err := os.ReadFile(filepath.Join(dist, "tunnelgate.spdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := c.run(t, "verify-attestation", "--key", pub, "--insecure-ignore-tlog=true", "--type", "spdxjson", index.String())
	if err != nil {
		t.Fatalf("cosign verify-attestation %s: %v\n%s", index, err, stderr)
	}
	checkAttestation(t, stdout, index, sbom)

	// The chart by the digest verified, as docs/install.md installs it.
	pulled := t.TempDir()
	if _, err := helm(t, nil, "pull", "oci://"+chartRepo.String()+"@"+chart.DigestStr(), "--plain-http", "--destination", pulled); err != nil {
		t.Fatal(err)
	}
	local, err := os.ReadFile(filepath.Join(dist, "tunnelgate-"+version+".tgz"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(pulled, "*.tgz"))
	if len(files) != 1 {
		t.Fatalf("helm pull by digest wrote %v, want one chart archive", files)
	}
	if got, err := os.ReadFile(files[0]); err != nil || !bytes.Equal(got, local) {
		t.Errorf("helm pull by digest gives another chart than make release wrote (%v)", err)
	}

	// Another key's signature is none of these.
	for _, args := range [][]string{
		{"verify", "--key", filepath.Join(other, "cosign.pub"), "--insecure-ignore-tlog=true", index.String()},
		{"verify", "--key", filepath.Join(other, "cosign.pub"), "--insecure-ignore-tlog=true", chart.String()},
		{"verify-attestation", "--key", filepath.Join(other, "cosign.pub"), "--insecure-ignore-tlog=true", "--type", "spdxjson", index.String()},
	} {
		c.refused(t, "another key", args, 1, "accepted signatures do not match threshold, Found: 0")
	}

	// The tags moved to tampered manifests: unsigned, so refused, by tag
	// as by digest.
	var tamperedIndex name.Digest
	for _, ref := range []name.Digest{index, chart} {
		tag := ref.Context().Tag(version)
		tampered := tamper(t, ref, tag)
		c.refused(t, "a tampered manifest", []string{"verify", "--key", pub, "--insecure-ignore-tlog=true", tampered.String()}, 10, "no signatures found")
		c.refused(t, "a tag moved to a tampered manifest", []string{"verify", "--key", pub, "--insecure-ignore-tlog=true", tag.String()}, 10, "no signatures found")

		// The genuine signatures copied to it: found, and refused, for
		// they sign another digest.
		copyReferrers(t, ref, tampered)
		c.refused(t, "signatures copied to a tampered manifest", []string{"verify", "--key", pub, "--insecure-ignore-tlog=true", tampered.String()}, 1, notThisDigest)
		if ref == index {
			tamperedIndex = tampered
		}
	}
	c.refused(t, "an attestation copied to a tampered index", []string{"verify-attestation", "--key", pub, "--insecure-ignore-tlog=true", "--type", "spdxjson", tamperedIndex.String()}, 1, notThisDigest)
}

// notThisDigest is cosign's refusal of a good signature of another digest.
const notThisDigest = "provided artifact digest does not match any digest in statement"

// cosign runs the cosign test/tools/chart builds, with a home of its own.
type cosign struct {
	path, home, password string
}

func newCosign(t *testing.T) *cosign {
	return &cosign{path: cosignPath(t), home: t.TempDir(), password: "a test password"}
}

// run runs cosign with args and returns its stdout, stderr and error.
func (c *cosign) run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), c.path, args...)
	cmd.Dir = c.home
	cmd.Env = append(os.Environ(), "HOME="+c.home, "COSIGN_PASSWORD="+c.password)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// keyPair makes a key pair with cosign generate-key-pair in a directory
// of its own and returns the directory (cosign.key, cosign.pub).
func (c *cosign) keyPair(t *testing.T, what string) string {
	t.Helper()
	dir := filepath.Join(c.home, what)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := c.run(t, "generate-key-pair", "--output-key-prefix", filepath.Join(dir, "cosign"))
	if err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, stderr)
	}
	for _, f := range []string{"cosign.key", "cosign.pub"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("cosign generate-key-pair wrote no %s: %v\n%s", f, err, stderr)
		}
	}
	return dir
}

// refused checks that cosign args is refused: exit status code, nothing
// printed on stdout (where a verified payload goes), and says, the reason,
// on stderr. cosign exits 10 when it finds no signature, 1 when none it
// finds verifies.
func (c *cosign) refused(t *testing.T, what string, args []string, code int, says string) {
	t.Helper()
	stdout, stderr, err := c.run(t, args...)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != code || strings.TrimSpace(stdout) != "" || !strings.Contains(stderr, says) {
		t.Errorf("%s: cosign %s: %v, want exit status %d saying %q\nstdout: %s\nstderr: %s", what, strings.Join(args, " "), err, code, says, stdout, stderr)
		return
	}
	t.Logf("%s: cosign %s exits %d: %s", what, args[0], code, lastLine(stderr))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// checkAttestation checks the DSSE envelopes cosign verify-attestation
// printed: in-toto statements about the index whose predicate is sbom.
func checkAttestation(t *testing.T, stdout string, index name.Digest, sbom []byte) {
	t.Helper()
	var want any
	if err := json.Unmarshal(sbom, &want); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	n := 0
	for dec.More() {
		var env struct{ PayloadType, Payload string }
		if err := dec.Decode(&env); err != nil {
			t.Fatalf("cosign verify-attestation printed %q: %v", stdout, err)
		}
		payload, err := base64.StdEncoding.DecodeString(env.Payload)
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			PredicateType string
			Subject       []struct{ Digest map[string]string }
			Predicate     any
		}
		if err := json.Unmarshal(payload, &st); err != nil {
			t.Fatal(err)
		}
		if env.PayloadType != "application/vnd.in-toto+json" || st.PredicateType != "https://spdx.dev/Document" {
			t.Errorf("the attestation is %s of %s, want an in-toto statement of an SPDX document", env.PayloadType, st.PredicateType)
		}
		if len(st.Subject) != 1 || "sha256:"+st.Subject[0].Digest["sha256"] != index.DigestStr() {
			t.Errorf("the attestation's subject is %+v, want the index %s", st.Subject, index.DigestStr())
		}
		if !reflect.DeepEqual(st.Predicate, want) {
			t.Errorf("the attested predicate is not the SBOM make release wrote")
		}
		n++
	}
	if n == 0 {
		t.Fatalf("cosign verify-attestation printed no attestation:\n%s", stdout)
	}
}

// headDigest is the digest a tag names, as the registry says.
func headDigest(t *testing.T, tag name.Tag) name.Digest {
	t.Helper()
	desc, err := remote.Head(tag)
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Digest(desc.Digest.String())
}

// tamper pushes ref's manifest with an annotation added, under tag, and
// returns it by digest: what an attacker with push access does to serve
// other content under the release's tag.
func tamper(t *testing.T, ref name.Digest, tag name.Tag) name.Digest {
	t.Helper()
	got, err := remote.Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(got.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	ann, _ := m["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
	}
	ann["tampered"] = "yes"
	m["annotations"] = ann
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return putManifest(t, tag, raw, got.MediaType)
}

// copyReferrers pushes a copy of every referrer of from (the signatures,
// the attestation, the SBOM) with to as its subject.
func copyReferrers(t *testing.T, from, to name.Digest) {
	t.Helper()
	refs, err := remote.Referrers(from)
	if err != nil {
		t.Fatal(err)
	}
	im, err := refs.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	subject, err := remote.Head(to)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		got, err := remote.Get(from.Context().Digest(d.Digest.String()))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(got.Manifest, &m); err != nil {
			t.Fatal(err)
		}
		m["subject"] = v1.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		h, _, _ := v1.SHA256(bytes.NewReader(raw))
		putManifest(t, from.Context().Digest(h.String()), raw, got.MediaType)
	}
	after, err := remote.Referrers(to)
	if err != nil {
		t.Fatal(err)
	}
	if am, err := after.IndexManifest(); err != nil || len(im.Manifests) == 0 || len(am.Manifests) != len(im.Manifests) {
		t.Fatalf("%s has %v referrers after copying %d (%v)", to, am, len(im.Manifests), err)
	}
}

// putManifest pushes a raw manifest to ref (a tag or its digest).
func putManifest(t *testing.T, ref name.Reference, raw []byte, mt types.MediaType) name.Digest {
	t.Helper()
	if err := remote.Put(ref, rawManifest{raw, mt}); err != nil {
		t.Fatal(err)
	}
	h, _, _ := v1.SHA256(bytes.NewReader(raw))
	return ref.Context().Digest(h.String())
}

type rawManifest struct {
	raw []byte
	mt  types.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return m.mt, nil }
