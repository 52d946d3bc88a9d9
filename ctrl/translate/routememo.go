// This file implements a route's remembered translation, reused when its
// inputs did not change.

package translate

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// routeMemo is one route's translation, remembered by the Cache so the next
// translation can reuse it when nothing it was made from has changed: the
// route object itself (its objKey is the memo's key), the objects every
// route may depend on (the Cache's epoch: Gateways, ListenerSets, grants,
// policies, ..., of whose changes it survives those epochChange spares),
// how the route attached and what it takes of its Gateways (attach runs
// every time; it is cheap and it is where routes affect each other), and
// the backends it read (reads, which the translator's lookup records).
type routeMemo struct {
	parents  []parentSummary
	reads    readLog
	routes   []proxycfg.Route
	clusters []proxycfg.Cluster
	statuses []gwv1.RouteParentStatus
	counted  bool
	// left is which of its hostnames DNSPolicies left to others, which
	// its DNS condition says, and which other routes' targets decide
	// (leftOf).
	left string
	// noMemo marks a translation that must not be reused: it produced
	// events or new transition times (which depend on the clock).
	noMemo bool
}

// repeatable reports whether m may stand for a new translation of its
// route: it may be repeated, and what it read is unchanged.
func (m *routeMemo) repeatable() bool {
	return !m.noMemo && !m.reads.policies
}

// parentSummary is how a parentRef attached, in plain values: a memo must
// not hold the translator's graph (Gateways, listeners) of the run that
// made it, or every run's graph would stay alive as long as its memos.
type parentSummary struct {
	ref         gwv1.ParentReference
	gw          types.NamespacedName
	gwFacts     gatewayFacts
	reason, msg string
	attachments []attachmentSummary
	counts      []string // listener names
}

// gatewayFacts is what a route's translation reads of a Gateway it
// attaches to, besides the listeners its attachments name (which
// parentSummary holds): the backend client certificate its clusters
// present (spec.tls.backend), by digest, and the tunnel whose DNS records
// its status reports on (tunnelKey; the tunnels' states are in the
// epoch). A remembered translation may stand for a new one while these
// and the attachments are the same, whatever else of the Gateway changed
// (its other listeners, its addresses, its statuses).
type gatewayFacts struct {
	cert      [sha256.Size]byte // of the certificate and its key; zero without
	tunnel    string
	hasTunnel bool
}

// routeFacts returns the Gateway's gatewayFacts, worked out once per
// translation (the Gateway is settled before routes attach).
func (gi *gatewayInfo) routeFacts() gatewayFacts {
	if gi.facts == nil {
		f := &gatewayFacts{}
		f.tunnel, f.hasTunnel = gi.tunnelKey()
		if gi.clientCertPEM != nil {
			h := sha256.New()
			for _, b := range [][]byte{gi.clientCertPEM, gi.clientKeyPEM} {
				h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
				h.Write(b)
			}
			h.Sum(f.cert[:0])
		}
		gi.facts = f
	}
	return *gi.facts
}

type attachmentSummary struct {
	listener string
	hosts    []string
	anyHost  bool
	lostTo   string
	lost     []lostClaim
}

func summarize(ps []*parentInfo) []parentSummary {
	out := make([]parentSummary, len(ps))
	for i, p := range ps {
		s := &out[i]
		s.ref, s.gw, s.gwFacts, s.reason, s.msg = p.ref, p.gw.key, p.gw.routeFacts(), p.reason, p.msg
		for _, a := range p.attachments {
			s.attachments = append(s.attachments, attachmentSummary{listener: a.listener.dpName, hosts: a.hosts, anyHost: a.hosts == nil, lostTo: a.lostTo, lost: a.lost})
		}
		for _, li := range p.counts {
			s.counts = append(s.counts, li.dpName)
		}
	}
	return out
}

// reusable returns the remembered translation of a route object (by its
// key) when it still holds for the route as it attached now, and counts
// hits and misses. ix is the present translation's index.
func (c *Cache) reusable(key objKey, r *routeInfo, ix *index, left string) *routeMemo {
	if c == nil {
		return nil
	}
	if m := c.memo(key); m != nil && m.repeatable() && (c.epochSame || c.change.spares(m, r)) &&
		parentsSame(m.parents, r.parents) && backendsSame(m.reads.backends, ix) && m.left == left {
		c.hits++
		return m
	}
	c.misses++
	return nil
}

// memo returns the last translation of a route object, by its key, if
// any, and unless the epoch changed in a way that spares none
// (epochChange): none for a key without a resourceVersion.
func (c *Cache) memo(route objKey) *routeMemo {
	if c.last == nil || !c.epochSame && c.change.all || !route.stamped() {
		return nil
	}
	if i, ok := c.last.slotOf.find(route.uid, route.rv); ok {
		return c.last.slots[i].memo
	}
	return nil
}

// backendsSame reports whether recorded backend reads find objects of
// the same keys in ix.
func backendsSame(deps []backendDep, ix *index) bool {
	for i := range deps {
		d := &deps[i]
		if !d.found.sameAs(ix.backendObjects(d.kind, d.namespace, d.name)) {
			return false
		}
	}
	return true
}

// noteRoute records a route of the full translation under way (its
// object and key), with where its data-plane routes start in the config,
// for the next translation.
func (c *Cache) noteRoute(obj any, key objKey, r *routeInfo, m *routeMemo, first int) {
	if c == nil {
		return
	}
	c.slotOf.note(key, len(c.slots))
	c.slots = append(c.slots, routeSlot{obj: obj, key: key, info: r, memo: m, first: first})
}

// completeMemo adds to a route's fresh translation what only a later
// translation reads.
func (t *translator) completeMemo(m *routeMemo, r *routeInfo) {
	m.routes = slices.Clone(m.routes)
	m.clusters = t.clustersMet(m.reads.backends)
	m.parents = summarize(r.parents)
	m.left = t.leftOf(r)
}

// emit puts a route's translation into the output. A remembered one
// brings its routes and clusters along; a fresh one put them there as it
// was made.
func (t *translator) emit(m *routeMemo, r *routeInfo, fresh bool) {
	if !fresh { // a fresh one is in the config already
		t.out.Config.Routes = append(t.out.Config.Routes, m.routes...)
		t.clusters = append(t.clusters, m.clusters...)
	}
	if m.counted {
		t.countAttached(r)
	}
	key := nn(r.meta.Namespace, r.meta.Name)
	if r.kind == kindHTTPRoute {
		t.out.HTTPRoutes[key] = m.statuses
	} else {
		t.out.GRPCRoutes[key] = m.statuses
	}
}

func parentsSame(a []parentSummary, b []*parentInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], b[i]
		if x.reason != y.reason || x.msg != y.msg || x.gw != y.gw.key || x.gwFacts != y.gw.routeFacts() || !SameParentRef(&x.ref, &y.ref) ||
			len(x.attachments) != len(y.attachments) || len(x.counts) != len(y.counts) {
			return false
		}
		for j := range x.attachments {
			p, q := &x.attachments[j], y.attachments[j]
			if p.listener != q.listener.dpName || p.lostTo != q.lostTo || p.anyHost != (q.hosts == nil) || !slices.Equal(p.hosts, q.hosts) || !slices.Equal(p.lost, q.lost) {
				return false
			}
		}
		for j := range x.counts {
			if x.counts[j] != y.counts[j].dpName {
				return false
			}
		}
	}
	return true
}

// clustersMet returns the clusters a route's backends resolved to, in
// the order it met them, used or not (a rule may be dropped): a
// translation lists clusters in the order routes first meet them, so a
// remembered route must bring along the clusters it met, as it met them.
func (t *translator) clustersMet(deps []backendDep) []proxycfg.Cluster {
	var out []proxycfg.Cluster
	for _, d := range deps {
		rb := t.backends[d.backendKey]
		if rb.name == "" || slices.ContainsFunc(out, func(c proxycfg.Cluster) bool { return c.Name == rb.name }) {
			continue
		}
		out = append(out, t.clusters[t.clusterIdx[rb.name]])
	}
	return out
}
