//go:build !race

package dataplane

import (
	"net/http"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

func TestAllocsSessionDecode(t *testing.T) {
	c := NewSessionCodec(sessTestKey)
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
	bad := tok[:20] + "A" + tok[21:]
	if n := testing.AllocsPerRun(1000, func() {
		_, _, _, ok = c.Decode(bad, sessTestScope)
	}); n > 0 {
		t.Errorf("Decode of a bad token: %v allocations, want 0", n)
	}
}

func TestAllocsSessionEncode(t *testing.T) {
	c := NewSessionCodec(sessTestKey)
	buf := make([]byte, 0, MaxSessionTokenLen)
	if n := testing.AllocsPerRun(1000, func() {
		buf = c.Encode(buf[:0], sessTestScope, "10.0.0.7:8080", sessT0, sessT0)
	}); n > 0 {
		t.Errorf("Encode into a large enough buffer: %v allocations, want 0", n)
	}
}

func TestAllocsSessionToken(t *testing.T) {
	p, err := compileSession(&proxycfg.SessionPersistence{Name: "tg"})
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Cookie": {"a=1; b=2", " c=3 ;tg=\"value\"; d=4"}}
	var got string
	if n := testing.AllocsPerRun(1000, func() { got = p.token(h) }); n > 0 {
		t.Errorf("token (cookie): %v allocations, want 0", n)
	}
	if got != "value" {
		t.Fatalf("token = %q", got)
	}
	hp, err := compileSession(&proxycfg.SessionPersistence{Name: "x-session", Type: proxycfg.SessionHeader})
	if err != nil {
		t.Fatal(err)
	}
	h = http.Header{"X-Session": {" v "}}
	if n := testing.AllocsPerRun(1000, func() { got = hp.token(h) }); n > 0 {
		t.Errorf("token (header): %v allocations, want 0", n)
	}
	if got != "v" {
		t.Fatalf("token = %q", got)
	}
}
