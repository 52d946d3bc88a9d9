// This file tests the vectored write to client connections.

package http1

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a.(*net.TCPConn), b.(*net.TCPConn)
}

// Both slices arrive whole and in order however the writes are cut (8 MiB
// take several: the socket buffers hold less), and
// a reader that stops reading makes the write fail at the connection's
// deadline, on every path: raw (the connection's writes go through
// rawIO), and net.Buffers.
func TestVecWriter(t *testing.T) {
	for _, raw := range []bool{true, false} {
		name := "buffers"
		if raw {
			name = "raw"
		}
		t.Run(name, func(t *testing.T) {
			w, r := tcpPair(t)
			var inner io.Writer = w
			if raw {
				inner = newRawIO(w)
			}
			var v vecWriter
			head, body := pattern(3000), pattern(8 << 20)[7:]
			got := make(chan []byte)
			go func() {
				b, _ := io.ReadAll(io.LimitReader(r, int64(len(head)+len(body))))
				got <- b
			}()
			na, nb, err := v.write(inner, head, body)
			if err != nil || na != len(head) || nb != len(body) {
				t.Fatalf("wrote %d and %d bytes: %v", na, nb, err)
			}
			if b := <-got; !bytes.Equal(b, append(append([]byte{}, head...), body...)) {
				t.Fatalf("%d bytes arrived, not the %d written in order", len(b), len(head)+len(body))
			}
			// A new connection nobody reads.
			w, _ = tcpPair(t)
			inner = w
			if raw {
				inner = newRawIO(w)
			}
			v = vecWriter{}
			w.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
			_, nb, err = v.write(inner, head, body)
			if !errors.Is(err, os.ErrDeadlineExceeded) || nb == len(body) {
				t.Errorf("write to a reader that does not read: %d bytes of the body, %v; want a timeout", nb, err)
			}
			if _, ok := inner.(vectored); !ok && raw && rawWritev {
				t.Error("no raw writev on a connection whose writes are raw")
			}
		})
	}
}
