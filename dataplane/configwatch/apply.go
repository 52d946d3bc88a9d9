// This file hands a document to the proxy.

package configwatch

import (
	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Proxy is the proxy a Client keeps in step with the controller: a
// *dataplane.Proxy. The proxy's package is not imported here, so that the
// config server, which shares this package's wire names, does not link
// the proxy.
type Proxy interface {
	// Apply makes cfg the config served, and says how.
	Apply(cfg *proxycfg.Config) (proxycfg.Applied, error)
	// Ready says whether the proxy serves a config.
	Ready() bool
	// Version is the version of the config served, "" when none is.
	Version() string
	// Config is the config served, nil when none is; not to be modified.
	Config() *proxycfg.Config
	// UnknownAccessKeys are the Access teams whose tokens named a key
	// the config lacks, to name to the controller.
	UnknownAccessKeys() *cfaccess.UnknownKeys
}

// apply makes the proxy serve doc. The proxy tells itself whether doc
// changes its routes or only its clusters (Proxy.Apply); the kind is kept
// for the client's metrics.
func (c *Client) apply(doc *Document) (LoadKind, error) {
	how, err := c.p.Apply(&doc.Config)
	if err != nil {
		return LoadFull, err
	}
	switch how {
	case proxycfg.AppliedClusters:
		return LoadClusters, nil
	case proxycfg.AppliedRoutes:
		return LoadRoutes, nil
	}
	return LoadFull, nil
}
