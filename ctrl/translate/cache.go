package translate

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/dataplane"
)

// Cache remembers, between translations, the one costly check that
// depends on nothing but a rule's own spec: whether the proxy accepts the
// rule (matches, filters, settings). It is keyed by the rule's address in
// its route object, which an informer replaces, never edits, when the
// route changes, so a hit is always for identical input. Each translation
// keeps only the entries it used, so the cache holds no dead routes.
//
// A Cache changes how fast Translate is, never what it returns. It may be
// shared by sequential translations; Translate locks it for its duration.
type Cache struct {
	mu   sync.Mutex
	prev map[any]error
	next map[any]error

	// Whole-route memos (see routeMemo), valid only while the epoch, the
	// objects every route depends on, is unchanged.
	epoch      map[any]bool // a set: listers return objects in any order
	epochSame  bool
	routesPrev map[any]*routeMemo
	routesNext map[any]*routeMemo

	// Key-pair checks by Secret: parsing a certificate and its key costs
	// far more than the rest of a listener, and Secrets rarely change.
	keyPairsPrev map[*corev1.Secret]string
	keyPairsNext map[*corev1.Secret]string

	// hits and misses of whole-route memos in the last translation.
	hits, misses int
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

func (c *Cache) begin(in *Input) {
	c.mu.Lock()
	c.next = make(map[any]error, len(c.prev))
	epoch := epochOf(in, len(c.epoch))
	c.epochSame = len(epoch) == len(c.epoch)
	for o := range epoch {
		if !c.epochSame {
			break
		}
		c.epochSame = c.epoch[o]
	}
	c.epoch = epoch
	if !c.epochSame {
		c.routesPrev = nil
	}
	c.routesNext = make(map[any]*routeMemo, len(c.routesPrev))
	c.keyPairsNext = make(map[*corev1.Secret]string, len(c.keyPairsPrev))
	c.hits, c.misses = 0, 0
}

func (c *Cache) end() {
	c.prev, c.next = c.next, nil
	c.routesPrev, c.routesNext = c.routesNext, nil
	c.keyPairsPrev, c.keyPairsNext = c.keyPairsNext, nil
	c.mu.Unlock()
}

// epochOf lists what every route's translation may depend on besides its
// own object and its backends: informers replace an object on every
// change, so comparing pointers, in any order, tells whether anything
// changed.
func epochOf(in *Input, sizeHint int) map[any]bool {
	s := &in.Snapshot
	set := make(map[any]bool, sizeHint)
	set[epochFacts{in.ControllerName, in.BundleVersion, in.AnyEndpointAddress}] = true
	addObjects(set, s.GatewayClasses)
	addObjects(set, s.Gateways)
	addObjects(set, s.ListenerSets)
	addObjects(set, s.ReferenceGrants)
	addObjects(set, s.BackendTLSPolicies)
	addObjects(set, s.Namespaces)
	addObjects(set, s.Secrets)
	addObjects(set, s.ConfigMaps)
	addObjects(set, s.GatewayClassConfigs)
	return set
}

// epochFacts are the inputs that are not objects.
type epochFacts struct {
	controllerName, bundleVersion string
	anyEndpointAddress            bool
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
	c.keyPairsNext[s] = msg
	return msg
}

// memo returns the remembered translation of a route object, if any.
func (c *Cache) memo(route any) *routeMemo {
	if c == nil {
		return nil
	}
	return c.routesPrev[route]
}

func (c *Cache) remember(route any, m *routeMemo) {
	if c != nil && !m.noMemo {
		c.routesNext[route] = m
	}
}

// validated returns the remembered result for a rule, computing it with
// check on a miss.
func (c *Cache) validated(key any, check func() error) error {
	if c == nil {
		return check()
	}
	err, ok := c.prev[key]
	if !ok {
		err = check()
	}
	c.next[key] = err
	return err
}

// ruleKey is a cache key for a rule of either route kind. Besides the
// rule, it holds the parts of the translation that depend on other
// objects: a mirror whose backend is missing is left out, and a backend
// that cannot be resolved answers with a status instead of a cluster.
type ruleKey struct {
	http    *gwv1.HTTPRouteRule
	grpc    *gwv1.GRPCRouteRule
	filters int
	failed  uint64 // bit i: backend i fails with a status
}

func newRuleKey(http *gwv1.HTTPRouteRule, grpc *gwv1.GRPCRouteRule, r *dataplane.Rule) ruleKey {
	k := ruleKey{http: http, grpc: grpc, filters: len(r.Filters)}
	for i, b := range r.Backends {
		if b.Status != 0 {
			k.failed |= 1 << (i % 64)
		}
	}
	return k
}
