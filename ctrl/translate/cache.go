// This file implements the Cache: incremental translation.

package translate

import (
	"net/netip"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Cache is incremental translation: a layer in front of Translate that
// carries work from one translation to the next. Cache.Translate returns
// what Translate would; only how fast changes. It remembers:
//
//   - key-pair checks, per Secret object;
//   - rule validation, per rule of a route object;
//   - the whole last translation (lastRun): each route's translation, to
//     reuse when what it read is unchanged (routememo.go), and the
//     translator's working state, so that when only backends changed, or
//     routes were edited without changing how they attach, or added or
//     deleted, the next translation patches the last one (patch.go,
//     routepatch.go) instead of redoing it.
//
// The contract every layer is to tell change by is the one in
// dataplane/proxycfg's package doc: identity and content stamp, never
// pointer or position. The Cache does not follow it yet: it is keyed by
// object addresses, as follows. Its patches (patch.go, routepatch.go)
// cover endpoint changes, route edits, and HTTPRoutes and GRPCRoutes
// added or deleted, which they tell by route identity (kind, namespace,
// name) and order by age, as a full translation does; where a route
// added or deleted would settle something with other routes (a conflict,
// a hostname claim, an AccessPolicy, a plane, a cluster's place), and
// for any other object added or deleted, they leave the work to a full
// translation.
//
// Its contract with its callers is that an object, once translated, is
// never edited: a changed object is a new object. Informers replace,
// never edit, the objects they cache, and standalone mode loads new ones.
// So the Cache tells an unchanged object by its address (sameObject), and
// its memos are keyed by object addresses. An object edited in place
// would go unseen (TestCacheSeesReplacedObjects shows it).
//
// Each translation keeps only the entries it used, so the cache holds no
// dead objects. Sequential translations may share it; its Translate locks it
// for its duration.
type Cache struct {
	mu   sync.Mutex
	prev map[ruleKey]error
	next map[ruleKey]error

	// The objects every route depends on (the epoch), as a set: listers
	// return objects in any order. Route memos and patches are valid only
	// while it is unchanged.
	epoch     map[any]bool
	epochSame bool
	last      *lastRun

	// Key-pair checks by Secret: parsing a certificate and its key costs
	// far more than the rest of a listener, and Secrets rarely change.
	keyPairsPrev map[*corev1.Secret]string
	keyPairsNext map[*corev1.Secret]string

	// The routes of the full translation under way, in the order
	// translated, for the next one (lastRun).
	slots  []routeSlot
	slotOf map[any]int

	// What the last translation did: routes reused and translated, and
	// whether it was a patch.
	hits, misses int
	patched      bool
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
	if out := c.patch(in); out != nil {
		return out
	}
	c.hits, c.misses, c.patched = 0, 0, false // a patch that gave up may have counted
	c.beginFull(in)
	t := newTranslator(in, c)
	out := t.run()
	c.endFull(t)
	return out
}

// sameObject reports whether an input object is unchanged since a
// translation read it: under the Cache's contract, whether it is the same
// object.
func sameObject[T any](a, b *T) bool { return a == b }

// begin compares the epoch with the last translation's.
func (c *Cache) begin(in *Input) {
	epoch := epochOf(in, len(c.epoch))
	c.epochSame = len(epoch) == len(c.epoch)
	for o := range epoch {
		if !c.epochSame {
			break
		}
		c.epochSame = c.epoch[o]
	}
	c.epoch = epoch
	c.hits, c.misses, c.patched = 0, 0, false
}

// beginFull prepares a full translation: the entries it uses are carried
// over, the rest dropped.
func (c *Cache) beginFull(in *Input) {
	c.next = make(map[ruleKey]error, len(c.prev))
	c.keyPairsNext = make(map[*corev1.Secret]string, len(c.keyPairsPrev))
	c.slots = make([]routeSlot, 0, len(in.HTTPRoutes)+len(in.GRPCRoutes))
	c.slotOf = make(map[any]int, len(in.HTTPRoutes)+len(in.GRPCRoutes))
}

// endFull keeps what a full translation used, and the translation itself.
// A patch keeps the maps it read (it uses few entries, and the next full
// translation sweeps the unused ones).
func (c *Cache) endFull(t *translator) {
	c.prev, c.next = c.next, nil
	c.keyPairsPrev, c.keyPairsNext = c.keyPairsNext, nil
	c.last = newLastRun(t, c.slots, c.slotOf)
	c.slots, c.slotOf = nil, nil
}

// epochOf lists what every route's translation may depend on besides its
// own object and its backends (lookup.go): as a set of objects, in any
// order, it tells whether any of them changed (sameObject).
func epochOf(in *Input, sizeHint int) map[any]bool {
	s := &in.Snapshot
	set := make(map[any]bool, sizeHint)
	set[epochFacts{in.ControllerName, in.BundleVersion, in.AnyEndpointAddress, strings.Join(in.TunnelProtocols, ","), in.AddressPool, in.Provisioning}] = true
	addObjects(set, s.GatewayClasses)
	addObjects(set, s.Gateways)
	addObjects(set, s.ListenerSets)
	addObjects(set, s.ReferenceGrants)
	addObjects(set, s.BackendTLSPolicies)
	addObjects(set, s.Namespaces)
	addObjects(set, s.Secrets)
	addObjects(set, s.ConfigMaps)
	addObjects(set, s.ClusterTrustBundles)
	addObjects(set, s.GatewayClassConfigs)
	addObjects(set, s.GatewayConfigs)
	addObjects(set, s.AccessPolicies)
	for _, k := range in.AccessKeys {
		set[k] = true
	}
	for _, ts := range in.Tunnels {
		set[ts] = true
	}
	for _, ps := range in.Planes {
		set[ps] = true
	}
	return set
}

// epochFacts are the inputs that are not objects.
type epochFacts struct {
	controllerName, bundleVersion string
	anyEndpointAddress            bool
	tunnelProtocols               string
	addressPool                   netip.Prefix
	provisioning                  Provisioning
}

func addObjects[T any](set map[any]bool, objs []*T) {
	for _, o := range objs {
		set[o] = true
	}
}

// keyPairProblem is keyPairProblem remembered per Secret object.
func (c *Cache) keyPairProblem(s *corev1.Secret) string {
	if c == nil {
		return keyPairProblem(s)
	}
	msg, ok := c.keyPairsPrev[s]
	if !ok {
		msg = keyPairProblem(s)
	}
	if c.keyPairsNext != nil {
		c.keyPairsNext[s] = msg
	}
	return msg
}

// validated returns the remembered result for a rule, computing it with
// check on a miss.
func (c *Cache) validated(key ruleKey, check func() error) error {
	if c == nil {
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

// forgetRules drops the remembered validations of a route object a patch
// replaced: nothing will ask for them again, and a full translation, which
// would sweep them, may not come for a long time.
func (c *Cache) forgetRules(route any) {
	for k := range c.prev {
		if k.route == route {
			delete(c.prev, k)
		}
	}
}

// ruleKey is what a rule's validation depends on: the rule (the route
// object and the rule's index in it: under the Cache's contract, its
// content), and the parts of its translation that depend on other
// objects: a mirror whose backend is missing is left out, and a backend
// that cannot be resolved answers with a status instead of a cluster.
type ruleKey struct {
	route   any // *gwv1.HTTPRoute or *gwv1.GRPCRoute
	rule    int
	filters int    // the rule's and its backends'
	failed  uint64 // bit i: backend i fails with a status
	// access is the identity headers of the rule's Access, which its
	// header filters must leave alone (all "" without Access).
	access [4]string
}

func newRuleKey(route any, i int, r *proxycfg.Rule) ruleKey {
	k := ruleKey{route: route, rule: i, filters: len(r.Filters)}
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
