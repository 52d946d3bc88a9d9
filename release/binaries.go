// This file implements the binaries command.

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

// Where the binaries go in DIST: bin/linux-ARCH/tunnelgate and
// bin/linux-ARCH/tunnelgate-proxy (gobuild.Binaries).
const binDir = "bin"

// runBinaries is the binaries command: the release's binaries alone.
// `make chart-check` runs it to fill the build cache before its tests,
// whose timeout a first arm64 build would eat.
func runBinaries(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("binaries", stderr)
	version := fs.String("version", "dev", "the version linked into the binaries")
	arches := fs.String("arch", "amd64,arm64", "the linux architectures, comma-separated")
	dist := fs.String("dist", "dist", "the directory the binaries are written to, under bin/")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	_, err := buildBinaries(ctx, releaseVersion(*version), splitArches(*arches), *dist, stdout)
	return err
}

// buildBinaries builds the binaries of version for each architecture
// into dist and returns them.
func buildBinaries(ctx context.Context, version string, arches []string, dist string, stdout io.Writer) ([]image.Platform, error) {
	if len(arches) == 0 {
		return nil, usageError{fmt.Errorf("-arch names no architecture")}
	}
	var platforms []image.Platform
	for _, arch := range arches {
		out, err := filepath.Abs(filepath.Join(dist, binDir, "linux-"+arch))
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			return nil, err
		}
		fmt.Fprintf(stdout, "building %s %s for linux/%s\n", strings.Join(gobuild.Binaries(), " and "), version, arch)
		binaries, err := buildInto(ctx, arch, version, out)
		if err != nil {
			return nil, err
		}
		platforms = append(platforms, image.Platform{Arch: arch, Binaries: binaries})
	}
	return platforms, nil
}

// buildInto builds the binaries of version for linux/arch into the
// directory out and reads them back.
func buildInto(ctx context.Context, arch, version, out string) ([]image.Binary, error) {
	if err := gobuild.Build(ctx, ".", arch, version, out); err != nil {
		return nil, err
	}
	var binaries []image.Binary
	for _, name := range gobuild.Binaries() {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			return nil, fmt.Errorf("reading the binary built: %w", err)
		}
		binaries = append(binaries, image.Binary{Name: name, Data: data})
	}
	return binaries, nil
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
