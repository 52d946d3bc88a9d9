// This file hands a document to the proxy.

package configwatch

import "github.com/tunnelgate/tunnelgate/dataplane"

// apply makes the proxy serve doc. The proxy tells itself whether doc
// changes its routes or only its clusters (Proxy.Apply); the kind is kept
// for the client's metrics.
func (c *Client) apply(doc *Document) (LoadKind, error) {
	how, err := c.p.Apply(&doc.Config)
	if err != nil {
		return 0, err
	}
	switch how {
	case dataplane.AppliedClusters:
		return LoadClusters, nil
	case dataplane.AppliedRoutes:
		return LoadRoutes, nil
	}
	return LoadFull, nil
}
