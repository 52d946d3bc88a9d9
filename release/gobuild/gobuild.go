// Package gobuild builds the tunnelgate binary of a release for one
// architecture, the one way every release path builds it (`make image`,
// `make release`, the Dockerfile through `go run ./release rootfs`):
// static (no cgo), -trimpath so no path of the build machine is in it,
// stripped, with the version linked in. Version control stamping is off:
// it would make the binary depend on whether the tree has a .git (a
// Docker build context may not) and on untracked files; the revision is in
// the image's labels and SBOM instead. The rest of Go's build info (the Go
// release, every module and its hash, the build settings) is in the
// binary, and release/sbom reads it. Go builds the same bytes from the
// same source with the same Go release, which the image's reproducibility
// rests on.
package gobuild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Package is the main package built, by import path so that the build
// works from any directory of the module.
const Package = "github.com/tunnelgate/tunnelgate/cmd/tunnelgate"

// Args returns the arguments of `go` that build the binary of version
// into out.
func Args(version, out string) []string {
	return []string{"build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X main.version=" + version,
		"-o", out, Package}
}

// Env returns the environment additions for building for linux/arch. The
// instruction set levels are the baselines, whatever the machine's
// environment says, and GOFLAGS is emptied so that Args alone say how the
// binary is built.
func Env(arch string) []string {
	return []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + arch, "GOAMD64=v1", "GOARM64=v8.0", "GOFLAGS="}
}

// Build runs go build in dir (any directory of the module) for
// linux/arch, writing the binary to out; go's output is in the error.
func Build(ctx context.Context, dir, arch, version, out string) error {
	if version == "" || strings.ContainsAny(version, " \t\n'\"") {
		return fmt.Errorf("version %q: give one without spaces or quotes, e.g. 1.2.3", version)
	}
	cmd := exec.CommandContext(ctx, "go", Args(version, out)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), Env(arch)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for linux/%s: %w\n%s", arch, err, b)
	}
	return nil
}
