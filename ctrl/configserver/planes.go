// This file implements PublishPlanes: each dedicated plane's config under
// its token.

package configserver

import (
	"crypto/sha256"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Plane is one dedicated data plane's config and the bearer token its proxies present.
type Plane struct {
	Token  string
	Config *proxycfg.Config
}

// planeSet is the dedicated planes being served.
type planeSet struct {
	// pubMu serialises PublishPlanes; refused is only touched under it.
	pubMu sync.Mutex
	// refused is why each plane left out by the last PublishPlanes was,
	// so the error is logged when a plane is first refused, not at
	// every publish.
	refused map[string]string

	// mu guards the maps, which PublishPlanes replaces whole. byDigest
	// finds a plane by the SHA-256 of its token; byKey by its key.
	mu       sync.RWMutex
	byKey    map[string]*scope
	byDigest map[[32]byte]planeEntry
}

type planeEntry struct {
	key string
	sc  *scope
}

// lookup returns the plane whose token has digest, and its key; nil when
// there is none.
func (ps *planeSet) lookup(digest [32]byte) (*scope, string) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	e := ps.byDigest[digest]
	return e.sc, e.key
}

// PublishPlanes replaces the set of dedicated data planes; keys name
// them (the controller uses a Gateway's "namespace/name") and are opaque
// here. A plane's proxies present its Token and read its Config only: not
// the shared config, nor another plane's. Each Config is held to what
// Publish says of cfg (never modified, kept to compare the plane's next
// config with), and a plane's waiting proxies are woken only when its
// version changes. A nil Config keeps what the plane served, or, for a
// new plane, makes its proxies wait as before a first Publish.
//
// A plane left out of planes is gone: its token is refused from now on,
// held requests included. So is a plane whose token changed, for the
// proxies holding the old one. A plane whose token is empty, is the
// shared proxies' token or is another plane's too is not served at all,
// and an error naming it is logged: a token must name one config.
func (s *Server) PublishPlanes(planes map[string]Plane) {
	ps := &s.planes
	ps.pubMu.Lock()
	defer ps.pubMu.Unlock()
	digests := s.servable(planes)

	ps.mu.RLock()
	old := ps.byKey
	ps.mu.RUnlock()
	byKey := make(map[string]*scope, len(digests))
	byDigest := make(map[[32]byte]planeEntry, len(digests))
	keys := slices.Sorted(maps.Keys(digests))
	for _, key := range keys {
		d := digests[key]
		sc := old[key]
		switch {
		case sc == nil:
			sc = newPlaneScope(key, d, s.log)
		case sc.rekey(d):
			sc.log.Info("plane token changed: proxies still holding the old one are refused")
		}
		byKey[key], byDigest[d] = sc, planeEntry{key, sc}
	}
	ps.mu.Lock()
	ps.byKey, ps.byDigest = byKey, byDigest
	ps.mu.Unlock()
	// After the swap, so that a request that found the plane before
	// it is still refused when it looks at the scope.
	for key, sc := range old {
		if byKey[key] != sc {
			sc.remove()
			sc.log.Info("plane no longer served: its proxies' token is refused from now on")
		}
	}
	// Last, as encoding hundreds of planes takes a while: meanwhile a
	// new plane's proxies are held as before a first Publish, and woken
	// by its config.
	for _, key := range keys {
		if cfg := planes[key].Config; cfg != nil {
			s.publish(byKey[key], cfg)
		}
	}
}

// servable returns the digest of each plane's token, leaving out the
// planes whose token could not tell their proxies from others'.
func (s *Server) servable(planes map[string]Plane) map[string][32]byte {
	ps := &s.planes
	var shared [32]byte
	hasShared := false
	if t := s.token(); t != "" {
		shared, hasShared = sha256.Sum256([]byte(t)), true
	}
	refused := map[string]string{}
	owners := map[[32]byte][]string{}
	for _, key := range slices.Sorted(maps.Keys(planes)) {
		tok := planes[key].Token
		d := sha256.Sum256([]byte(tok))
		switch {
		case tok == "":
			refused[key] = "it has no token; give its proxies one"
		case hasShared && d == shared:
			refused[key] = "its token is the shared proxies' token, which would let either read the other's config; give the plane a token of its own"
		default:
			owners[d] = append(owners[d], key)
		}
	}
	out := make(map[string][32]byte, len(planes))
	for d, keys := range owners {
		if len(keys) == 1 {
			out[keys[0]] = d
			continue
		}
		for _, key := range keys {
			others := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == key })
			refused[key] = "its token is also the token of " + strings.Join(others, ", ") + ", which would let each read the others' config; give each plane a token of its own"
		}
	}
	for _, key := range slices.Sorted(maps.Keys(refused)) {
		if why := refused[key]; ps.refused[key] != why {
			s.log.Error("plane not served: its proxies' requests are refused", "plane", key, "reason", why)
		}
	}
	ps.refused = refused
	return out
}

// PlaneVersion is the version a plane serves, "" when there is no such
// plane or nothing was published for it yet.
func (s *Server) PlaneVersion(key string) string {
	ps := &s.planes
	ps.mu.RLock()
	sc := ps.byKey[key]
	ps.mu.RUnlock()
	if sc == nil {
		return ""
	}
	return sc.version()
}
