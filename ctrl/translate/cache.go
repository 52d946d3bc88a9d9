// This file implements the Cache: incremental translation.

package translate

import (
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Cache is incremental translation: a layer in front of Translate that
// carries work from one translation to the next. Cache.Translate returns
// what Translate would; only how fast changes. It remembers:
//
//   - key-pair checks, per Secret;
//   - rule validation, per rule of a route;
//   - the whole last translation (lastRun): each route's translation, to
//     reuse when what it read is unchanged (routememo.go), and the
//     translator's working state, so that when only backends changed, or
//     routes were edited without changing how they attach, or added or
//     deleted, the next translation patches the last one (patch.go,
//     routepatch.go) instead of redoing it.
//
// It tells what changed by the contract in dataplane/proxycfg's package
// doc (identity and content stamp, never pointer or position), applied
// to its inputs: an API object is known by its kind, namespace, name and
// UID, and stamped by its resourceVersion (objKey), which the API server
// changes on every write and standalone mode sets to a hash of the
// object's document. An object whose key is one the Cache has seen is
// taken as unchanged, whether it is the same object in memory or a copy;
// an object edited in place is seen as long as its resourceVersion
// changed with it, as it does in the API server. An object without a
// resourceVersion or a UID (which no API server gives, and standalone
// mode sets) is never taken as unchanged: what depends on it is worked
// out anew every time. One change of stamp is no change: a
// GatewayClass, Gateway or ListenerSet that comes back with only the
// status the last translation gave it, which the controller wrote (a
// status echo, echo.go). The inputs that are not objects (Access
// keys, tunnel and plane states, the translation's settings) are
// compared by value. When the objects every route may depend on (the
// epoch: Gateways, grants, policies, Secrets, ...) changed, a full
// translation still reuses the translation of each route the change
// does not reach: one that attaches as it did, to Gateways that give it
// what they gave it (gatewayFacts), read no grant or BackendTLSPolicy
// that changed, and is named by no AccessPolicy that changed, itself or
// through its Gateways (epochChange). Its patches (patch.go, routepatch.go) cover
// endpoint changes, route edits, and HTTPRoutes and GRPCRoutes added or
// deleted, which they tell by route identity (kind, namespace, name) and
// order by age, as a full translation does; where a route added or
// deleted would settle something with other routes (a conflict, a
// hostname claim, an AccessPolicy, a plane, a cluster's place), and for
// any other object added or deleted, they leave the work to a full
// translation.
//
// TCPRoutes and TLSRoutes (stream routes) are not remembered: they are
// translated anew in every translation, and while the input holds any,
// or the last translation did, nothing is patched (a stream route
// settles origin ports and hostnames with every other route):
// Cache.Translate does a full translation, which still reuses the
// remembered translations of HTTPRoutes and GRPCRoutes that hold.
//
// Each full translation keeps only the entries it used, so the cache
// holds no dead objects (a patch sweeps the validations of the routes it
// replaced now and then: forgetRules). Sequential translations may share
// it; its Translate locks it for its duration.
type Cache struct {
	mu   sync.Mutex
	prev map[ruleKey]error
	next map[ruleKey]error
	// replaced counts the routes patches replaced since prev was last
	// swept of their validations (forgetRules).
	replaced int

	// What every route may depend on (the epoch). Patches are valid only
	// while it is unchanged; route memos, while its change (change)
	// spares them.
	epoch     epoch
	epochSame bool
	change    epochChange // when !epochSame
	last      *lastRun

	// Key-pair checks by Secret: parsing a certificate and its key costs
	// far more than the rest of a listener, and Secrets rarely change.
	keyPairsPrev map[objKey]string
	keyPairsNext map[objKey]string

	// The routes of the full translation under way, in the order
	// translated, for the next one (lastRun).
	slots  []routeSlot
	slotOf slotIndex

	// What the last translation did: routes reused and translated, and
	// whether it was a patch.
	hits, misses int
	patched      bool
	// streams: the last translation's input held stream routes.
	streams bool
}

// Stats reports how many routes the last translation reused from the cache
// and how many it translated anew (metrics; tests).
func (c *Cache) Stats() (reused, translated int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{} }

// Translate is Translate with the work of the last translation reused: a
// patch of it when only backends changed and routes were edited, added
// or deleted (patch.go), else a full translation that reuses what still
// holds.
func (c *Cache) Translate(in *Input) *Output {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.begin(in)
	streams := len(in.TCPRoutes)+len(in.TLSRoutes) > 0
	if !streams && !c.streams {
		if out := c.patch(in); out != nil {
			return out
		}
	}
	c.streams = streams
	c.hits, c.misses, c.patched = 0, 0, false // a patch that gave up may have counted
	c.beginFull(in)
	t := newTranslator(in, c)
	out := t.run()
	c.endFull(t)
	return out
}

// objKey is an API object's identity and content stamp (see the Cache):
// its Go type, namespace, name and UID, and its resourceVersion. Two
// objects of one key are taken to say the same, unless the key is not
// stamped.
//
// The Cache's large maps hold UID and resourceVersion, which are cheaper
// to hash and compare than the whole key, and stand for it (keySet,
// slotIndex).
type objKey struct {
	kind            reflect.Type
	namespace, name string
	uid             types.UID
	rv              string
}

// keyOf is an object's key.
func keyOf(o metav1.Object) objKey {
	return objKey{reflect.TypeOf(o), o.GetNamespace(), o.GetName(), o.GetUID(), o.GetResourceVersion()}
}

// stamped reports whether the key has a resourceVersion and a UID: an
// object without them, which no API server has stored, is never taken as
// unchanged.
func (k objKey) stamped() bool { return k.rv != "" && k.uid != "" }

// keySet is a set of objects' keys, held as UID and resourceVersion:
// an object's UID is its own for its life, over which its kind,
// namespace and name never change, so the two stand for the whole key
// (standalone mode makes UIDs from kind, namespace and name). Two
// objects of one UID, which only a test or a file can make, do not fit
// in a set: add tells, and its users then reuse nothing.
type keySet map[types.UID]string

// add adds k, and reports false when the set held another object of its
// UID (now replaced).
func (s keySet) add(k objKey) bool {
	_, dup := s[k.uid]
	s[k.uid] = k.rv
	return !dup
}

// has reports whether the set holds k, and k is stamped.
func (s keySet) has(k objKey) bool { return s.holds(k.uid, k.rv) }

// holds is has for an object's UID and resourceVersion.
func (s keySet) holds(uid types.UID, rv string) bool {
	have, ok := s[uid]
	return ok && have == rv && rv != "" && uid != ""
}

// remove removes k, if the set holds it.
func (s keySet) remove(k objKey) {
	if rv, ok := s[k.uid]; ok && rv == k.rv {
		delete(s, k.uid)
	}
}

// slotIndex maps the keys of a translation's routes to their slots (in
// lastRun.slots), held as UID and resourceVersion like a keySet's. A UID
// two routes share maps to no slot.
type slotIndex map[types.UID]slotStamp

type slotStamp struct {
	slot int // -1: two routes of the UID
	rv   string
}

// note maps k to slot.
func (x slotIndex) note(k objKey, slot int) {
	if _, dup := x[k.uid]; dup {
		slot = -1
	}
	x[k.uid] = slotStamp{slot, k.rv}
}

// replace maps now to the slot that old had.
func (x slotIndex) replace(old, now objKey, slot int) {
	if s, ok := x[old.uid]; ok && s.slot == slot {
		delete(x, old.uid)
	}
	x.note(now, slot)
}

// find returns the slot of the route of UID uid and resourceVersion rv,
// if there is one.
func (x slotIndex) find(uid types.UID, rv string) (int, bool) {
	s, ok := x[uid]
	return s.slot, ok && s.slot >= 0 && s.rv == rv && rv != "" && uid != ""
}

// anyKey is the key of an object held as any (a route object, a
// backendChange's); the zero key when it is not an API object.
func anyKey(obj any) objKey {
	o, _ := obj.(metav1.Object)
	if o == nil {
		return objKey{}
	}
	return keyOf(o)
}

// begin compares the epoch with the last translation's.
func (c *Cache) begin(in *Input) {
	epoch := epochOf(in, len(c.epoch.objects))
	c.epochSame = epoch.same(&c.epoch) || c.statusEcho(in, &epoch)
	c.change = epochChange{}
	if !c.epochSame {
		c.change = epoch.changeFrom(&c.epoch)
	}
	c.epoch = epoch
	c.hits, c.misses, c.patched = 0, 0, false
}

// beginFull prepares a full translation: the entries it uses are carried
// over, the rest dropped.
func (c *Cache) beginFull(in *Input) {
	c.next = make(map[ruleKey]error, len(c.prev))
	c.keyPairsNext = make(map[objKey]string, len(c.keyPairsPrev))
	c.slots = make([]routeSlot, 0, len(in.HTTPRoutes)+len(in.GRPCRoutes))
	c.slotOf = make(slotIndex, len(in.HTTPRoutes)+len(in.GRPCRoutes))
}

// endFull keeps what a full translation used, and the translation itself.
// A patch keeps the maps it read (it uses few entries, and the next full
// translation sweeps the unused ones).
func (c *Cache) endFull(t *translator) {
	c.prev, c.next, c.replaced = c.next, nil, 0
	c.keyPairsPrev, c.keyPairsNext = c.keyPairsNext, nil
	c.last = newLastRun(t, c.slots, c.slotOf)
	c.slots, c.slotOf = nil, nil
}

// epoch is what every route's translation may depend on besides its own
// object and its backends (lookup.go): the keys of the objects, as a set
// (listers return objects in any order), and the inputs that are not
// objects, by value. Which of its changes a route's remembered
// translation survives is epochChange's to say.
type epoch struct {
	objects epochSet
	// unstamped: an object is not stamped, or two share a UID, so the
	// epoch is never the same as another.
	unstamped  bool
	facts      epochFacts
	accessKeys map[string]*AccessKeys
	tunnels    map[string]*TunnelState
	planes     map[types.NamespacedName]*PlaneState
	// parents are the GatewayClasses, Gateways and ListenerSets by UID,
	// to tell the next epoch's status echoes (echo.go).
	parents map[types.UID]metav1.Object
	// targets are the targets of each BackendTLSPolicy, by UID, to tell
	// the next epoch which backends a policy changed covers, or covered;
	// protects, the objects each AccessPolicy targets (whole), likewise.
	targets  map[types.UID][]policyTarget
	protects map[types.UID][]accessTarget
}

// epochSet is the epoch's objects by UID: their resourceVersions, which
// with the UID stand for their keys as in a keySet, and their kinds.
type epochSet map[types.UID]epochEntry

type epochEntry struct {
	rv   string
	kind epochKind
}

// epochKind is a kind of object in the epoch.
type epochKind uint8

const (
	epochGatewayClass epochKind = iota
	epochGateway
	epochListenerSet
	epochReferenceGrant
	epochBackendTLSPolicy
	epochNamespace
	epochSecret
	epochConfigMap
	epochTrustBundle
	epochClassConfig
	epochGatewayConfig
	epochAccessPolicy
	epochLoadBalancingPolicy
	epochDNSPolicy
)

// epochFacts are the inputs that are not objects, but for the states
// others report (Access keys, tunnels, planes).
type epochFacts struct {
	controllerName, bundleVersion string
	anyEndpointAddress            bool
	tunnelProtocols               string
	addressPool                   netip.Prefix
	provisioning                  Provisioning
}

// epochOf is in's epoch. The maps of reported states are copied: the
// next translation compares their values with what they are then.
func epochOf(in *Input, sizeHint int) epoch {
	s := &in.Snapshot
	e := epoch{
		objects:    make(epochSet, sizeHint),
		facts:      epochFacts{in.ControllerName, in.BundleVersion, in.AnyEndpointAddress, strings.Join(in.TunnelProtocols, ","), in.AddressPool, in.Provisioning},
		accessKeys: maps.Clone(in.AccessKeys),
		tunnels:    maps.Clone(in.Tunnels),
		planes:     maps.Clone(in.Planes),
	}
	e.parents = make(map[types.UID]metav1.Object, len(s.GatewayClasses)+len(s.Gateways)+len(s.ListenerSets))
	addParents(&e, epochGatewayClass, s.GatewayClasses)
	addParents(&e, epochGateway, s.Gateways)
	addParents(&e, epochListenerSet, s.ListenerSets)
	addObjects(&e, epochReferenceGrant, s.ReferenceGrants)
	addObjects(&e, epochBackendTLSPolicy, s.BackendTLSPolicies)
	addObjects(&e, epochNamespace, s.Namespaces)
	addObjects(&e, epochSecret, s.Secrets)
	addObjects(&e, epochConfigMap, s.ConfigMaps)
	addObjects(&e, epochTrustBundle, s.ClusterTrustBundles)
	addObjects(&e, epochClassConfig, s.GatewayClassConfigs)
	addObjects(&e, epochGatewayConfig, s.GatewayConfigs)
	addObjects(&e, epochAccessPolicy, s.AccessPolicies)
	addObjects(&e, epochLoadBalancingPolicy, s.LoadBalancingPolicies)
	addObjects(&e, epochDNSPolicy, s.DNSPolicies)
	if len(s.BackendTLSPolicies) > 0 {
		e.targets = make(map[types.UID][]policyTarget, len(s.BackendTLSPolicies))
		for _, p := range s.BackendTLSPolicies {
			e.targets[p.UID] = policyTargets(p)
		}
	}
	if len(s.AccessPolicies) > 0 {
		e.protects = make(map[types.UID][]accessTarget, len(s.AccessPolicies))
		for _, p := range s.AccessPolicies {
			ts := accessTargets(p)
			for i := range ts {
				ts[i].section = ""
			}
			e.protects[p.UID] = ts
		}
	}
	return e
}

// addParents is addObjects for the kinds whose statuses may echo.
func addParents[P metav1.Object](e *epoch, kind epochKind, objs []P) {
	addObjects(e, kind, objs)
	for _, o := range objs {
		e.parents[o.GetUID()] = o
	}
}

func addObjects[P metav1.Object](e *epoch, kind epochKind, objs []P) {
	for _, o := range objs {
		k := keyOf(o)
		_, dup := e.objects[k.uid]
		e.objects[k.uid] = epochEntry{k.rv, kind}
		e.unstamped = dup || !k.stamped() || e.unstamped
	}
}

// same reports whether e says what last did: the same object keys, all
// stamped, and equal values for the rest.
func (e *epoch) same(last *epoch) bool {
	if e.unstamped || last.objects == nil || e.facts != last.facts || len(e.objects) != len(last.objects) {
		return false
	}
	for uid, x := range e.objects {
		if last, ok := last.objects[uid]; !ok || last != x {
			return false
		}
	}
	return e.sameStates(last)
}

// epochChange is how the epoch changed since the last translation, as
// far as a route's remembered translation (routeMemo) cares: whether it
// may stand for a new one is told by what the route read (lookup.go).
//
//   - A change of a GatewayClass, GatewayClassConfig or GatewayConfig,
//     of the inputs that are not objects (Access keys, tunnels, planes,
//     settings), or an object without a stamp: no remembered translation
//     is reused (all). These are rare, and reach a route's rules in ways
//     not worth telling apart (its Gateway's plane, its rules' Access).
//   - AccessPolicies changed: those of routes that a changed policy
//     targets, before or after, or that attach to a Gateway one targets
//     (whole or a listener), are not reused (protects): a route's Access
//     comes from the policies naming it, its rules, its listeners or
//     their Gateway (access.go), which one wins among them on age.
//   - ReferenceGrants changed: those of routes that asked a grant are
//     not reused (grants).
//   - BackendTLSPolicies changed: those of routes that read a backend a
//     changed policy targets, before or after, are not reused (targets).
//     (A route that met a policy is never reused: routeMemo.repeatable.)
//   - Gateways, ListenerSets, Namespaces, Secrets, ConfigMaps and
//     ClusterTrustBundles changed: what a route reads of them comes to it
//     through how it attaches and its Gateways' gatewayFacts, which the
//     Cache compares route by route (parentsSame), and through
//     BackendTLSPolicies.
//   - LoadBalancingPolicies changed: no route's translation reads them
//     (they give listeners health checks, and have statuses of their
//     own, which a full translation redoes).
//   - DNSPolicies changed: all, as for a class. They are rare, and the
//     DNS condition of every route publishing a hostname they reach, by
//     whatever target, reads them.
type epochChange struct {
	all      bool
	grants   bool
	targets  []policyTarget
	protects []accessTarget // sections left out
}

// changeFrom is how e changed from last. Call it only when e is not the
// same as last.
func (e *epoch) changeFrom(last *epoch) epochChange {
	if e.unstamped || last.unstamped || last.objects == nil || e.facts != last.facts || !e.sameStates(last) {
		return epochChange{all: true}
	}
	var ch epochChange
	note := func(uid types.UID, kind epochKind, from *epoch) {
		switch kind {
		case epochGateway, epochListenerSet, epochNamespace, epochSecret, epochConfigMap, epochTrustBundle, epochLoadBalancingPolicy:
		case epochReferenceGrant:
			ch.grants = true
		case epochBackendTLSPolicy:
			ch.targets = append(ch.targets, from.targets[uid]...)
		case epochAccessPolicy:
			ch.protects = append(ch.protects, from.protects[uid]...)
		default:
			ch.all = true
		}
	}
	for uid, x := range e.objects {
		if was, ok := last.objects[uid]; !ok || was != x {
			note(uid, x.kind, e)
			if ok {
				note(uid, was.kind, last)
			}
		}
	}
	for uid, was := range last.objects {
		if _, ok := e.objects[uid]; !ok {
			note(uid, was.kind, last)
		}
	}
	return ch
}

// spares reports whether the remembered translation m of route r may
// survive the change, as far as the epoch goes (see epochChange).
func (ch *epochChange) spares(m *routeMemo, r *routeInfo) bool {
	if ch.all || ch.grants && m.reads.grants {
		return false
	}
	for _, t := range ch.protects {
		if t.kind == r.kind && t.namespace == r.meta.Namespace && t.name == r.meta.Name {
			return false
		}
		if t.kind == "Gateway" {
			for i := range m.parents {
				if gw := m.parents[i].gw; gw.Namespace == t.namespace && gw.Name == t.name {
					return false
				}
			}
		}
	}
	for i := range m.reads.backends {
		if t, ok := m.reads.backends[i].policyTarget(); ok && slices.Contains(ch.targets, t) {
			return false
		}
	}
	return true
}

// sameStates reports whether e and last hold equal reported states.
func (e *epoch) sameStates(last *epoch) bool {
	return sameValues(e.accessKeys, last.accessKeys, func(a, b *AccessKeys) bool { return *a == *b }) &&
		sameValues(e.tunnels, last.tunnels, (*TunnelState).Equal) &&
		sameValues(e.planes, last.planes, (*PlaneState).Equal)
}

// sameValues reports whether two maps of reported states have the same
// keys and equal values (the same pointer is the same value; nil values
// are equal only to nil).
func sameValues[K comparable, V any](a, b map[K]*V, equal func(a, b *V) bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || x != y && (x == nil || y == nil || !equal(x, y)) {
			return false
		}
	}
	return true
}

// keyPairProblem is keyPairProblem remembered per Secret (by its key).
func (c *Cache) keyPairProblem(s *corev1.Secret) string {
	if c == nil {
		return keyPairProblem(s)
	}
	k := keyOf(s)
	if !k.stamped() {
		return keyPairProblem(s)
	}
	msg, ok := c.keyPairsPrev[k]
	if !ok {
		msg = keyPairProblem(s)
	}
	if c.keyPairsNext != nil {
		c.keyPairsNext[k] = msg
	}
	return msg
}

// validated returns the remembered result for a rule, computing it with
// check on a miss. A rule of a route without a resourceVersion is always
// checked.
func (c *Cache) validated(key ruleKey, check func() error) error {
	if c == nil || !key.route.stamped() {
		return check()
	}
	err, ok := c.prev[key]
	if !ok {
		err = check()
	}
	if c.next != nil {
		c.next[key] = err
	} else {
		c.prev[key] = err // a patch: see endFull
	}
	return err
}

// forgetRules notes that a patch replaced a route: nothing will ask for
// the remembered validations of the object it was again, and a full
// translation, which would sweep them, may not come for a long time. Once
// patches have replaced sweepAfter routes, the validations of routes the
// last run no longer has are dropped, in one pass over them all: a pass
// for each route would cost more than the rest of a patch.
func (c *Cache) forgetRules() {
	if c.replaced++; c.replaced < sweepAfter {
		return
	}
	c.replaced = 0
	for k := range c.prev {
		if _, ok := c.last.slotOf.find(k.route.uid, k.route.rv); !ok {
			delete(c.prev, k)
		}
	}
}

// sweepAfter is how many replaced routes' validations the Cache keeps
// before it sweeps them (forgetRules).
const sweepAfter = 64

// ruleKey is what a rule's validation depends on: the rule (the route's
// key and the rule's index in it: under the Cache's contract, its
// content), and the parts of its translation that depend on other
// objects: a mirror whose backend is missing is left out, and a backend
// that cannot be resolved answers with a status instead of a cluster.
type ruleKey struct {
	route   objKey // of a *gwv1.HTTPRoute or *gwv1.GRPCRoute
	rule    int
	filters int    // the rule's and its backends'
	failed  uint64 // bit i: backend i fails with a status
	// access is the identity headers of the rule's Access, which its
	// header filters must leave alone (all "" without Access).
	access [4]string
}

func newRuleKey(route metav1.Object, i int, r *proxycfg.Rule) ruleKey {
	k := ruleKey{route: keyOf(route), rule: i, filters: len(r.Filters)}
	if a := r.Access; a != nil {
		k.access = [4]string{a.EmailHeader, a.SubjectHeader, a.GroupsHeader, a.ServiceTokenHeader}
	}
	for i, b := range r.Backends {
		k.filters += len(b.Filters)
		if b.Status != 0 {
			k.failed |= 1 << (i % 64)
		}
	}
	return k
}
