// This file defines what the proxy counts.

package dataplane

import (
	"sync/atomic"

	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
)

// What the proxy counts: Stats for the whole proxy, and beside each route
// rule and each cluster their own stats (observe.RuleStats in the
// compiled config's servedRule, observe.UpstreamStats in the clusterSlot). The
// request path only adds to them; metrics read them at scrape time.

// Stats counts what the proxy did. Every field is updated atomically on
// the request path; readers (metrics) load them at scrape time.
type Stats struct {
	Requests       atomic.Int64
	Responses      [len(observe.StatusClasses)]atomic.Int64 // by observe.StatusClass: [2] is 2xx, [0] unknown
	NoRoute        atomic.Int64
	UpstreamErrors atomic.Int64 // dial failures, resets, malformed answers
	// What clients did wrong, answered without blaming a backend: a body
	// that stopped arriving (408), a malformed or short body (400), a
	// client holding its share of an endpoint's connections (503), an
	// upload finding the endpoint's share for uploads, or its client's
	// part of it, taken (503), a client that went away before its answer
	// (recorded as 499, nothing sent: clientwatch.go), and a path the
	// proxy refuses (400, reqpath.go).
	ClientBodyTimeouts  atomic.Int64
	ClientBadBodies     atomic.Int64
	ClientLimited       atomic.Int64
	ClientUploadLimited atomic.Int64
	ClientGone          atomic.Int64
	ClientBadPaths      atomic.Int64
	Timeouts            atomic.Int64
	Retries             atomic.Int64
	MirrorsSent         atomic.Int64
	MirrorsDropped      atomic.Int64
	WebSockets          atomic.Int64
	ConfigLoaded        atomic.Int64
	ConfigRejected      atomic.Int64
	ClusterUpdates      atomic.Int64
	RoutePatches        atomic.Int64 // configs applied by compiling edited routes alone (patch.go)
	// Access counts protected rules' requests by cfaccess.Reason:
	// [cfaccess.ReasonNone] those let through.
	Access [cfaccess.NumReasons]atomic.Int64
}

// status counts a response sent with code.
func (s *Stats) status(code int) {
	s.Responses[observe.StatusClass(code)].Add(1)
}

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
				st = &observe.RuleStats{Route: key[0], Rule: key[1]}
			}
			next[key] = st
		}
		ru.stats = st
		if p.tracer != nil {
			ru.spanNames = map[string]string{}
			for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
				ru.spanNames[m] = m + " " + ru.Route
			}
		}
	}
	p.ruleStats = next
}
