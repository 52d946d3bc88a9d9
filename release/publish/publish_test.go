package publish

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/tunnelgate/tunnelgate/release/image"
)

// startRegistry serves an OCI registry on loopback, with or without the
// referrers API, and returns its host:port.
func startRegistry(t *testing.T, referrers bool) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(
		registry.WithReferrersSupport(referrers),
		registry.Logger(log.New(io.Discard, "", 0)),
	))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func testIndex(t *testing.T) v1.ImageIndex {
	t.Helper()
	idx, err := image.Build(image.Metadata{Version: "1.2.3", Revision: "abc", Created: time.Unix(1e9, 0)},
		[]image.Platform{{Arch: "amd64", Binaries: []image.Binary{{Name: "tunnelgate", Data: []byte("a")}}},
			{Arch: "arm64", Binaries: []image.Binary{{Name: "tunnelgate", Data: []byte("b")}}}})
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func TestRepositories(t *testing.T) {
	img, err := ImageRepository("oci://127.0.0.1:5000/acme/")
	if err != nil {
		t.Fatal(err)
	}
	chart, err := ChartRepository("127.0.0.1:5000/acme", "tunnelgate")
	if err != nil {
		t.Fatal(err)
	}
	if img.String() != "127.0.0.1:5000/acme/tunnelgate" || chart.String() != "127.0.0.1:5000/acme/charts/tunnelgate" {
		t.Errorf("repositories %s and %s", img, chart)
	}
	if _, err := ImageRepository("Not A Registry"); err == nil {
		t.Error("a registry with spaces was taken")
	}
	if Tag("1.2.3+build.4") != "1.2.3_build.4" {
		t.Errorf("Tag(1.2.3+build.4) = %s", Tag("1.2.3+build.4"))
	}
}

// The index, its SBOM and a chart arrive as they were made, on a registry
// with the referrers API and on one without (the fallback tag).
func TestPushRelease(t *testing.T) {
	for _, referrers := range []bool{true, false} {
		host := startRegistry(t, referrers)
		ctx := t.Context()
		var repos struct{ Image, Chart name.Repository }
		repos.Image, _ = ImageRepository(host + "/acme")
		repos.Chart, _ = ChartRepository(host+"/acme", "tunnelgate")
		idx := testIndex(t)
		want, _ := idx.Digest()
		imageRef, err := Index(ctx, repos.Image.Tag("1.2.3"), idx)
		if err != nil {
			t.Fatal(err)
		}
		if imageRef.DigestStr() != want.String() {
			t.Fatalf("pushed %s, built %s", imageRef, want)
		}
		got, err := remote.Index(repos.Image.Tag("1.2.3"))
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := got.Digest(); d != want {
			t.Errorf("the tag points at %s, want %s", d, want)
		}

		doc := []byte(`{"spdxVersion":"SPDX-2.3"}`)
		sbomRef, err := SBOM(ctx, repos.Image.Tag("1.2.3"+SBOMTagSuffix), imageRef, doc, "application/spdx+json", map[string]string{"k": "v"})
		if err != nil {
			t.Fatal(err)
		}
		refs, err := remote.Referrers(imageRef)
		if err != nil {
			t.Fatalf("referrers (API %v): %v", referrers, err)
		}
		im, _ := refs.IndexManifest()
		// (The artifactType in the listing is not checked: go-containerregistry's
		// registry reports the config's media type there.)
		if len(im.Manifests) != 1 || im.Manifests[0].Digest.String() != sbomRef.DigestStr() {
			t.Errorf("referrers of the index (API %v): %+v, want the SBOM %s", referrers, im.Manifests, sbomRef.DigestStr())
		}
		if !referrers {
			fallback := repos.Image.Tag(strings.Replace(want.String(), ":", "-", 1))
			if _, err := remote.Head(fallback); err != nil {
				t.Errorf("no fallback tag %s: %v", fallback, err)
			}
		}
		sbom, err := remote.Get(repos.Image.Tag("1.2.3" + SBOMTagSuffix))
		if err != nil {
			t.Fatal(err)
		}
		var m v1.Manifest
		if err := json.Unmarshal(sbom.Manifest, &m); err != nil {
			t.Fatal(err)
		}
		if m.Subject == nil || m.Subject.Digest != want || m.Subject.MediaType != types.OCIImageIndex || m.ArtifactType != "application/spdx+json" ||
			m.Config.MediaType != "application/vnd.oci.empty.v1+json" || len(m.Layers) != 1 {
			t.Fatalf("SBOM manifest %s", sbom.Manifest)
		}
		layer, err := remote.Layer(repos.Image.Digest(m.Layers[0].Digest.String()))
		if err != nil {
			t.Fatal(err)
		}
		rc, _ := layer.Compressed()
		b, _ := io.ReadAll(rc)
		if !bytes.Equal(b, doc) {
			t.Errorf("the SBOM reads back as %s", b)
		}

		config, archive := []byte(`{"name":"tunnelgate"}`), []byte("chart archive")
		chartRef, err := Chart(ctx, repos.Chart.Tag("1.2.3"), config, archive,
			"application/vnd.cncf.helm.config.v1+json", "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
			map[string]string{"org.opencontainers.image.version": "1.2.3"})
		if err != nil {
			t.Fatal(err)
		}
		chart, err := remote.Get(repos.Chart.Tag("1.2.3"))
		if err != nil {
			t.Fatal(err)
		}
		if chart.Digest.String() != chartRef.DigestStr() {
			t.Errorf("chart tag at %s, pushed %s", chart.Digest, chartRef)
		}
		m = v1.Manifest{}
		if err := json.Unmarshal(chart.Manifest, &m); err != nil {
			t.Fatal(err)
		}
		if m.Config.MediaType != "application/vnd.cncf.helm.config.v1+json" || len(m.Layers) != 1 ||
			m.Layers[0].MediaType != "application/vnd.cncf.helm.chart.content.v1.tar+gzip" || m.Subject != nil ||
			m.Annotations["org.opencontainers.image.version"] != "1.2.3" {
			t.Errorf("chart manifest %s", chart.Manifest)
		}
	}
}
