// This file implements the tests of what a quiet stream or WebSocket holds in the proxy: no relay buffer.

//go:build linux

package dataplane

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testnet"
	"github.com/tunnelgate/tunnelgate/test/testpki"
)

// Streams of a TCPRoute that have moved bytes both ways and now wait (an
// SSH session or a pooled database connection left quiet) hold no relay
// buffer in the proxy: the relay between its two plain sockets goes
// through the kernel on Linux (package pipe), so a waiting stream's heap is its
// bookkeeping alone, where copying through buffers would hold 64 KiB
// per stream for as long as it lasts.
func TestQuietStreamsHoldNoBuffer(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 250 streams through the proxy")
	}
	const streams, most = 250, 16 << 10
	backend := testnet.RawServer(t, func(c net.Conn) {
		io.WriteString(c, "a\n")
		io.Copy(c, c)
	})
	port := freePort(t)
	p := quietProxy()
	if err := p.Load(streamConfig([]proxycfg.Listener{{Name: "gw/tcp", Protocol: proxycfg.ListenerTCP, Port: port, Address: "127.0.0.1"}},
		[]proxycfg.Route{l4Route(proxycfg.KindTCP, "db", []string{"gw/tcp"}, toCluster("a"))}, tcpCluster("a", backend))); err != nil {
		t.Fatal(err)
	}
	serveStreams(t, p)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))

	// The client side keeps only its conns; one buffer serves them all.
	msg, got := make([]byte, 64<<10), make([]byte, 64<<10)
	open := func() net.Conn {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, got[:2]); err != nil || string(got[:2]) != "a\n" {
			t.Fatalf("the backend's name: %q, %v", got[:2], err)
		}
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("the echo of 64 KiB: %v", err)
		}
		return c
	}
	quietMemory(t, "stream", "the proxy's, the backend's and the client's", streams, most, "is the relay copying through buffers?", open)
}

// A quiet stream whose TLS the proxy terminates holds no copy buffer
// either: the direction from the client waits for its socket, and for
// what crypto/tls holds, without one, and so does the direction from the
// plain backend (package pipe, buffer.go). What stays is the TLS
// connections' own state, the client's and the proxy's, which the test
// counts too; holding their buffers, the two directions would add 64 KiB
// to each stream.
func TestQuietTerminatedStreamsHoldNoBuffer(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 150 TLS streams through the proxy")
	}
	const streams, most = 150, 48 << 10
	ca := testpki.NewCA(t, "listener CA")
	port := freePort(t)
	p := quietProxy()
	if err := p.Load(streamConfig([]proxycfg.Listener{terminatingListener(t, ca, "gw/tls", "db.example.com", port)},
		[]proxycfg.Route{l4Route(proxycfg.KindTLS, "db", []string{"gw/tls"}, toCluster("a"))}, tcpCluster("a", namedEcho(t, "a")))); err != nil {
		t.Fatal(err)
	}
	serveStreams(t, p)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	msg := strings.Repeat("x", 20_000) // more than one TLS record
	open := func() net.Conn {
		c, r, name := tlsTo(t, addr, "db.example.com", ca)
		if name != "a" {
			t.Fatalf("backend %q; want a", name)
		}
		pingPong(t, c, r, msg)
		return c
	}
	quietMemory(t, "terminated stream", "the proxy's, the client's and the backend's", streams, most, "does a direction hold its buffer?", open)
}

// A quiet WebSocket holds no buffer in the proxy either: the tunnel after
// the 101 is the same relay (websocket.go), and both HTTP connections let
// go of their buffers once the bytes they hold are copied (Hijack on the
// client's side, Conn.Tunnel on the backend's). The backend here answers
// the handshake and then echoes in the kernel, so the heap counted is
// the proxy's, with the client's sockets: about 5 KiB per WebSocket,
// where the HTTP buffers kept made it about 26 and the tunnel's own two
// 32 KiB buffers before them about 90.
func TestQuietWebSocketsHoldNoBuffer(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 200 WebSockets through the proxy")
	}
	const sockets, most = 200, 12 << 10
	be := testnet.RawServer(t, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
			wsAccept(req.Header.Get("Sec-WebSocket-Key")))
		io.Copy(c, c)
	})
	e := ptEnv(t, config([]proxycfg.Route{route("r", to("ws"))}, cluster("ws", be)))
	open := wsOpener(t, e.bound.Origin, 40_000)
	quietMemory(t, "WebSocket", "the proxy's, the client's, and the backend's goroutine", sockets, most, "does the tunnel, or an HTTP connection, keep a buffer?", open)
}

// A quiet wss WebSocket holds no copy buffer either: the backend's side
// is TLS, so the tunnel copies through buffers, and each direction gives
// its buffer back while it waits (package pipe, buffer.go). The backend
// here echoes through a 1 KiB buffer of its own, and the messages are
// small, so the TLS connections' own state stays small; holding theirs,
// the two directions would add 64 KiB to each WebSocket.
func TestQuietWSSHoldsNoBuffer(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 150 wss WebSockets through the proxy")
	}
	const sockets, most = 150, 40 << 10
	ca := ptCA(t, "ws CA")
	leaf := ptLeaf(t, ca, "ws", []string{"ws.internal"}, nil, x509.ExtKeyUsageServerAuth)
	conf := &tls.Config{Certificates: []tls.Certificate{leaf.tlsCert()}}
	be := testnet.RawServer(t, func(raw net.Conn) {
		c := tls.Server(raw, conf)
		req, err := http.ReadRequest(bufio.NewReaderSize(c, 1024))
		if err != nil {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
			wsAccept(req.Header.Get("Sec-WebSocket-Key")))
		var buf [1024]byte
		for {
			n, err := c.Read(buf[:])
			if n > 0 {
				c.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	})
	e := ptEnv(t, config([]proxycfg.Route{route("r", to("ws"))},
		ptTLSCluster("ws", be, proxycfg.TLSSettings{SNI: "ws.internal", CAPEM: ca.certPEM()})))
	open := wsOpener(t, e.bound.Origin, 1000)
	quietMemory(t, "wss WebSocket", "the proxy's, the client's, and the backend's TLS state", sockets, most, "does a direction hold its buffer?", open)
}

// wsOpener returns an open for quietMemory: a WebSocket through the
// proxy at origin, which has carried a message of size bytes each way.
func wsOpener(t *testing.T, origin string, size int) func() net.Conn {
	msg := string(make([]byte, size))
	return func() net.Conn {
		c, res := wsHandshake(t, origin, "chat.example.com")
		if res.StatusCode != 101 {
			t.Fatalf("handshake: status %d", res.StatusCode)
		}
		if err := c.roundTrip(msg); err != nil {
			t.Fatal(err)
		}
		return c.nc
	}
}

// quietMemory measures the heap and stacks per quiet connection of n
// made by open (memPerConn), logs them, and fails the test, asking why,
// when the heap per connection is over most. whose says whose memory
// the figures hold.
func quietMemory(t *testing.T, what, whose string, n int, most int64, why string, open func() net.Conn) {
	t.Helper()
	heap, stack := memPerConn(n, open)
	t.Logf("%d bytes of heap and %d of goroutine stacks per quiet %s (%s)", heap, stack, what, whose)
	if heap > most {
		t.Errorf("%d bytes of heap per quiet %s; want at most %d: %s", heap, what, most, why)
	}
}

// memPerConn opens one connection with open (the one-time state of the
// proxy and the test comes with it), then n more, and returns the growth
// of the live heap, and of the goroutine stacks, per connection while
// they are all open.
func memPerConn(n int, open func() net.Conn) (heap, stack int64) {
	open()
	// Twice: buffers in a sync.Pool outlive one collection, and one
	// taken from there would not show as growth.
	runtime.GC()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	conns := make([]net.Conn, 0, n)
	for range n {
		conns = append(conns, open())
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(conns)
	return (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / int64(n),
		(int64(after.StackInuse) - int64(before.StackInuse)) / int64(n)
}
