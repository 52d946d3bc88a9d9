// Package gobuild builds the tunnelgate binaries of a release for one
// architecture, the one way every release path builds them (`make image`,
// `make release`, the Dockerfile through `go run ./release rootfs`):
// tunnelgate (every command; the image's entrypoint) and tunnelgate-proxy
// (the proxy alone, which proxy Pods run for its smaller resident set),
// both by one go build, static (no cgo), -trimpath so no path of the
// build machine is in them, stripped, with the version linked in. Version
// control stamping is off: it would make the binaries depend on whether
// the tree has a .git (a Docker build context may not) and on untracked
// files; the revision is in the image's labels and SBOM instead. The rest
// of Go's build info (the Go release, every module and its hash, the
// build settings) is in each binary, and release/sbom reads it. Go builds
// the same bytes from the same source with the same Go release, which the
// image's reproducibility rests on.
package gobuild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// Packages are the main packages built, by import path so that the build
// works from any directory of the module. Each binary is named after the
// last element of its path.
var Packages = []string{
	"github.com/tunnelgate/tunnelgate/cmd/tunnelgate",
	"github.com/tunnelgate/tunnelgate/cmd/tunnelgate-proxy",
}

// Binaries are the names of the binaries Build writes, in the order of
// Packages: tunnelgate, tunnelgate-proxy.
func Binaries() []string {
	names := make([]string, len(Packages))
	for i, p := range Packages {
		names[i] = path.Base(p)
	}
	return names
}

// Args returns the arguments of `go` that build the binaries of version
// into the directory outDir.
func Args(version, outDir string) []string {
	// A trailing separator makes -o a directory for every binary.
	return append([]string{"build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X main.version=" + version,
		"-o", filepath.Clean(outDir) + string(filepath.Separator)}, Packages...)
}

// Env returns the environment additions for building for linux/arch. The
// instruction set levels are the baselines, whatever the machine's
// environment says, and GOFLAGS is emptied so that Args alone say how the
// binary is built.
func Env(arch string) []string {
	return []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + arch, "GOAMD64=v1", "GOARM64=v8.0", "GOFLAGS="}
}

// Build runs go build in dir (any directory of the module) for
// linux/arch, writing the binaries to the directory outDir under their
// names (Binaries); go's output is in the error.
func Build(ctx context.Context, dir, arch, version, outDir string) error {
	if version == "" || strings.ContainsAny(version, " \t\n'\"") {
		return fmt.Errorf("version %q: give one without spaces or quotes, e.g. 1.2.3", version)
	}
	cmd := exec.CommandContext(ctx, "go", Args(version, outDir)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), Env(arch)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for linux/%s: %w\n%s", arch, err, b)
	}
	return nil
}
