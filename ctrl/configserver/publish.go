package configserver

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"slices"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Publish makes cfg the config served to proxies and returns its
// version. Waiting proxies are answered at once. Publishing the version
// already served does nothing.
//
// cfg is never modified, and neither it nor anything it points to may be
// modified afterwards: Publish keeps it to compare the next config with,
// and reuses the JSON of every listener, route and cluster Equal to the
// one at its place last time (encode.go). translate's outputs are
// read-only and share what a translation did not change, which makes
// those comparisons quick. cfg.Version is ignored; the version is a
// content hash.
func (s *Server) Publish(cfg *proxycfg.Config) string {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	doc, err := s.cache.encode(cfg)
	if err != nil {
		// The config types hold nothing json.Marshal refuses, so this
		// is a bug; keep serving what proxies have.
		s.log.Error("config not published: it does not encode", "err", err)
		return s.Version()
	}
	s.mu.Lock()
	if s.doc != nil && s.doc.version == doc.version {
		s.mu.Unlock()
		return doc.version
	}
	s.doc = doc
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	s.m.published.Add(context.Background(), 1)
	s.log.Info("config published", "version", doc.version, "routesHash", doc.routesHash,
		"clustersHash", doc.clustersHash, "bytes", doc.size,
		"routes", len(cfg.Routes), "clusters", len(cfg.Clusters))
	return doc.version
}

// encodeCache is what Publish remembers of the last config it encoded.
type encodeCache struct {
	listeners list[proxycfg.Listener, *proxycfg.Listener]
	routes    list[proxycfg.Route, *proxycfg.Route]
	clusters  list[proxycfg.Cluster, *proxycfg.Cluster]
	names     clusterNames
}

// encode hashes and encodes cfg, reusing what it can.
func (c *encodeCache) encode(cfg *proxycfg.Config) (*document, error) {
	if err := c.listeners.update(cfg.Listeners); err != nil {
		return nil, err
	}
	if err := c.routes.update(cfg.Routes); err != nil {
		return nil, err
	}
	if err := c.clusters.update(cfg.Clusters); err != nil {
		return nil, err
	}
	c.names.update(cfg.Clusters)
	rh := digest("tunnelgate routes v1", []byte(cfg.Schema), c.listeners.sum[:], c.routes.sum[:], cfg.SessionSecret, c.names.sum[:])
	ch := digest("tunnelgate clusters v1", c.clusters.sum[:])
	v := digest("tunnelgate version v1", []byte(rh), []byte(ch))
	return newDocument(v, rh, ch, cfg, c.listeners.json(), c.routes.json(), c.clusters.json())
}

// The routes hash (rh above) covers everything Proxy.Load compiles that
// UpdateCluster cannot change: the schema, listeners, routes, session
// secret, and the set of cluster names (routes resolve to one slot per
// name, and UpdateCluster only replaces what is in a slot). The clusters
// hash covers the clusters' definitions, in order.

// clusterNames is the hash of the set of cluster names, remembered with
// the names in config order: an endpoint change gives a new Clusters
// slice with the same names, which a pass of string comparisons finds
// (cheap: the strings are mostly the very same), so the names are
// sorted and hashed only when they change.
type clusterNames struct {
	names []string
	sum   [sha256.Size]byte
}

func (c *clusterNames) update(clusters []proxycfg.Cluster) {
	if c.names != nil && len(clusters) == len(c.names) {
		same := true
		for i := range clusters {
			if clusters[i].Name != c.names[i] {
				same = false
				break
			}
		}
		if same {
			return
		}
	}
	names := make([]string, len(clusters))
	for i := range clusters {
		names[i] = clusters[i].Name
	}
	// Sorted: the order of clusters means nothing to the router.
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	var buf []byte
	for _, n := range sorted {
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(n)))
		buf = append(buf, n...)
	}
	c.names, c.sum = names, sha256.Sum256(buf)
}

// hashLen is how many bytes of SHA-256 a hash keeps: 128 bits make a
// collision between two configs of one cluster out of the question, and
// 32 hex digits stay readable in logs and metric labels.
const hashLen = 16

// digest hashes its fields, each framed by its length so that no two
// different field lists hash alike, under a label that keeps hashes of
// different things apart.
func digest(label string, fields ...[]byte) string {
	h := sha256.New()
	frame(h, []byte(label))
	for _, f := range fields {
		frame(h, f)
	}
	return hex.EncodeToString(h.Sum(nil)[:hashLen])
}

func frame(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}
