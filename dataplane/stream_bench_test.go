// This file implements the benchmarks of stream routes through the proxy.

package dataplane

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testnet"
)

// BenchmarkStream measures a TCPRoute through the proxy's socket for a
// TCP listener (to=proxy) against the same work straight to the backend,
// a TCP echo on loopback that copies through its own buffer, as a server
// reads what it serves (to=direct), and through the floor relay (to=floor):
//
//   - conn: a connection per op: dial, 64 bytes there and back, close
//     (what a short database or RPC connection costs; the proxy adds an
//     accept, a dial and the relay's start and end);
//   - bulk: 1 MiB there and back per op on one connection (the relay's
//     copying), after 32 such round trips to settle the connections.
//
// The floor relay is what any relay does and no less: accept, dial the
// echo, io.Copy each way (splice(2) on Linux), with no bounds, no routing
// and no accounting. Bulk is gated against it rather than against direct:
// both relays put every byte through loopback twice as often as direct
// does, so their times rise and fall together with the kernel's, where
// direct's alone swung two-fold from run to run on a 2-CPU VM.
func BenchmarkStream(b *testing.B) {
	echo := testnet.RawServer(b, func(c net.Conn) {
		io.CopyBuffer(struct{ io.Writer }{c}, struct{ io.Reader }{c}, make([]byte, 64<<10))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	p := quietProxy(func(o *Options) { o.StreamHost = netip.MustParseAddr("127.0.0.1") })
	if err := p.Load(streamConfig([]proxycfg.Listener{{Name: "gw/tcp", Protocol: proxycfg.ListenerTCP, Port: port}},
		[]proxycfg.Route{l4Route(proxycfg.KindTCP, "r", []string{"gw/tcp"}, toCluster("echo"))},
		tcpCluster("echo", echo))); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, ServeOptions{Plain: "127.0.0.1:0"}) }()
	b.Cleanup(func() { cancel(); <-served; p.Close() })
	proxied := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for i := 0; ; i++ { // the socket opens as Serve starts
		c, err := net.Dial("tcp", proxied)
		if err == nil {
			c.Close()
			break
		}
		if i == 500 {
			b.Fatalf("the TCP listener's socket %s did not open: %v", proxied, err)
		}
		time.Sleep(10 * time.Millisecond)
	}

	floor := serveStreamFloor(b, echo)
	for _, to := range []struct{ name, addr string }{{"proxy", proxied}, {"floor", floor}, {"direct", echo}} {
		b.Run("conn/to="+to.name, func(b *testing.B) {
			msg, got := make([]byte, 64), make([]byte, 64)
			for b.Loop() {
				c, err := net.Dial("tcp", to.addr)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, got); err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
		b.Run("bulk/to="+to.name, func(b *testing.B) {
			c, err := net.Dial("tcp", to.addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			msg, got := make([]byte, 1<<20), make([]byte, 1<<20)
			b.SetBytes(2 << 20)
			trip := func() {
				errc := make(chan error, 1)
				go func() { _, err := c.Write(msg); errc <- err }()
				if _, err := io.ReadFull(c, got); err != nil {
					b.Fatal(err)
				}
				if err := <-errc; err != nil {
					b.Fatal(err)
				}
			}
			for range 32 {
				trip()
			}
			for b.Loop() {
				trip()
			}
		})
	}
}

// serveStreamFloor serves the floor relay to backend on a loopback port
// and returns its address.
func serveStreamFloor(b *testing.B, backend string) string {
	return testnet.RawServer(b, func(c net.Conn) {
		u, err := net.Dial("tcp", backend)
		if err != nil {
			return
		}
		defer u.Close()
		go func() { io.Copy(u, c); u.(*net.TCPConn).CloseWrite() }()
		io.Copy(c, u)
	})
}
