// This file implements the allocation bound of one short pipe.

package pipe

import (
	"context"
	"net"
	"testing"
)

// A pipe that moves 1 KiB each way between conns already connected, whose
// peers have sent their bytes and ended their streams, allocates only the
// pipe, its goroutines, its timer and channel, and on the kernel path the
// sockets' raw conns and a splicer per direction: a small constant,
// nothing per read.
func TestAllocsPerPipe(t *testing.T) {
	if testing.Short() {
		t.Skip("opens many sockets")
	}
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) { allocsPerPipe(t, path.wrap) })
	}
}

func allocsPerPipe(t *testing.T, wrap func(c, b net.Conn) (net.Conn, net.Conn)) {
	const runs = 50
	type set struct {
		cp, bp *net.TCPConn
		cc, bc net.Conn
	}
	sets := make([]set, runs+1)
	payload := make([]byte, 1<<10)
	for i := range sets {
		s := &sets[i]
		var cc, bc *net.TCPConn
		s.cp, cc = tcpPair(t)
		bc, s.bp = tcpPair(t)
		s.cc, s.bc = wrap(cc, bc)
		s.cp.Write(payload)
		s.cp.CloseWrite()
		s.bp.Write(payload)
		s.bp.CloseWrite()
	}
	defer func() {
		for _, s := range sets {
			s.cp.Close()
			s.bp.Close()
		}
	}()
	ctx := context.Background()
	i := 0
	var last Result
	allocs := testing.AllocsPerRun(runs, func() {
		s := sets[i]
		i++
		last = Run(ctx, s.cc, s.bc, Options{})
	})
	if last.ClientToBackend != 1<<10 || last.BackendToClient != 1<<10 {
		t.Fatalf("moved %d and %d bytes; want 1 KiB each way", last.ClientToBackend, last.BackendToClient)
	}
	t.Logf("%.1f allocations per pipe", allocs)
	if allocs > 12 {
		t.Errorf("%.1f allocations per pipe; want at most 12", allocs)
	}
}
