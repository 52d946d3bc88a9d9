// This file defines the image's labels and annotations.

package image

import (
	"time"
)

// What the image says about itself, in its labels and the index's
// annotations (the OCI pre-defined keys). The Dockerfile's LABELs say the
// same; test/chart holds them equal.
const (
	Title       = "tunnelgate"
	Description = "Kubernetes Gateway API implementation for Cloudflare Tunnel"
	Source      = "https://github.com/tunnelgate/tunnelgate"
	Licenses    = "Apache-2.0"
)

// Metadata is what varies from one release to the next.
type Metadata struct {
	Version  string    // the release, e.g. 0.2.0; also in the binaries
	Revision string    // the commit, in full
	Created  time.Time // the commit's time: every timestamp of the image
}

// Labels returns the OCI labels of every image of the index, which are
// also the annotations of the index itself.
func Labels(m Metadata) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       Title,
		"org.opencontainers.image.description": Description,
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.licenses":    Licenses,
		"org.opencontainers.image.version":     m.Version,
		"org.opencontainers.image.revision":    m.Revision,
		"org.opencontainers.image.created":     m.Created.UTC().Format(time.RFC3339),
	}
}
