// This file writes an OCI image layout.

package image

import (
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// WriteLayout writes idx to dir, which must not exist yet, as an OCI image
// layout whose index.json names idx by ref (e.g. the version): a directory
// other tools read as it is (`crane push DIR REF`, `skopeo copy oci:DIR`).
func WriteLayout(dir string, idx v1.ImageIndex, ref string) error {
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s exists: the layout is written to a new directory (remove it first)", dir)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing an OCI layout in %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref,
	})); err != nil {
		return fmt.Errorf("writing the image index to %s: %w", dir, err)
	}
	return nil
}
