// This file starts the floor relay, the baseline that stands in for nginx
// in BenchmarkProxy.

package dataplane

import (
	"net"
	"testing"

	"github.com/tunnelgate/tunnelgate/test/floorrelay"
)

// serveFloor starts a floor relay (package floorrelay) in front of
// backend and returns its address.
func serveFloor(b testing.TB, backend string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	r := floorrelay.New(backend)
	go r.Serve(ln)
	b.Cleanup(func() {
		ln.Close()
		r.Close()
	})
	return ln.Addr().String()
}
