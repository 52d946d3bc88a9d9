package configwatch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
