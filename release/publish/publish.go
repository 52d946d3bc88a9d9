// Package publish pushes a release to an OCI registry: the image index,
// its SBOM, and the chart, each by the registry API, with the credentials
// of the Docker config (~/.docker/config.json, which `crane auth login`
// and `docker login` write) and plain HTTP only for loopback and private
// addresses (go-containerregistry's rule).
//
// Under a registry prefix R (e.g. ghcr.io/acme or 127.0.0.1:5000/tunnelgate):
//
//	R/tunnelgate:VERSION            the image index
//	R/tunnelgate:VERSION.sbom       the SBOM artifact, whose subject is the index
//	R/charts/tunnelgate:VERSION     the chart, as helm push lays it out
//
// The SBOM is an OCI 1.1 referrer of the index (artifactType
// application/spdx+json), so referrer-aware tools list it with the image;
// on a registry without the referrers API, go-containerregistry keeps the
// spec's fallback tag (sha256-<index digest>) up to date instead. The
// .sbom tag is there for tools that only follow tags (crane copy, crane
// manifest).
package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// SBOMTagSuffix follows the version in the SBOM's tag.
const SBOMTagSuffix = ".sbom"

// ImageRepository is where the image goes under prefix (a registry host,
// optionally with a path, optionally written oci://HOST/PATH).
func ImageRepository(prefix string) (name.Repository, error) {
	return repository(prefix, "tunnelgate")
}

// ChartRepository is where the chart chartName goes under prefix.
func ChartRepository(prefix, chartName string) (name.Repository, error) {
	return repository(prefix, "charts/"+chartName)
}

func repository(prefix, path string) (name.Repository, error) {
	prefix = strings.TrimSuffix(strings.TrimPrefix(prefix, "oci://"), "/")
	r, err := name.NewRepository(prefix + "/" + path)
	if err != nil {
		return name.Repository{}, fmt.Errorf("registry %q: give a host and optional path, e.g. ghcr.io/acme or 127.0.0.1:5000/tunnelgate: %w", prefix, err)
	}
	return r, nil
}

// Tag is the tag of a version: OCI tags have no '+', so as helm does, a
// build metadata '+' becomes '_'.
func Tag(version string) string { return strings.ReplaceAll(version, "+", "_") }

// options are the remote options of every request.
func options(ctx context.Context) []remote.Option {
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithUserAgent("tunnelgate-release"),
	}
}

// Index pushes the image index and its images under tag, and returns its
// reference by digest.
func Index(ctx context.Context, tag name.Tag, idx v1.ImageIndex) (name.Digest, error) {
	if err := remote.WriteIndex(tag, idx, options(ctx)...); err != nil {
		return name.Digest{}, fmt.Errorf("pushing the image to %s: %w", tag, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return tag.Context().Digest(d.String()), nil
}

// emptyConfig is the OCI 1.1 empty descriptor's content, the config of an
// artifact that needs none.
var emptyConfig = []byte("{}")

// SBOM pushes doc as an artifact whose subject is the index (a referrer),
// tagged tag, and returns its reference by digest.
func SBOM(ctx context.Context, tag name.Tag, subject name.Digest, doc []byte, mediaType string, annotations map[string]string) (name.Digest, error) {
	desc, err := remote.Head(subject, options(ctx)...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("the SBOM's subject %s: %w", subject, err)
	}
	return pushArtifact(ctx, tag, artifact{
		artifactType: mediaType,
		config:       blob{types.MediaType("application/vnd.oci.empty.v1+json"), emptyConfig},
		layer:        blob{types.MediaType(mediaType), doc},
		layerTitle:   "tunnelgate.spdx.json",
		subject:      &v1.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size},
		annotations:  annotations,
	})
}

// Chart pushes a packaged chart as helm push does (config: Chart.yaml as
// JSON; one layer: the archive), tagged tag, and returns its reference by
// digest.
func Chart(ctx context.Context, tag name.Tag, config, archive []byte, configType, layerType string, annotations map[string]string) (name.Digest, error) {
	return pushArtifact(ctx, tag, artifact{
		config:      blob{types.MediaType(configType), config},
		layer:       blob{types.MediaType(layerType), archive},
		annotations: annotations,
	})
}

type blob struct {
	mediaType types.MediaType
	data      []byte
}

// artifact is an OCI manifest with a config and one layer.
type artifact struct {
	artifactType  string
	config, layer blob
	layerTitle    string
	subject       *v1.Descriptor
	annotations   map[string]string
}

func descriptorOf(b blob) v1.Descriptor {
	h, n, _ := v1.SHA256(bytes.NewReader(b.data)) // reading bytes cannot fail
	return v1.Descriptor{MediaType: b.mediaType, Digest: h, Size: n}
}

// manifest returns the artifact's manifest bytes.
func (a artifact) manifest() ([]byte, error) {
	layer := descriptorOf(a.layer)
	if a.layerTitle != "" {
		layer.Annotations = map[string]string{"org.opencontainers.image.title": a.layerTitle}
	}
	return json.Marshal(v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  a.artifactType,
		Config:        descriptorOf(a.config),
		Layers:        []v1.Descriptor{layer},
		Subject:       a.subject,
		Annotations:   a.annotations,
	})
}

// rawManifest is a manifest as remote.Put takes it.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error)        { return m, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

func pushArtifact(ctx context.Context, tag name.Tag, a artifact) (name.Digest, error) {
	for _, b := range []blob{a.config, a.layer} {
		if err := remote.WriteLayer(tag.Context(), static.NewLayer(b.data, b.mediaType), options(ctx)...); err != nil {
			return name.Digest{}, fmt.Errorf("pushing a blob of %s: %w", tag, err)
		}
	}
	m, err := a.manifest()
	if err != nil {
		return name.Digest{}, err
	}
	if err := remote.Put(tag, rawManifest(m), options(ctx)...); err != nil {
		return name.Digest{}, fmt.Errorf("pushing %s: %w", tag, err)
	}
	h, _, _ := v1.SHA256(bytes.NewReader(m))
	return tag.Context().Digest(h.String()), nil
}
