//go:build linux

package http1

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// rawPair returns a rawIO over one end of a connected pair of the given
// network ("tcp" on loopback, or "unix"), that end, and the other end.
func rawPair(t *testing.T, network string) (*rawIO, net.Conn, net.Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nc, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close(); peer.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second)) // a failing test fails, not hangs
	r, ok := newRawIO(nc).(*rawIO)
	if !ok {
		t.Fatalf("newRawIO(%T) is not a rawIO", nc)
	}
	return r, nc, peer
}

// holdWrite writes p as Conn.flushRequest does: held for the next Read.
func holdWrite(t *testing.T, r *rawIO, p []byte) {
	t.Helper()
	r.hold(true)
	n, err := r.Write(p)
	r.hold(false)
	if n != len(p) || err != nil {
		t.Fatalf("held Write = %d, %v", n, err)
	}
}

// A held request goes out with the next Read, not before, and the Read
// returns the answer to it.
func TestHeldRequestGoesOutWithTheRead(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			r, _, peer := rawPair(t, network)
			req := []byte("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
			holdWrite(t, r, req)
			if !r.pendingWrite() {
				t.Fatal("a held request is not pending")
			}
			peer.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			var b [1]byte
			if n, err := peer.Read(b[:]); n != 0 || !isTimeout(err) {
				t.Fatalf("the peer read %d bytes (%v) before the Read that sends them", n, err)
			}

			got := answerAfter(peer, len(req), 0)
			p := make([]byte, 64)
			n, err := r.Read(p)
			if err != nil || string(p[:n]) != "answer" {
				t.Fatalf("Read = %q, %v; want the answer", p[:n], err)
			}
			if sent := <-got; !bytes.Equal(sent, req) {
				t.Fatalf("the peer got %q, want %q", sent, req)
			}
			if r.pendingWrite() {
				t.Fatal("the request is still pending after the Read")
			}
		})
	}
}

// answerAfter has peer, after wait, read n bytes and answer "answer";
// the bytes it read come on the channel (nil if they did not).
func answerAfter(peer net.Conn, n int, wait time.Duration) <-chan []byte {
	got := make(chan []byte, 1)
	go func() {
		time.Sleep(wait)
		peer.SetReadDeadline(time.Now().Add(5 * time.Second))
		p := make([]byte, n)
		if _, err := io.ReadFull(peer, p); err != nil {
			got <- nil
			return
		}
		got <- p
		io.WriteString(peer, "answer")
	}()
	return got
}

// fillSocket writes to r's socket without blocking until its buffers
// are full, and returns what it wrote.
func fillSocket(t *testing.T, r *rawIO) []byte {
	t.Helper()
	var sent []byte
	chunk := bytes.Repeat([]byte("x"), 4096)
	err := r.rc.Write(func(fd uintptr) bool {
		for {
			n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&chunk[0])), uintptr(len(chunk)))
			if e == syscall.EAGAIN {
				return true
			}
			if e != 0 {
				t.Errorf("filling the socket: %v", e)
				return true
			}
			sent = append(sent, chunk[:n]...)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return sent
}

// A held request that does not fit in a full socket goes out the usual
// way, waiting for room, in order after what was written before, and the
// answer is read after it.
func TestHeldRequestIntoAFullSocket(t *testing.T) {
	r, _, peer := rawPair(t, "unix")
	before := fillSocket(t, r)
	req := []byte("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	holdWrite(t, r, req)

	got := answerAfter(peer, len(before)+len(req), 50*time.Millisecond) // the Read finds the socket full
	p := make([]byte, 64)
	n, err := r.Read(p)
	if err != nil || string(p[:n]) != "answer" {
		t.Fatalf("Read = %q, %v; want the answer", p[:n], err)
	}
	sent := <-got
	if !bytes.Equal(sent, append(before, req...)) {
		t.Fatalf("the peer got %d bytes ending %q, want %d ending in the request", len(sent), sent[max(0, len(sent)-len(req)):], len(before)+len(req))
	}
}

// A Read whose deadline has passed sends nothing: the request is
// dropped with the error, and nothing is left pending to go out later.
func TestHeldRequestAfterTheDeadline(t *testing.T) {
	r, nc, peer := rawPair(t, "tcp")
	holdWrite(t, r, []byte("GET / HTTP/1.1\r\nHost: h\r\n\r\n"))
	nc.SetReadDeadline(time.Unix(1, 0))
	p := make([]byte, 64)
	if _, err := r.Read(p); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read = %v, want the deadline's error", err)
	}
	if r.pendingWrite() {
		t.Fatal("the request is still pending after a failed Read")
	}
	peer.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var b [1]byte
	if n, err := peer.Read(b[:]); n != 0 || !isTimeout(err) {
		t.Fatalf("the peer read %d bytes (%v): a request went out after the deadline", n, err)
	}
}

// A held request whose write fails (the peer is gone) fails the Read
// with the write's error, which the proxy reads as a stale connection.
func TestHeldRequestToAClosedPeer(t *testing.T) {
	r, _, peer := rawPair(t, "unix")
	peer.Close()
	holdWrite(t, r, []byte("GET / HTTP/1.1\r\nHost: h\r\n\r\n"))
	p := make([]byte, 64)
	_, err := r.Read(p)
	if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) && err != io.EOF {
		t.Fatalf("Read = %v, want EPIPE, ECONNRESET or EOF", err)
	}
	if strings.Contains(err.Error(), "timeout") {
		t.Fatalf("Read = %v, a timeout", err)
	}
}
