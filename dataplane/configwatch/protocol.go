// This file defines the protocol's wire names and the Document.

package configwatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// The protocol both ends speak. The controller's side is
// ctrl/configserver; it imports these names so the two cannot drift.
const (
	// Path is where the controller serves the config.
	Path = "/v1/config"
	// ParamVersion is the query parameter carrying the version the proxy
	// has ("" or absent: none). The server answers at once when its
	// version differs, and otherwise holds the request.
	ParamVersion = "version"
	// ParamWait is the query parameter bounding how long the server may
	// hold the request, as a Go duration ("30s"). The server caps it.
	ParamWait = "wait"
	// ParamBase is the query parameter naming the version of the config
	// the proxy serves: the server may answer with the new version as a
	// delta from it (Document.Delta). Absent: the whole config.
	ParamBase = "base"
	// HeaderProxy names the proxy (its pod) in each request, and
	// HeaderTunnelProtocol the protocol its cloudflared sidecar runs the
	// tunnel with ("http2", "quic", "auto"). The controller needs the
	// latter for gRPC: QUIC drops trailers.
	HeaderProxy          = "Tunnelgate-Proxy"
	HeaderTunnelProtocol = "Tunnelgate-Tunnel-Protocol"
	// HeaderUnknownAccessKeys lists, comma-separated, the Cloudflare
	// Access team domains for which the proxy met a token naming a key
	// the team's set in its config lacks: the controller fetches those
	// teams' keys again (rate-limited), and the next config carries them.
	// The proxy cuts a held request short to send it.
	HeaderUnknownAccessKeys = "Tunnelgate-Unknown-Access-Keys"
	// MaxUnknownAccessKeys bounds the teams one request names; the
	// server ignores the rest.
	MaxUnknownAccessKeys = 16
)

// Document is what GET /v1/config answers with (JSON, schema of the
// config inside: dataplane.SchemaVersion), and what the proxy keeps in its
// cache file.
//
// The version and hashes are proxycfg.Encoder's. RoutesHash covers
// everything the router compiles: the schema, listeners, routes, session
// secret and the set of cluster names. ClustersHash covers the clusters'
// definitions. Version is a hash of both. The hashes say what changed
// between two documents at a glance (the controller logs them); the proxy
// does not need them to avoid recompiling the router for an endpoint
// change, which it tells from the config itself (Proxy.Apply).
//
// A document answering a request with ParamBase may carry the config as
// Delta, from the version named there, and no Config: the proxy makes the
// config from the one it serves (proxycfg.Delta.Apply). The cache file
// always holds a whole config.
type Document struct {
	Version      string          `json:"version"`
	RoutesHash   string          `json:"routesHash"`
	ClustersHash string          `json:"clustersHash"`
	Config       proxycfg.Config `json:"config"`
	Delta        *proxycfg.Delta `json:"delta,omitempty"`
}

// maxDocument bounds a document (after decompression) so that a broken or
// hostile server cannot make the proxy allocate without limit. A config
// of 5,000 routes is about 3 MB.
const maxDocument = 256 << 20

// DecodeDocument reads a document strictly, as proxycfg.DecodeConfig
// reads a config: an unknown field is an error, since a field this proxy
// does not know is a setting it would silently ignore. That is what a
// proxy older than its controller meets when the controller uses a
// setting added since, so the error says so (the client keeps serving
// its config meanwhile: docs/install.md, "Upgrade"). The config inside
// must carry the document's version, so the proxy reports the version the
// controller named.
func DecodeDocument(b []byte) (*Document, error) {
	if len(b) > maxDocument {
		return nil, fmt.Errorf("decoding config document: %d bytes is over the limit of %d", len(b), maxDocument)
	}
	var doc Document
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			return nil, fmt.Errorf("decoding config document: %w: the controller is newer than this proxy and uses a setting it does not know; upgrade the proxy", err)
		}
		return nil, fmt.Errorf("decoding config document: %w", err)
	}
	if dec.More() {
		return nil, errors.New("decoding config document: data after the JSON object")
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"version", doc.Version}, {"routesHash", doc.RoutesHash}, {"clustersHash", doc.ClustersHash}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("decoding config document: %s missing", strings.Join(missing, ", "))
	}
	if doc.Delta != nil {
		switch {
		case doc.Delta.Version != doc.Version:
			return nil, fmt.Errorf("decoding config document: delta version %q differs from the document's %q", doc.Delta.Version, doc.Version)
		case doc.Delta.Base == "":
			return nil, errors.New("decoding config document: the delta names no base")
		case !doc.Config.Equal(&proxycfg.Config{}): // its version too
			return nil, errors.New("decoding config document: a config and a delta")
		}
		return &doc, nil
	}
	if doc.Config.Version != doc.Version {
		return nil, fmt.Errorf("decoding config document: config version %q differs from the document's %q", doc.Config.Version, doc.Version)
	}
	return &doc, nil
}

// ETag is the entity tag the server sends with a version (RFC 9110
// §8.8.3). It is weak because the gzip and identity encodings of one
// version are different bytes that mean the same config, which is what
// a weak validator says (RFC 9110 §8.8.1).
func ETag(version string) string { return `W/"` + version + `"` }

// VersionFromETag is the version an ETag header names, or "" when it is
// not one ETag made.
func VersionFromETag(etag string) string {
	v, ok := strings.CutPrefix(etag, `W/"`)
	if !ok {
		return ""
	}
	v, ok = strings.CutSuffix(v, `"`)
	if !ok || strings.ContainsAny(v, `"`) {
		return ""
	}
	return v
}
