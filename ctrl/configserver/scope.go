// This file implements a scope: one config and its held requests.

package configserver

import (
	"log/slog"
	"sync"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// scope is one config and what its held requests wait on: the shared
// proxies' (Publish) or one dedicated plane's (PublishPlanes). Each has
// its own Encoder, so a plane's config is compared with that plane's
// last one and its JSON reused, and its own changed channel, so a
// publish wakes only the requests held for that config.
type scope struct {
	shared bool
	log    *slog.Logger // names the plane, for a plane's scope

	// pubMu serialises publishes; enc, which remembers the last config
	// published, is only touched under it.
	pubMu sync.Mutex
	enc   proxycfg.Encoder

	// mu guards the fields below. Handlers take it for an instant to
	// read them; publishes, and PublishPlanes for a plane's token, to
	// replace them.
	mu  sync.Mutex
	doc *document // nil before the first publish
	// history are the last versions published, the current one last:
	// the bases a delta can be sent from (delta.go).
	history []deltaBase
	// changed is closed when doc is replaced, or a plane's token
	// changes or the plane goes, waking every held request; a new
	// channel takes its place.
	changed chan struct{}
	// digest is the SHA-256 of a plane's token. A request for the
	// plane carries the digest of the token it came with, and is
	// refused when that is no longer this one: a rotated token stops
	// working for held requests too, not only for new ones.
	digest [32]byte
	// removed is set when the plane is no longer served: every request
	// for it is refused.
	removed bool
}

func newSharedScope(log *slog.Logger) *scope {
	return &scope{shared: true, log: log, changed: make(chan struct{})}
}

func newPlaneScope(key string, digest [32]byte, log *slog.Logger) *scope {
	return &scope{log: log.With("plane", key), digest: digest, changed: make(chan struct{})}
}

// publish makes cfg the scope's config. It returns the document served
// from now on, and whether it is a new version (false when cfg encodes
// to the version already served: then nobody is woken).
func (sc *scope) publish(cfg *proxycfg.Config) (*document, bool, error) {
	sc.pubMu.Lock()
	defer sc.pubMu.Unlock()
	doc, err := encodeDocument(&sc.enc, cfg)
	if err != nil {
		return nil, false, err
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.doc != nil && sc.doc.version == doc.version {
		return sc.doc, false, nil
	}
	sc.doc = doc
	h := sc.history[max(0, len(sc.history)-historyLen+1):]
	sc.history = append(append(make([]deltaBase, 0, historyLen), h...), deltaBase{version: doc.version, enc: doc.enc})
	sc.wakeLocked()
	return doc, true, nil
}

// wakeLocked wakes every request held on the scope; sc.mu is held.
func (sc *scope) wakeLocked() {
	close(sc.changed)
	sc.changed = make(chan struct{})
}

// rekey makes digest the plane's token digest. When it differs from the
// last, held requests are woken so that they are refused: they came
// with the old token. It reports whether it differed.
func (sc *scope) rekey(digest [32]byte) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.digest == digest {
		return false
	}
	sc.digest = digest
	sc.wakeLocked()
	return true
}

// remove ends the plane: held requests are woken and refused, and so is
// every later one that looked the plane up before it went.
func (sc *scope) remove() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.removed = true
	sc.wakeLocked()
}

// bases are the versions a delta to the current one can be sent from.
func (sc *scope) bases() []deltaBase {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.history
}

// current is the document served, nil before the first publish.
func (sc *scope) current() *document {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.doc
}

// version is the version served, "" before the first publish.
func (sc *scope) version() string {
	if d := sc.current(); d != nil {
		return d.version
	}
	return ""
}

// grant is what a request's token opened: a scope and, for a plane, the
// digest of that token.
type grant struct {
	sc     *scope
	digest [32]byte
}

// look returns what the request is to be answered from: the document
// and the channel closed at the next change, both read at one instant,
// and whether the grant still holds. The shared scope's is checked at
// the door only, as the token function decides it; a plane's is checked
// at every look, since PublishPlanes may end it at any time.
func (g grant) look() (doc *document, changed <-chan struct{}, ok bool) {
	sc := g.sc
	sc.mu.Lock()
	defer sc.mu.Unlock()
	ok = sc.shared || (!sc.removed && sc.digest == g.digest)
	return sc.doc, sc.changed, ok
}
