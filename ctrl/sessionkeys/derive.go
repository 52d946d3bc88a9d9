// This file derives a dedicated plane's keys.

package sessionkeys

import (
	"crypto/hmac"
	"crypto/sha256"
)

// planeKeyLabel starts what a plane's key is derived from; the NUL ends
// it, so no plane name can make one label's input look like another's.
const planeKeyLabel = "tunnelgate session key\x00"

// PlaneKeys are a dedicated data plane's session keys: for each of keys,
// in the same order (so the signing key stays first and a rotation
// carries over), HMAC-SHA256(key, "tunnelgate session key\x00" + plane),
// 32 bytes. Every controller replica derives the same keys, so all the
// plane's proxies accept each other's cookies; a plane's keys do not
// give away the directory's nor another plane's, so a plane cannot
// forge the session tokens of the shared proxies or of another plane.
func PlaneKeys(keys [][]byte, plane string) [][]byte {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(planeKeyLabel))
		m.Write([]byte(plane))
		out[i] = m.Sum(nil)
	}
	return out
}
