// This file implements the Publisher, which adds the keys to each config.

package sessionkeys

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Next is where a Publisher hands configs on: the config server.
type Next interface {
	Publish(cfg *proxycfg.Config) (version string)
	PublishPlanes(planes map[string]configserver.Plane)
}

// Publisher adds the session keys of a directory to every config it
// publishes: the keys themselves to the shared proxies' config, and to a
// dedicated plane's the keys derived for it (PlaneKeys).
type Publisher struct {
	next Next
	dir  string
	log  *slog.Logger

	mu   sync.Mutex
	keys [][]byte
	last *proxycfg.Config // the last config given, as given
	// lastPlanes are the last planes given, each with the last config
	// given for it (a nil Config keeps the one before); nil before the
	// first PublishPlanes.
	lastPlanes map[string]configserver.Plane
}

// New reads the keys of dir; it fails if they cannot be read, so a
// controller does not start handing proxies keys of their own.
func New(next Next, dir string, log *slog.Logger) (*Publisher, error) {
	keys, err := Read(dir)
	if err != nil {
		return nil, err
	}
	return &Publisher{next: next, dir: dir, log: log, keys: keys}, nil
}

// Publish hands cfg on with the session keys. cfg itself is not changed:
// the translation that made it may share it.
func (p *Publisher) Publish(cfg *proxycfg.Config) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = cfg
	return p.next.Publish(withKeys(cfg, p.keys))
}

// PublishPlanes hands planes on, each plane's config carrying the keys
// derived for it. The configs themselves are not changed.
func (p *Publisher) PublishPlanes(planes map[string]configserver.Plane) {
	p.mu.Lock()
	defer p.mu.Unlock()
	last := make(map[string]configserver.Plane, len(planes))
	for key, pl := range planes {
		// The server keeps a plane's config when given none; so must
		// this, for Reload to hand it on again with new keys.
		if pl.Config == nil {
			pl.Config = p.lastPlanes[key].Config
		}
		last[key] = pl
	}
	p.lastPlanes = last
	p.next.PublishPlanes(withPlaneKeys(last, p.keys))
}

// Run reads the keys again every interval until ctx ends. When they
// changed, the last config and planes are published again with them;
// when they cannot be read, the last good keys stay.
func (p *Publisher) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.Reload()
		}
	}
}

// Reload reads the keys again, and publishes the last config and planes
// with them if they changed. It reports whether they did.
func (p *Publisher) Reload() bool {
	keys, err := Read(p.dir)
	if err != nil {
		p.log.Error("session keys not read; the proxies keep the last good ones", "err", err)
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.EqualFunc(keys, p.keys, slices.Equal) {
		return false
	}
	p.keys = keys
	p.log.Info("session keys changed", "keys", len(keys))
	if p.last != nil {
		p.next.Publish(withKeys(p.last, keys))
	}
	if p.lastPlanes != nil {
		p.next.PublishPlanes(withPlaneKeys(p.lastPlanes, keys))
	}
	return true
}

// withPlaneKeys is planes with each config a shallow copy carrying the
// keys derived from keys for that plane. A nil config (a plane with none
// yet) stays nil.
func withPlaneKeys(planes map[string]configserver.Plane, keys [][]byte) map[string]configserver.Plane {
	out := make(map[string]configserver.Plane, len(planes))
	for key, pl := range planes {
		if pl.Config != nil {
			pl.Config = withKeys(pl.Config, PlaneKeys(keys, key))
		}
		out[key] = pl
	}
	return out
}

// withKeys is a shallow copy of cfg carrying keys.
func withKeys(cfg *proxycfg.Config, keys [][]byte) *proxycfg.Config {
	c := *cfg
	c.SessionKeys = keys
	return &c
}
