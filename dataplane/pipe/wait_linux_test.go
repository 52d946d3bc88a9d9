// This file implements the tests of a TLS pipe on the buffer path: what
// crypto/tls holds is relayed, and a waiting TLS pipe holds no buffer.

//go:build linux

package pipe

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testpki"
)

// tlsRig is a pipe between two TLS connections, as where the proxy
// terminates a client's TLS and re-encrypts to the backend: the test's
// client end and backend end speak TLS to the pipe's.
type tlsRig struct {
	client, backend *tls.Conn // the test's ends
	done            chan Result
}

// tlsConfigs returns a server config and a client config that trusts it.
func tlsConfigs(t testing.TB) (server, client *tls.Config) {
	t.Helper()
	ca := testpki.NewCA(t, "pipe test CA")
	certPEM, keyPEM := ca.IssueServer(t, "127.0.0.1")
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	return &tls.Config{Certificates: []tls.Certificate{cert}}, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
}

// startTLS starts a pipe between TLS connections whose handshakes are
// done. The test's ends speak TLS over the conns ends returns, given
// the test's ends of the two TCP connections (nil: over those).
func startTLS(t testing.TB, srv, cli *tls.Config, opts Options, ends func(cp, bp net.Conn) (net.Conn, net.Conn)) *tlsRig {
	t.Helper()
	cp, cc := tcpPair(t)
	bc, bp := tcpPair(t)
	var ce, be net.Conn = cp, bp
	if ends != nil {
		ce, be = ends(cp, bp)
	}
	r := &tlsRig{client: tls.Client(ce, cli), backend: tls.Server(be, srv), done: make(chan Result, 1)}
	pc, pb := tls.Server(cc, srv), tls.Client(bc, cli)
	errs := make(chan error, 4)
	for _, c := range []*tls.Conn{r.client, r.backend, pc, pb} {
		go func() { errs <- c.HandshakeContext(t.Context()) }()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("handshake: %v", err)
		}
	}
	go func() { r.done <- Run(context.Background(), pc, pb, opts) }()
	t.Cleanup(func() {
		cp.Close()
		bp.Close()
		select {
		case <-r.done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return within 5s of its peers' close")
		}
	})
	return r
}

// batch is a conn whose writes, once on is set, are kept and sent in
// one write by flush: TLS records that reach the other end in one
// segment.
type batch struct {
	net.Conn
	on   bool
	held []byte
}

func (b *batch) Write(p []byte) (int, error) {
	if !b.on {
		return b.Conn.Write(p)
	}
	b.held = append(b.held, p...)
	return len(p), nil
}

func (b *batch) flush() error {
	_, err := b.Conn.Write(b.held)
	b.held = b.held[:0]
	return err
}

// Records that come in together are read by crypto/tls from the socket
// at once: the socket then shows none of them, and a direction that
// waited on it would hold them back until more bytes came. Each is
// relayed at once, both ways.
func TestTLSRecordsThatCameTogether(t *testing.T) {
	srv, cli := tlsConfigs(t)
	for _, dir := range []string{"client to backend", "backend to client"} {
		t.Run(dir, func(t *testing.T) {
			var cb, bb *batch
			r := startTLS(t, srv, cli, Options{Idle: 10 * time.Second}, func(cp, bp net.Conn) (net.Conn, net.Conn) {
				cb, bb = &batch{Conn: cp}, &batch{Conn: bp}
				return cb, bb
			})
			from, to, out := r.client, r.backend, cb
			if dir == "backend to client" {
				from, to, out = r.backend, r.client, bb
			}
			out.on = true
			msgs := []string{"first record;", "second record;", "third record."}
			for _, m := range msgs {
				if _, err := from.Write([]byte(m)); err != nil {
					t.Fatal(err)
				}
			}
			if err := out.flush(); err != nil {
				t.Fatal(err)
			}
			to.SetReadDeadline(time.Now().Add(2 * time.Second))
			want := []byte(msgs[0] + msgs[1] + msgs[2])
			got := make([]byte, len(want))
			if _, err := io.ReadFull(to, got); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("the other end read %q, %v; want %q at once", got, err, want)
			}
		})
	}
}

// A TLS pipe that has moved bytes both ways and now waits holds no copy
// buffer: each direction waits for its socket, and for what crypto/tls
// holds, without one. Held throughout, the two 32 KiB buffers would add
// 64 KiB to each pipe.
func TestWaitingTLSPipeHoldsNoBuffer(t *testing.T) {
	const pipes, most = 100, 40 << 10
	srv, cli := tlsConfigs(t)
	// Twice: buffers in a sync.Pool outlive one collection, and one
	// taken from there would not show as growth.
	runtime.GC()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rigs := make([]*tlsRig, 0, pipes)
	msg := bytes.Repeat([]byte("x"), 1000)
	got := make([]byte, len(msg))
	for range pipes {
		r := startTLS(t, srv, cli, Options{Idle: time.Minute}, nil)
		for _, p := range [][2]*tls.Conn{{r.client, r.backend}, {r.backend, r.client}} {
			p[1].SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := p[0].Write(msg); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(p[1], got); err != nil {
				t.Fatal(err)
			}
		}
		rigs = append(rigs, r)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(rigs)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / pipes
	t.Logf("%d bytes of heap per waiting TLS pipe, with its four TLS conns", per)
	if per > most {
		t.Errorf("%d bytes of heap per waiting TLS pipe; want at most %d: does a direction hold its buffer?", per, most)
	}
}

// Bytes through TLS on both sides, both ways at once, arrive whole and in
// order: in the small records a Go TLS server begins with and the full
// ones after, and each side's close_notify ends its direction.
func TestTLSBothWays(t *testing.T) {
	srv, cli := tlsConfigs(t)
	r := startTLS(t, srv, cli, Options{Idle: 10 * time.Second}, nil)
	bothWays(t, r.client, r.backend, 8<<20, r.done)
}
