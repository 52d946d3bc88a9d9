// This file implements the image command.

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/tunnelgate/tunnelgate/release/image"
	"github.com/tunnelgate/tunnelgate/release/publish"
	"github.com/tunnelgate/tunnelgate/release/sbom"
)

// runImage is the image command.
func runImage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("image", stderr)
	parse := releaseFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	o, err := parse()
	if err != nil {
		return err
	}
	_, err = buildImage(ctx, o, stdout)
	return err
}

// built is an image index made and written to DIST.
type built struct {
	index  v1.ImageIndex
	digest v1.Hash
	sbom   []byte
}

// Names of the artifacts in DIST.
const (
	layoutDir = "image" // the OCI image layout
	sbomFile  = "tunnelgate.spdx.json"
)

// buildImage builds the binaries, the index and its SBOM, writes them to
// o.dist, and says what it made on stdout.
func buildImage(ctx context.Context, o options, stdout io.Writer) (built, error) {
	platforms, err := buildBinaries(ctx, o.version, o.arches, o.dist, stdout)
	if err != nil {
		return built{}, err
	}
	var binaries []sbom.Binary
	for _, p := range platforms {
		for _, b := range p.Binaries {
			binaries = append(binaries, sbom.Binary{Arch: p.Arch, Name: b.Name, Data: b.Data})
		}
	}

	idx, err := image.Build(image.Metadata{Version: o.version, Revision: o.revision, Created: o.created}, platforms)
	if err != nil {
		return built{}, err
	}
	digest, err := idx.Digest()
	if err != nil {
		return built{}, err
	}
	doc, err := sbom.SPDX(sbom.Image{
		Name: image.Title, Version: o.version, Revision: o.revision, Source: image.Source,
		License: image.Licenses, Digest: digest.String(), Created: o.created,
	}, binaries)
	if err != nil {
		return built{}, err
	}

	layout := filepath.Join(o.dist, layoutDir)
	if err := os.RemoveAll(layout); err != nil {
		return built{}, err
	}
	if err := image.WriteLayout(layout, idx, publish.Tag(o.version)); err != nil {
		return built{}, err
	}
	if err := os.WriteFile(filepath.Join(o.dist, sbomFile), doc, 0o644); err != nil {
		return built{}, err
	}

	fmt.Fprintf(stdout, "image index %s (version %s), an OCI layout in %s\n", digest, o.version, layout)
	if err := describePlatforms(idx, stdout); err != nil {
		return built{}, err
	}
	fmt.Fprintf(stdout, "SBOM (SPDX 2.3) in %s\n", filepath.Join(o.dist, sbomFile))
	return built{index: idx, digest: digest, sbom: doc}, nil
}

// describePlatforms prints each image of the index with its size.
func describePlatforms(idx v1.ImageIndex, stdout io.Writer) error {
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		m, err := img.Manifest()
		if err != nil {
			return err
		}
		var size int64
		for _, l := range m.Layers {
			size += l.Size
		}
		fmt.Fprintf(stdout, "  %s/%s  %s  layer %.1f MB compressed\n", d.Platform.OS, d.Platform.Architecture, d.Digest, float64(size)/1e6)
	}
	return nil
}
