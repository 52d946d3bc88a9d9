package translate

// Patched reports whether the cache's last translation was a patch.
func Patched(c *Cache) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.patched
}
