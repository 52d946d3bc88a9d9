//go:build !race

// This file implements the allocation budgets of Read (the race detector
// allocates on its own, so they are built without it).

package sni

import (
	"bytes"
	"crypto/tls"
	"testing"
)

// TestAllocsRead: reading a typical hello into a buffer that holds it
// allocates only what Read returns: the server name, and the ALPN list
// and the one string its names share. A fragmented hello adds its
// reassembly buffer.
func TestAllocsRead(t *testing.T) {
	typical := captureGo(t, &tls.Config{ServerName: "www.example.com", NextProtos: []string{"h2", "http/1.1"}})
	msg := typical[5:]
	for _, c := range []struct {
		name string
		in   []byte
		max  float64
	}{
		{"sni and alpn", typical, 3},
		{"sni only", captureGo(t, &tls.Config{ServerName: "www.example.com"}), 1},
		{"no sni, no alpn", wire(fields().body()), 0},
		{"fragmented", records(msg, 300), 4},
	} {
		buf := make([]byte, 0, 4096)
		r := bytes.NewReader(c.in)
		allocs := testing.AllocsPerRun(200, func() {
			r.Reset(c.in)
			if _, _, err := Read(r, buf, Limits{}); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("%s (%d bytes): %.0f allocations", c.name, len(c.in), allocs)
		if allocs > c.max {
			t.Errorf("%s: %.0f allocations, want at most %.0f", c.name, allocs, c.max)
		}
	}
}
