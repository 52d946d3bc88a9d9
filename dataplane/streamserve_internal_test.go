// This file implements the test of where origin ports open.

package dataplane

import (
	"net/netip"
	"testing"
)

// Origin ports open on loopback only, whatever the origin listener's
// address: Access on a stream is cloudflared's check alone, so a port
// others reach would let them past it.
func TestOriginPortsOpenOnLoopbackOnly(t *testing.T) {
	for _, c := range []struct{ origin, want string }{
		{"127.0.0.1:8080", "127.0.0.1"},
		{"127.0.0.2:8080", "127.0.0.2"},
		{"[::1]:8080", "::1"},
		{":8080", "127.0.0.1"},
		{"0.0.0.0:8080", "127.0.0.1"},
		{"[::]:8080", "127.0.0.1"},
		{"10.1.2.3:8080", "127.0.0.1"},
		{"[fe80::1%eth0]:8080", "127.0.0.1"},
		{"localhost:8080", "127.0.0.1"},
		{"unix:/run/tunnelgate/origin.sock", "127.0.0.1"},
	} {
		if got := originHostOf(c.origin); got != netip.MustParseAddr(c.want) {
			t.Errorf("origin listener %s: origin ports on %v, want %s", c.origin, got, c.want)
		}
	}
}
