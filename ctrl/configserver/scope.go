package configserver

import (
	"log/slog"
	"sync"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// scope is one config and what its held requests wait on: its own
// Encoder, so a config is compared with the last one of the same scope
// and its JSON reused, and its own changed channel, so a publish wakes
// only the requests held for that config.
type scope struct {
	log *slog.Logger

	// pubMu serialises publishes; enc, which remembers the last config
	// published, is only touched under it.
	pubMu sync.Mutex
	enc   proxycfg.Encoder

	// mu guards the fields below. Handlers take it for an instant to
	// read them; publishes to replace them.
	mu  sync.Mutex
	doc *document // nil before the first publish
	// changed is closed when doc is replaced, waking every held
	// request; a new channel takes its place.
	changed chan struct{}
}

func newScope(log *slog.Logger) *scope {
	return &scope{log: log, changed: make(chan struct{})}
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
	sc.wakeLocked()
	return doc, true, nil
}

// wakeLocked wakes every request held on the scope; sc.mu is held.
func (sc *scope) wakeLocked() {
	close(sc.changed)
	sc.changed = make(chan struct{})
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

// look returns the document and the channel closed at the next change,
// both read at one instant.
func (sc *scope) look() (*document, <-chan struct{}) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.doc, sc.changed
}
