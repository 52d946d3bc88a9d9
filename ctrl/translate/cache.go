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
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{} }

func (c *Cache) begin() {
	c.mu.Lock()
	c.next = make(map[any]error, len(c.prev))
}

func (c *Cache) end() {
	c.prev, c.next = c.next, nil
	c.mu.Unlock()
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
