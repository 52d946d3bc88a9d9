// This file implements the cache file.

package configwatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

// loadCache serves the cached document, if there is one, so a restarted
// proxy is ready before the controller answers (or while it cannot). The
// controller is then asked with the cached version: an unchanged config
// costs nothing, and an endpoint change since costs cluster updates only.
// A cache that does not load is logged and left for the next write.
func (c *Client) loadCache() {
	b, err := os.ReadFile(c.opts.CacheFile)
	if errors.Is(err, fs.ErrNotExist) {
		c.log.Info("no config cache yet; waiting for the controller", "file", c.opts.CacheFile)
		return
	}
	if err == nil {
		var doc *Document
		if doc, err = DecodeDocument(b); err == nil {
			if _, err = c.apply(doc); err == nil {
				c.asked = doc.Version
				c.stats.Loads[LoadCache].Add(1)
				c.log.Info("serving the cached config until the controller answers", "version", doc.Version, "file", c.opts.CacheFile)
				return
			}
		}
	}
	c.stats.fail(FailCache)
	c.log.Warn("config cache not loaded; waiting for the controller", "file", c.opts.CacheFile, "err", err)
}

// The cache file is written by a goroutine of its own (cacheWriter), so
// that the next request is not held behind encoding and syncing
// megabytes: it writes the latest document applied, skipping any that a
// newer one replaced before it got to them, and the last one before Run
// returns.
type cacheWriter struct {
	path  string
	log   *slog.Logger
	stats *Stats
	wake  chan struct{}

	mu   sync.Mutex
	next *Document // applied, not written yet
	raw  []byte    // next's JSON as received; nil: encode it
}

func newCacheWriter(path string, log *slog.Logger, stats *Stats) *cacheWriter {
	return &cacheWriter{path: path, log: log, stats: stats, wake: make(chan struct{}, 1)}
}

// offer has doc written, raw being its JSON (nil for one made from a
// delta, which is encoded whole). doc must not change afterwards.
func (w *cacheWriter) offer(doc *Document, raw []byte) {
	w.mu.Lock()
	w.next, w.raw = doc, raw
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run writes offered documents until ctx ends, then the last one offered.
func (w *cacheWriter) run(ctx context.Context) {
	for {
		select {
		case <-w.wake:
			w.write()
		case <-ctx.Done():
			w.write()
			return
		}
	}
}

// write writes the document offered last, if any.
func (w *cacheWriter) write() {
	w.mu.Lock()
	doc, raw := w.next, w.raw
	w.next, w.raw = nil, nil
	w.mu.Unlock()
	if doc == nil {
		return
	}
	var err error
	if raw == nil {
		raw, err = json.Marshal(doc)
	}
	if err == nil {
		err = writeFileAtomic(w.path, raw)
	}
	if err != nil {
		w.stats.fail(FailCache)
		w.log.Warn("config cache not written; a restart will wait for the controller", "err", err)
	}
}

// writeFileAtomic replaces path with b so that a reader, or a proxy
// restarting after a crash, finds the old file or the new one, never a
// mix: the bytes go to a temporary file in the same directory, are
// synced, and the file is renamed over path (rename is atomic within a
// file system, POSIX rename(2)). The file is readable by its owner only:
// the config holds session keys and TLS keys.
func writeFileAtomic(path string, b []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp") // mode 0600
	if err != nil {
		return fmt.Errorf("config cache: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(b); err != nil {
		return fmt.Errorf("config cache: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("config cache: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("config cache: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("config cache: %w", err)
	}
	// The rename is durable once the directory is synced. Best effort:
	// without it a power cut may bring back the previous file, which is
	// still a whole config.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
