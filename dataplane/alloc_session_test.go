//go:build !race

package dataplane

import (
	"testing"
)

func TestAllocsSessionDecode(t *testing.T) {
	c := newSessionCodec(sessTestKey)
	tok := string(c.Encode(nil, sessTestScope, "10.0.0.7:8080", sessT0, sessT0))
	var ok bool
	if n := testing.AllocsPerRun(1000, func() {
		_, _, _, ok = c.Decode(tok, sessTestScope)
	}); n > 1 {
		t.Errorf("Decode of a valid token: %v allocations, want at most 1 (the endpoint)", n)
	}
	if !ok {
		t.Fatal("token did not decode")
	}
	flip := byte('A')
	if tok[20] == 'A' {
		flip = 'B'
	}
	bad := tok[:20] + string(flip) + tok[21:]
	if n := testing.AllocsPerRun(1000, func() {
		_, _, _, ok = c.Decode(bad, sessTestScope)
	}); n > 0 {
		t.Errorf("Decode of a bad token: %v allocations, want 0", n)
	}
}

func TestAllocsSessionEncode(t *testing.T) {
	c := newSessionCodec(sessTestKey)
	buf := make([]byte, 0, maxSessionTokenLen)
	if n := testing.AllocsPerRun(1000, func() {
		buf = c.Encode(buf[:0], sessTestScope, "10.0.0.7:8080", sessT0, sessT0)
	}); n > 0 {
		t.Errorf("Encode into a large enough buffer: %v allocations, want 0", n)
	}
}
