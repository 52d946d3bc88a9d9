package translate

import (
	"sync"

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
	epoch := make(map[any]bool, len(c.epoch))
	for _, o := range epochOf(in) {
		epoch[o] = true
	}
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
	c.hits, c.misses = 0, 0
}

func (c *Cache) end() {
	c.prev, c.next = c.next, nil
	c.routesPrev, c.routesNext = c.routesNext, nil
	c.mu.Unlock()
}

// epochOf lists what every route's translation may depend on besides its
// own object and its backends: informers replace an object on every
// change, so comparing pointers, in any order, tells whether anything
// changed. (The few non-object values are distinct from any pointer.)
func epochOf(in *Input) []any {
	s := &in.Snapshot
	out := []any{in.ControllerName, in.BundleVersion, in.AnyEndpointAddress}
	out = appendObjects(out, s.GatewayClasses)
	out = appendObjects(out, s.Gateways)
	out = appendObjects(out, s.ListenerSets)
	out = appendObjects(out, s.ReferenceGrants)
	out = appendObjects(out, s.BackendTLSPolicies)
	out = appendObjects(out, s.Namespaces)
	out = appendObjects(out, s.Secrets)
	out = appendObjects(out, s.ConfigMaps)
	return appendObjects(out, s.GatewayClassConfigs)
}

func appendObjects[T any](out []any, objs []*T) []any {
	for _, o := range objs {
		out = append(out, o)
	}
	return out
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
