package configwatch

import (
	"slices"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// apply makes the proxy serve doc. When the proxy serves the routes doc
// has (same RoutesHash, loaded by this client and not replaced since),
// only the clusters that differ are replaced and nothing is recompiled;
// otherwise, or if a cluster update is refused, doc is loaded whole,
// which checks it whole and refuses it whole.
func (c *Client) apply(doc *Document) (LoadKind, error) {
	if c.p.Ready() && c.routesHash == doc.RoutesHash && c.served == c.p.Version() && c.updateClusters(doc) {
		return LoadClusters, nil
	}
	if err := c.p.Load(&doc.Config); err != nil {
		return 0, err
	}
	c.routesHash, c.served = doc.RoutesHash, doc.Version
	c.clusters = c.p.Clusters()
	return LoadFull, nil
}

// updateClusters replaces the clusters whose definition differs from the
// one served, then names the served config doc.Version. It reports false,
// leaving the rest to Load, when a cluster name is not one served: the
// routes hash says the names are the same, and this costs nothing to
// check. (Repeated names also change the hash; Load would refuse them.)
func (c *Client) updateClusters(doc *Document) bool {
	want := doc.Config.Clusters
	if len(want) != len(c.clusters) {
		return false
	}
	var changed []int
	for i := range want {
		old, ok := c.clusters[want[i].Name]
		if !ok {
			return false
		}
		if !sameCluster(&old, &want[i]) {
			changed = append(changed, i)
		}
	}
	for _, i := range changed {
		if err := c.p.UpdateCluster(want[i]); err != nil {
			// Load will refuse the config with every problem listed (and
			// show it on /config); the clusters already replaced were
			// valid, and c.clusters says which they are.
			c.log.Warn("cluster update refused; loading the whole config instead", "cluster", want[i].Name, "err", err)
			return false
		}
		c.clusters[want[i].Name] = want[i]
	}
	c.p.SetVersion(doc.Version)
	c.served = doc.Version
	return true
}

// sameCluster reports whether two cluster definitions would be served
// alike. It is written out rather than reflect.DeepEqual, which costs
// milliseconds over 5,000 clusters on every endpoint change; a nil and an
// empty list mean the same to the proxy. TestSameClusterCoversEveryField
// fails when a field is added to these types, so that it is added here.
func sameCluster(a, b *proxycfg.Cluster) bool {
	if a.Name != b.Name || a.Protocol != b.Protocol || !slices.Equal(a.Endpoints, b.Endpoints) {
		return false
	}
	if a.TLS == nil || b.TLS == nil {
		return a.TLS == b.TLS
	}
	x, y := a.TLS, b.TLS
	return x.SNI == y.SNI && x.CAPEM == y.CAPEM && x.ClientCertPEM == y.ClientCertPEM && x.ClientKeyPEM == y.ClientKeyPEM &&
		x.H2 == y.H2 && slices.Equal(x.SANDNSNames, y.SANDNSNames) && slices.Equal(x.SANURIs, y.SANURIs)
}
