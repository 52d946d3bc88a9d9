package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tunnelgate/tunnelgate/release/gobuild"
	"github.com/tunnelgate/tunnelgate/release/image"
)

// Where the binaries go in DIST: bin/linux-ARCH/tunnelgate.
const (
	binDir     = "bin"
	binaryName = "tunnelgate"
)

// runBinaries is the binaries command: the release's binaries alone.
// `make chart-check` runs it to fill the build cache before its tests,
// whose timeout a first arm64 build would eat.
func runBinaries(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("binaries", stderr)
	version := fs.String("version", "dev", "the version linked into the binaries")
	arches := fs.String("arch", "amd64,arm64", "the linux architectures, comma-separated")
	dist := fs.String("dist", "dist", "the directory the binaries are written to, under bin/")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	_, err := buildBinaries(ctx, releaseVersion(*version), splitArches(*arches), *dist, stdout)
	return err
}

// buildBinaries builds the binary of version for each architecture into
// dist and returns them.
func buildBinaries(ctx context.Context, version string, arches []string, dist string, stdout io.Writer) ([]image.Platform, error) {
	if len(arches) == 0 {
		return nil, usageError{fmt.Errorf("-arch names no architecture")}
	}
	var platforms []image.Platform
	for _, arch := range arches {
		out, err := filepath.Abs(filepath.Join(dist, binDir, "linux-"+arch, binaryName))
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return nil, err
		}
		fmt.Fprintf(stdout, "building %s %s for linux/%s\n", binaryName, version, arch)
		if err := gobuild.Build(ctx, ".", arch, version, out); err != nil {
			return nil, err
		}
		data, err := os.ReadFile(out)
		if err != nil {
			return nil, err
		}
		platforms = append(platforms, image.Platform{Arch: arch, Binary: data})
	}
	return platforms, nil
}

// splitArches reads a comma-separated list of architectures.
func splitArches(list string) []string {
	var arches []string
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a != "" {
			arches = append(arches, a)
		}
	}
	return arches
}
