// This file implements the rootfs command.

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/tunnelgate/tunnelgate/release/image"
)

// runRootFS is the rootfs command: the Dockerfile's build stage runs it.
func runRootFS(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("rootfs", stderr)
	version := fs.String("version", "dev", "the version linked into the binaries")
	arch := fs.String("arch", runtime.GOARCH, "the linux architecture to build for")
	out := fs.String("out", "", "the directory to write, which must not exist")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usageError{fmt.Errorf("-out is required: the directory to write the root filesystem to")}
	}
	tmp, err := os.MkdirTemp("", "tunnelgate-rootfs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	binaries, err := buildInto(ctx, *arch, releaseVersion(*version), tmp)
	if err != nil {
		return err
	}
	if err := image.WriteDir(*out, image.RootFS(binaries)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "root filesystem for linux/%s in %s\n", *arch, *out)
	return nil
}
