// This file implements the publish command.

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tunnelgate/tunnelgate/release/chartpkg"
	"github.com/tunnelgate/tunnelgate/release/publish"
	"github.com/tunnelgate/tunnelgate/release/sbom"
)

// runPublish is the publish command: the image, its SBOM and the chart,
// made and pushed.
func runPublish(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("publish", stderr)
	parse := releaseFlags(fs)
	registry := fs.String("registry", "", "where to push: a registry host and optional path, e.g. ghcr.io/acme or 127.0.0.1:5000/tunnelgate")
	chartDir := fs.String("chart", "chart", "the chart to package")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	o, err := parse()
	if err != nil {
		return err
	}
	if *registry == "" {
		return usageError{fmt.Errorf("-registry is required, e.g. -registry ghcr.io/acme")}
	}
	// Refuse what cannot be pushed before minutes of building.
	if err := chartpkg.CheckVersion(o.version); err != nil {
		return usageError{fmt.Errorf("%w; e.g. make release VERSION=0.2.0", err)}
	}
	imageRepo, err := publish.ImageRepository(*registry)
	if err != nil {
		return usageError{err}
	}

	b, err := buildImage(ctx, o, stdout)
	if err != nil {
		return err
	}
	chart, err := chartpkg.Package(os.DirFS(*chartDir), chartpkg.Release{
		Version: o.version, ImageRepository: imageRepo.String(), ImageDigest: b.digest.String(), Created: o.created,
	})
	if err != nil {
		return err
	}
	archive := filepath.Join(o.dist, chart.FileName())
	if err := os.WriteFile(archive, chart.Archive, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "chart %s %s in %s, its image %s@%s\n", chart.Name, chart.Version, archive, imageRepo, b.digest)
	chartRepo, err := publish.ChartRepository(*registry, chart.Name)
	if err != nil {
		return usageError{err}
	}

	tag := publish.Tag(o.version)
	imageRef, err := publish.Index(ctx, imageRepo.Tag(tag), b.index)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pushed the image  %s:%s@%s\n", imageRepo, tag, imageRef.DigestStr())
	sbomRef, err := publish.SBOM(ctx, imageRepo.Tag(tag+publish.SBOMTagSuffix), imageRef, b.sbom, sbom.MediaType,
		map[string]string{"org.opencontainers.image.created": o.created.Format(time.RFC3339)})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pushed the SBOM   %s:%s%s@%s (a referrer of the image)\n", imageRepo, tag, publish.SBOMTagSuffix, sbomRef.DigestStr())
	chartRef, err := publish.Chart(ctx, chartRepo.Tag(tag), chart.Config, chart.Archive,
		chartpkg.ConfigMediaType, chartpkg.LayerMediaType, chart.Annotations)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pushed the chart  %s:%s@%s\n", chartRepo, tag, chartRef.DigestStr())
	fmt.Fprintf(stdout, "\ninstall with:\n  helm install tunnelgate oci://%s --version %s --namespace tunnelgate-system --create-namespace ...\n", chartRepo, chart.Version)
	return nil
}
