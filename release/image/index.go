// This file builds the image index.

package image

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Platform is one architecture of the index and the binaries built for
// it (GOOS linux).
type Platform struct {
	Arch     string // GOARCH: amd64, arm64
	Binaries []Binary
}

// Build returns the image index over one image per platform, in the order
// given. The same inputs give the same bytes, so the same digest.
func Build(m Metadata, platforms []Platform) (v1.ImageIndex, error) {
	if len(platforms) == 0 {
		return nil, errors.New("an image index needs at least one platform")
	}
	if m.Version == "" || m.Revision == "" || m.Created.IsZero() {
		return nil, fmt.Errorf("the image needs a version, a revision and a creation time, got %+v", m)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	seen := map[string]bool{}
	for _, p := range platforms {
		if seen[p.Arch] {
			return nil, fmt.Errorf("platform linux/%s given twice", p.Arch)
		}
		seen[p.Arch] = true
		img, err := platformImage(m, p)
		if err != nil {
			return nil, fmt.Errorf("the linux/%s image: %w", p.Arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: p.Arch}},
		})
	}
	return mutate.Annotations(idx, Labels(m)).(v1.ImageIndex), nil
}

// platformImage is the image of one platform: its config and its one layer.
func platformImage(m Metadata, p Platform) (v1.Image, error) {
	if p.Arch == "" {
		return nil, errors.New("a platform needs an architecture")
	}
	if err := checkBinaries(p.Binaries); err != nil {
		return nil, err
	}
	var tarball bytes.Buffer
	if err := WriteTar(&tarball, RootFS(p.Binaries), m.Created); err != nil {
		return nil, err
	}
	l, err := newLayer(tarball.Bytes())
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: m.Created.UTC()}
	user := strconv.Itoa(UID) + ":" + strconv.Itoa(GID)
	cfg := &v1.ConfigFile{
		Architecture: p.Arch,
		OS:           "linux",
		Created:      created,
		Config: v1.Config{
			User:       user,
			Entrypoint: []string{Entrypoint},
			WorkingDir: "/",
			Labels:     Labels(m),
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	// mutate.Append adds the layer's diff ID and this history entry to cfg.
	return mutate.Append(img, mutate.Addendum{
		Layer: l,
		History: v1.History{
			Created:   created,
			CreatedBy: "go run ./release: " + binaryPaths(p.Binaries) + ", /etc/passwd, /etc/group, " + CABundlePath,
			Comment:   "tunnelgate " + m.Version + " for linux/" + p.Arch + ", user " + user,
		},
	})
}

// binaryPaths lists where the binaries are in the image.
func binaryPaths(binaries []Binary) string {
	paths := make([]string, len(binaries))
	for i, b := range binaries {
		paths[i] = "/" + b.Name
	}
	return strings.Join(paths, ", ")
}
