// This file defines what the proxy counts.

package dataplane

import (
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// What the proxy counts: observe.Counters for the whole proxy
// (Proxy.stats), and beside each route rule, each listener and each
// cluster their own stats (observe.RuleStats in the compiled config's
// servedRule, observe.ListenerStats in its vhosts, resolved when the
// config is compiled, observe.UpstreamStats in the clusterSlot). The
// request path only adds to them; metrics read them at scrape time.

// adoptRuleStats gives each rule of a config being installed its stats:
// the ones its route and label had in the config before, or new ones, so
// a config swap does not reset them. Rules that left the config leave the
// scrape. p.mu is held.
func (p *Proxy) adoptRuleStats(rules []servedRule) {
	next := make(map[[2]string]*observe.RuleStats, len(rules))
	for i := range rules {
		ru := &rules[i]
		key := [2]string{ru.Route, ru.Label()}
		st := next[key]
		if st == nil {
			// Two rules with one key (an HTTPRoute and a GRPCRoute of the
			// same name) share their series rather than repeat it.
			if st = p.ruleStats[key]; st == nil {
				st = p.newRuleStats(key)
			}
			next[key] = st
		}
		ru.stats = st
		if p.tracer != nil {
			ru.spanNames = spanNamesOf(ru.Route)
		}
	}
	p.ruleStats = next
}

// newRuleStats makes the stats of the rules of key (route, rule label).
// Their latency is counted only where it is served (timed).
func (p *Proxy) newRuleStats(key [2]string) *observe.RuleStats {
	return &observe.RuleStats{Route: key[0], Rule: key[1], Untimed: !p.timed()}
}

// timed reports whether latency is counted by rule and by cluster: only
// where /metrics serves it (observe.DetailRoute). Below, the request
// path reads no clock and no histogram bucket for them.
func (p *Proxy) timed() bool { return p.opts.MetricsDetail >= observe.DetailRoute }

// spanNamesOf is the server span names of the common methods for a rule
// of route.
func spanNamesOf(route string) map[string]string {
	names := map[string]string{}
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		names[m] = m + " " + route
	}
	return names
}

// adoptStreamStats gives each stream route of t its metrics, kept from
// the config before when the route (by identity) was there, and drops
// those of the routes gone.
func (p *Proxy) adoptStreamStats(t *streamTable) {
	next := make(map[proxycfg.RouteID]*observe.StreamStats, len(t.routes))
	for id, r := range t.routes {
		st := p.streamStats[id]
		if st == nil {
			st = &observe.StreamStats{}
		}
		next[id], r.stats = st, st
	}
	p.streamStats = next
}
