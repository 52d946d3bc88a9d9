package translate

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// routeMemo is one route's translation, remembered by the Cache so the next
// translation can reuse it when nothing it was made from has changed: the
// route object itself (the memo's key), the objects every route depends on
// (the Cache's epoch: Gateways, ListenerSets, grants, policies, ...), how
// the route attached (attach runs every time; it is cheap and it is where
// routes affect each other), and the Services and EndpointSlices its
// backends resolved through.
type routeMemo struct {
	parents  []parentSummary
	deps     []backendDep
	routes   []proxycfg.Route
	clusters []proxycfg.Cluster
	statuses []gwv1.RouteParentStatus
	counted  bool
	// noMemo marks a translation that must not be reused: it produced
	// events or new transition times (which depend on the clock), or used
	// a BackendTLSPolicy (whose ancestors are per translation).
	noMemo bool
}

// parentSummary is how a parentRef attached, in plain values: a memo must
// not hold the translator's graph (Gateways, listeners) of the run that
// made it, or every run's graph would stay alive as long as its memos.
type parentSummary struct {
	ref         gwv1.ParentReference
	gw          types.NamespacedName
	reason, msg string
	attachments []attachmentSummary
	counts      []string // listener names
}

type attachmentSummary struct {
	listener string
	hosts    []string
	anyHost  bool
	lostTo   string
}

func summarize(ps []*parentInfo) []parentSummary {
	out := make([]parentSummary, len(ps))
	for i, p := range ps {
		s := &out[i]
		s.ref, s.gw, s.reason, s.msg = p.ref, p.gw.key, p.reason, p.msg
		for _, a := range p.attachments {
			s.attachments = append(s.attachments, attachmentSummary{listener: a.listener.dpName, hosts: a.hosts, anyHost: a.hosts == nil, lostTo: a.lostTo})
		}
		for _, li := range p.counts {
			s.counts = append(s.counts, li.dpName)
		}
	}
	return out
}

// backendDep is what a backendRef resolved through.
type backendDep struct {
	kind, namespace, name string
	svc                   *corev1.Service
	slices                []*discoveryv1.EndpointSlice
	ext                   *v1alpha1.ExternalBackend
}

func (t *translator) noteDep(k backendKey) {
	m := t.recording
	if m == nil {
		return
	}
	for _, d := range m.deps {
		if d.kind == k.kind && d.namespace == k.namespace && d.name == k.name {
			return
		}
	}
	m.deps = append(m.deps, t.dep(k.kind, k.namespace, k.name))
}

func (t *translator) dep(kind, ns, name string) backendDep {
	d := backendDep{kind: kind, namespace: ns, name: name}
	key := nn(ns, name)
	switch kind {
	case kindService:
		d.svc, d.slices = t.ix.services[key], t.ix.slices[key]
	case kindServiceImport:
		d.slices = t.ix.mcsSlices[key]
	default:
		d.ext = t.ix.external[key]
	}
	return d
}

// memoValid reports whether m still describes route r.
func (t *translator) memoValid(m *routeMemo, r *routeInfo) bool {
	if m.noMemo || !parentsSame(m.parents, r.parents) {
		return false
	}
	for _, d := range m.deps {
		now := t.dep(d.kind, d.namespace, d.name)
		if now.svc != d.svc || now.ext != d.ext || !slices.Equal(now.slices, d.slices) {
			return false
		}
	}
	return true
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
		if x.reason != y.reason || x.msg != y.msg || x.gw != y.gw.key || !sameParentRef(&x.ref, &y.ref) ||
			len(x.attachments) != len(y.attachments) || len(x.counts) != len(y.counts) {
			return false
		}
		for j := range x.attachments {
			p, q := &x.attachments[j], y.attachments[j]
			if p.listener != q.listener.dpName || p.lostTo != q.lostTo || p.anyHost != (q.hosts == nil) || !slices.Equal(p.hosts, q.hosts) {
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

// clustersOf returns the clusters that routes use (backends and mirrors),
// so a remembered route brings them along even when the route that first
// resolved a shared cluster is gone.
func (t *translator) clustersOf(routes []proxycfg.Route) []proxycfg.Cluster {
	var out []proxycfg.Cluster
	add := func(name string) {
		i, ok := t.clusterIdx[name]
		if !ok || slices.ContainsFunc(out, func(c proxycfg.Cluster) bool { return c.Name == name }) {
			return
		}
		out = append(out, t.clusters[i])
	}
	for i := range routes {
		for j := range routes[i].Rules {
			ru := &routes[i].Rules[j]
			forClusters(ru, add)
		}
	}
	return out
}

// forClusters calls fn with every cluster a rule names: its backends', and
// its mirrors', at rule and backend level.
func forClusters(ru *proxycfg.Rule, fn func(string)) {
	mirrors := func(fs []proxycfg.Filter) {
		for _, f := range fs {
			if f.RequestMirror != nil {
				fn(f.RequestMirror.Cluster)
			}
		}
	}
	mirrors(ru.Filters)
	for _, b := range ru.Backends {
		if b.Cluster != "" {
			fn(b.Cluster)
		}
		mirrors(b.Filters)
	}
}
