// This file implements the cheapest apply: clusters replaced when only they changed.

package dataplane

import "github.com/tunnelgate/tunnelgate/dataplane/proxycfg"

// Most configs a proxy is given differ from the one it serves only in
// endpoints: Pods come and go far more often than routes change. Such a
// config is applied without compiling anything: the clusters whose
// definition changed get new states in their stable slots, and the
// compiled config is copied with the new version. Everything else it
// holds (listener views, compiled rules, cluster IDs) depends only on
// what did not change.

// replaceClusters applies cfg by replacing clusters alone, if cfg differs
// from the served config only in its version and its clusters'
// definitions, and every changed cluster is valid and no more or less of
// protocol tcp than it was. It reports false,
// having changed nothing, otherwise: Apply then compiles cfg whole, which
// reports every problem. p.mu is held.
func (p *Proxy) replaceClusters(cfg *proxycfg.Config) bool {
	cur := p.current.Load()
	// The config served given again may have been changed in place: what
	// changed cannot be told, so it is compiled whole.
	if cur == nil || cfg == p.served || !p.served.EqualRouting(cfg) {
		return false
	}
	changed, states := p.changedClusters(cfg)
	if changed == nil {
		p.sweepLocked() // drop transports made for the refused clusters
		return false
	}
	for k, i := range changed {
		cur.clusters[cur.clusterAt(i)].install(states[k])
	}
	next := *cur // compiled configs are immutable once stored; this one shares all but its version
	next.version = cfg.Version
	p.current.Store(&next)
	p.served = cfg
	p.sweepLocked()
	p.stats.ClusterUpdates.Add(int64(len(changed)))
	return true
}

// tcpChanged reports whether a cluster became, or stopped being, of
// protocol tcp, which only stream routes name (stream.go): the routes
// naming it are checked again by a whole compile.
func tcpChanged(was, now *proxycfg.Cluster) bool {
	return was.Protocol != now.Protocol && (was.Protocol == proxycfg.ProtoTCP || now.Protocol == proxycfg.ProtoTCP)
}

// changedClusters builds the state of each cluster of cfg whose
// definition differs from the served one, and returns their indexes with
// the states; nil if one of them is invalid. The result is not nil, only
// empty, when no cluster changed.
func (p *Proxy) changedClusters(cfg *proxycfg.Config) ([]int, []*clusterState) {
	changed := []int{}
	var states []*clusterState
	for i := range cfg.Clusters {
		if cfg.Clusters[i].Equal(&p.served.Clusters[i]) {
			continue
		}
		if tcpChanged(&p.served.Clusters[i], &cfg.Clusters[i]) {
			return nil, nil // which routes may name it changed: compile whole
		}
		cs, err := p.transports.state(&cfg.Clusters[i])
		if err != nil {
			return nil, nil
		}
		changed, states = append(changed, i), append(states, cs)
	}
	return changed, states
}
