package sessionkeys

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Next is where a Publisher hands configs on: the config server.
type Next interface {
	Publish(cfg *proxycfg.Config) (version string)
}

// Publisher adds the session keys of a directory to every config it
// publishes.
type Publisher struct {
	next Next
	dir  string
	log  *slog.Logger

	mu   sync.Mutex
	keys [][]byte
	last *proxycfg.Config // the last config given, as given
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

// Run reads the keys again every interval until ctx ends. When they
// changed, the last config is published again with them; when they
// cannot be read, the last good keys stay.
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

// Reload reads the keys again, and publishes the last config with them if
// they changed. It reports whether they did.
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
	return true
}

// withKeys is a shallow copy of cfg carrying keys.
func withKeys(cfg *proxycfg.Config, keys [][]byte) *proxycfg.Config {
	c := *cfg
	c.SessionKeys = keys
	return &c
}
