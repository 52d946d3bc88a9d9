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
	"github.com/tunnelgate/tunnelgate/release/sign"
)

// runPublish is the publish command: the image, its SBOM and the chart,
// made and pushed.
func runPublish(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("publish", stderr)
	parse := releaseFlags(fs)
	registry := fs.String("registry", "", "where to push: a registry host and optional path, e.g. ghcr.io/acme or 127.0.0.1:5000/tunnelgate")
	chartDir := fs.String("chart", "chart", "the chart to package")
	signMode := fs.String("sign", "", "how to sign the release with cosign: key (the default when -sign-key is given) or keyless; neither: unsigned")
	signKey := fs.String("sign-key", "", "the private key to sign with: a file of cosign generate-key-pair (its password in COSIGN_PASSWORD) or any reference cosign's --key takes, e.g. a KMS URI")
	tlog := fs.Bool("tlog", true, "upload the signatures to the public transparency log (Rekor); false for a private or air-gapped release (key signing only)")
	cosign := fs.String("cosign", "cosign", "the cosign program that signs")
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
	signing, err := sign.ParseOptions(*signMode, *signKey, *tlog, *cosign)
	if err != nil {
		return usageError{err}
	}
	if signing.Signed() {
		if _, err := signing.LookCosign(); err != nil {
			return usageError{err}
		}
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

	signed := sign.Release{Index: imageRef.String(), Chart: chartRef.String(), SBOM: filepath.Join(o.dist, sbomFile)}
	if err := sign.Run(ctx, signing, signed, stdout, stderr); err != nil {
		return err
	}
	if signing.Signed() {
		fmt.Fprintf(stdout, "\nsigned the image and the chart, and attested the SBOM to the image (%s); verify with:\n", signing.Mode)
		for _, c := range sign.VerifyCommands(signing, signed, "cosign.pub") {
			fmt.Fprintf(stdout, "  %s\n", c)
		}
	} else {
		fmt.Fprintf(stdout, "\nthe release is not signed: give COSIGN_KEY (or SIGN=keyless in a CI with OIDC) to sign it, as docs/install.md says\n")
	}
	fmt.Fprintf(stdout, "\ninstall with:\n  helm install tunnelgate oci://%s --version %s --namespace tunnelgate-system --create-namespace ...\n", chartRepo, chart.Version)
	return nil
}
