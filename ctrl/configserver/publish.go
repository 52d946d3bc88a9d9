// This file implements Publish.

package configserver

import (
	"context"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Publish makes cfg the config served to proxies and returns its
// version. Waiting proxies are answered at once. Publishing the version
// already served does nothing.
//
// cfg is never modified, and neither it nor anything it points to may be
// modified afterwards: Publish keeps it to compare the next config with,
// and reuses the JSON of every listener, route and cluster Equal to the
// one at its place last time (proxycfg.Encoder). translate's outputs are
// read-only and share what a translation did not change, which makes
// those comparisons quick. cfg.Version is ignored: the version, and the
// hashes sent with it, are proxycfg's, computed from the content.
func (s *Server) Publish(cfg *proxycfg.Config) string {
	return s.publish(s.shared, cfg)
}

// publish makes cfg the config of sc, as Publish says, and returns its
// version. A new version is counted and logged (with the plane, for a
// plane's scope); the same version again does neither.
func (s *Server) publish(sc *scope, cfg *proxycfg.Config) string {
	doc, isNew, err := sc.publish(cfg)
	if err != nil {
		// The config types hold nothing json.Marshal refuses, so this
		// is a bug; keep serving what proxies have.
		sc.log.Error("config not published: it does not encode", "err", err)
		return sc.version()
	}
	if !isNew {
		return doc.version
	}
	s.m.published.Add(context.Background(), 1)
	sc.log.Info("config published", "version", doc.version, "routesHash", doc.routesHash,
		"clustersHash", doc.clustersHash, "bytes", doc.size,
		"routes", len(cfg.Routes), "clusters", len(cfg.Clusters))
	return doc.version
}
