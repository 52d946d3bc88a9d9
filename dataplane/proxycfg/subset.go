// This file implements Rule.Clusters and Config.Split.

package proxycfg

import "slices"

// A field of a rule that names a cluster (BackendRef.Cluster,
// Mirror.Cluster) is a string whose name ends in Cluster, and
// Rule.Clusters yields it (through Filter.Clusters, beside the Filter
// type, for a filter's): whoever keeps a config's clusters keeps those a
// rule names and no other. TestClustersYieldsEveryClusterField fails when
// such a field is added and not walked.

// Clusters yields the name of every cluster the rule names: its mirrors',
// then each backend's and its mirrors'. A name may come more than once.
func (r *Rule) Clusters(yield func(name string) bool) {
	if !filterClusters(r.Filters, yield) {
		return
	}
	for i := range r.Backends {
		if !r.Backends[i].Clusters(yield) {
			return
		}
	}
}

// Clusters yields the backend's cluster, when it has one, and those of
// its filters; it reports whether yield asked for more.
func (b *BackendRef) Clusters(yield func(name string) bool) bool {
	if b.Cluster != "" && !yield(b.Cluster) {
		return false
	}
	return filterClusters(b.Filters, yield)
}

func filterClusters(fs []Filter, yield func(string) bool) bool {
	for i := range fs {
		if !fs[i].Clusters(yield) {
			return false
		}
	}
	return true
}

// Split cuts c into n configs, one for each set of proxies that serves
// some of its listeners: in(l) names the parts (0 to n-1) that serve
// listener l, each once. Each part gets its listeners in c's order, the
// routes bound to any of them, each bound there to that part's listeners
// only (a route whose listeners are all in it comes whole), and of c's
// clusters and Access teams those its routes name, in c's order.
//
// A part has c's Schema; Version and SessionKeys are left empty, for
// whoever publishes it to set (its version is of its own content, and
// the session keys are added to every config published). A part shares
// c's memory: neither is to be modified.
func (c *Config) Split(n int, in func(listener string) []int) []*Config {
	parts := make([]*Config, n)
	for i := range parts {
		parts[i] = &Config{Schema: c.Schema, Listeners: []Listener{}, Routes: []Route{}}
	}
	for _, l := range c.Listeners {
		for _, p := range in(l.Name) {
			parts[p].Listeners = append(parts[p].Listeners, l)
		}
	}
	byPart := make([][]string, n) // a route's listeners in each part
	var touched []int
	for _, r := range c.Routes {
		for _, l := range r.Listeners {
			for _, p := range in(l) {
				if byPart[p] == nil {
					touched = append(touched, p)
				}
				byPart[p] = append(byPart[p], l)
			}
		}
		for _, p := range touched {
			part := r
			if len(byPart[p]) != len(r.Listeners) {
				part.Listeners = byPart[p]
			}
			parts[p].Routes = append(parts[p].Routes, part)
			byPart[p] = nil
		}
		touched = touched[:0]
	}
	for _, p := range parts {
		p.Clusters = usedClusters(p.Routes, c.Clusters)
		p.AccessTeams = usedTeams(p.Routes, c.AccessTeams)
	}
	return parts
}

// usedClusters are the clusters of all that routes name, in all's order.
func usedClusters(routes []Route, all []Cluster) []Cluster {
	used := map[string]bool{}
	for i := range routes {
		for j := range routes[i].Rules {
			for name := range routes[i].Rules[j].Clusters {
				used[name] = true
			}
		}
	}
	out := make([]Cluster, 0, len(used))
	for _, cl := range all {
		if used[cl.Name] {
			out = append(out, cl)
		}
	}
	return out
}

// usedTeams are the Access teams of all that routes' rules name, in
// all's order; nil when none.
func usedTeams(routes []Route, all []AccessTeam) []AccessTeam {
	var used []string
	for i := range routes {
		for j := range routes[i].Rules {
			if a := routes[i].Rules[j].Access; a != nil && !slices.Contains(used, a.Team) {
				used = append(used, a.Team)
			}
		}
	}
	var out []AccessTeam
	for _, t := range all {
		if slices.Contains(used, t.Domain) {
			out = append(out, t)
		}
	}
	return out
}
