package dataplane

import (
	"testing"
	"time"
)

// BenchmarkSessionCodec times what a pinned request costs in tokens: a
// token decoded (signed by the first key, or by the second during a
// rotation) and one encoded for the response.
func BenchmarkSessionCodec(b *testing.B) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	oldKey := []byte("the key before a rotation, 32 b!")
	one := newSessionCodec(sessTestKey)
	rotating := newSessionCodec(sessTestKey, oldKey)
	tokens := map[string]string{
		"decode":          string(one.Encode(nil, sessTestScope, "10.0.0.7:8080", t0, t0)),
		"decode-previous": string(newSessionCodec(oldKey).Encode(nil, sessTestScope, "10.0.0.7:8080", t0, t0)),
	}
	for name, c := range map[string]*sessionCodec{"decode": one, "decode-previous": rotating} {
		tok := tokens[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, ok := c.Decode(tok, sessTestScope); !ok {
					b.Fatal("refused")
				}
			}
		})
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, maxSessionTokenLen)
		for b.Loop() {
			buf = one.Encode(buf[:0], sessTestScope, "10.0.0.7:8080", t0, t0)
		}
	})
}
