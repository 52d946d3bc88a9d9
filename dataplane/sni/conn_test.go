// This file implements the tests over real loopback sockets: ReadConn
// learning the name, the bytes replayed to a real TLS server, and the
// deadline that bounds slow clients.

package sni

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testpki"
)

// serverCert is a server certificate for names, issued by a CA made for
// the test, and a pool that trusts it.
func serverCert(t *testing.T, names ...string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	ca := testpki.NewCA(t, "sni test CA")
	certPEM, keyPEM := ca.IssueServer(t, names...)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return cert, pool
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// TestReplayEndToEnd: a TLS client dials a passthrough made of ReadConn
// and a relay; the relay replays the bytes ReadConn read to a real TLS
// server on another loopback socket, then relays the rest both ways. The
// handshake completes and data flows, so the replay is byte-exact.
func TestReplayEndToEnd(t *testing.T) {
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(version), func(t *testing.T) { replayEndToEnd(t, version) })
	}
}

func replayEndToEnd(t *testing.T, version uint16) {
	cert, pool := serverCert(t, "backend.example")

	// The backend: a TLS echo server.
	backend := listen(t)
	go func() {
		for {
			c, err := backend.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}})
				io.Copy(tc, tc)
			}()
		}
	}()

	// The passthrough.
	front := listen(t)
	type seen struct {
		h   Hello
		err error
	}
	seenc := make(chan seen, 1)
	go func() {
		c, err := front.Accept()
		if err != nil {
			seenc <- seen{err: err}
			return
		}
		defer c.Close()
		h, replay, err := ReadConn(c, make([]byte, 0, 2048), Limits{Timeout: 5 * time.Second})
		seenc <- seen{h, err}
		if err != nil {
			return
		}
		b, err := net.Dial("tcp", backend.Addr().String())
		if err != nil {
			return
		}
		defer b.Close()
		if _, err := b.Write(replay); err != nil {
			return
		}
		go io.Copy(b, c)
		io.Copy(c, b)
	}()

	conn, err := tls.Dial("tcp", front.Addr().String(), &tls.Config{
		ServerName: "backend.example", RootCAs: pool, NextProtos: []string{"h2", "http/1.1"},
		MinVersion: version, MaxVersion: version,
	})
	if err != nil {
		t.Fatalf("handshake through the passthrough: %v", err)
	}
	defer conn.Close()
	s := <-seenc
	if s.err != nil || s.h.ServerName != "backend.example" || len(s.h.ALPN) != 2 {
		t.Fatalf("ReadConn: %+v, %v", s.h, s.err)
	}
	if st := conn.ConnectionState(); st.Version != version || st.NegotiatedProtocol != "h2" {
		t.Errorf("negotiated %s, %q", tls.VersionName(st.Version), st.NegotiatedProtocol)
	}
	msg := []byte("through the passthrough")
	if _, err := conn.Write(msg); err != nil {
		t.Fatal(err)
	}
	back := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, back); err != nil || !bytes.Equal(back, msg) {
		t.Fatalf("echo: %q, %v", back, err)
	}
}

// TestSlowClient: a client that trickles a valid hello, one byte well
// within any per-read timeout each time, still hits ReadConn's deadline,
// which bounds the whole read. Afterwards the deadline is cleared.
func TestSlowClient(t *testing.T) {
	for _, interval := range []time.Duration{time.Second, 20 * time.Millisecond} {
		t.Run(interval.String(), func(t *testing.T) {
			ln := listen(t)
			hello := captureGo(t, &tls.Config{ServerName: "slow.example"})
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					return
				}
				defer c.Close()
				for _, b := range hello {
					if _, err := c.Write([]byte{b}); err != nil {
						return
					}
					select {
					case <-stop:
						return
					case <-time.After(interval):
					}
				}
			}()
			c, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			const timeout = 300 * time.Millisecond
			start := time.Now()
			_, got, err := ReadConn(c, nil, Limits{Timeout: timeout})
			took := time.Since(start)
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("err = %v after %v, want the deadline", err, took)
			}
			if took < timeout || took > timeout+2*time.Second {
				t.Errorf("gave up after %v, the timeout is %v", took, timeout)
			}
			if !bytes.HasPrefix(hello, got) || len(got) == 0 {
				t.Errorf("returned %x, not a prefix of what was sent", got)
			}
			// The deadline is cleared: the next read waits for the next byte.
			one := make([]byte, 1)
			c2 := make(chan error, 1)
			go func() { _, err := c.Read(one); c2 <- err }()
			select {
			case err := <-c2:
				if err != nil {
					t.Errorf("read after ReadConn: %v", err)
				}
			case <-time.After(interval + 2*time.Second):
				t.Error("no byte after ReadConn")
			}
		})
	}
}

// TestReadConnClearsDeadline: after a successful ReadConn the connection
// has no read deadline left: a byte sent after the timeout has passed is
// read.
func TestReadConnClearsDeadline(t *testing.T) {
	ln := listen(t)
	hello := captureGo(t, &tls.Config{ServerName: "clear.example"})
	sendMore := make(chan struct{})
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return
		}
		defer c.Close()
		c.Write(hello)
		<-sendMore
		c.Write([]byte("x"))
		time.Sleep(time.Second)
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const timeout = 500 * time.Millisecond
	start := time.Now()
	h, _, err := ReadConn(c, make([]byte, 0, 4096), Limits{Timeout: timeout})
	if err != nil || h.ServerName != "clear.example" {
		t.Fatalf("ReadConn: %+v, %v", h, err)
	}
	time.Sleep(time.Until(start.Add(timeout + 100*time.Millisecond)))
	close(sendMore)
	one := make([]byte, 1)
	if _, err := c.Read(one); err != nil || one[0] != 'x' {
		t.Fatalf("read after ReadConn: %q, %v (was the deadline left?)", one, err)
	}
}

// TestNotTLSOverSocket: an HTTP client on a real socket is told apart
// without waiting for the timeout, however much it sends.
func TestNotTLSOverSocket(t *testing.T) {
	for _, first := range []string{"G", "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"} {
		ln := listen(t)
		go func() {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				return
			}
			defer c.Close()
			c.Write([]byte(first))
			time.Sleep(3 * time.Second) // and keep the connection open
		}()
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, got, err := ReadConn(c, nil, Limits{Timeout: 2 * time.Second})
		took := time.Since(start)
		c.Close()
		// Had Read waited for more, the deadline would have ended it.
		if !errors.Is(err, ErrNotTLS) || !bytes.HasPrefix([]byte(first), got) {
			t.Errorf("%q: err = %v after %v", first, err, took)
		}
	}
}

// TestReadConnDeadlineErrors: ReadConn reports a connection that takes
// no deadline, rather than reading without one.
func TestReadConnDeadlineErrors(t *testing.T) {
	hello := wire(fields(sniExt(hostName("dl.example"))).body())
	errDeadline := errors.New("no deadlines here")
	c := &deadlineConn{memConn: memConn{r: bytes.NewReader(hello)}, fail: 1, err: errDeadline}
	if _, _, err := ReadConn(c, nil, Limits{}); !errors.Is(err, errDeadline) || c.r.Len() != len(hello) {
		t.Errorf("setting the deadline failed: err = %v, %d bytes read", err, len(hello)-c.r.Len())
	}
	// Clearing it fails after a good hello: the hello is no good without it.
	c = &deadlineConn{memConn: memConn{r: bytes.NewReader(hello)}, fail: 2, err: errDeadline}
	if _, got, err := ReadConn(c, nil, Limits{}); !errors.Is(err, errDeadline) || !bytes.Equal(got, hello) {
		t.Errorf("clearing the deadline failed: err = %v", err)
	}
}

// deadlineConn fails its fail-th SetReadDeadline with err.
type deadlineConn struct {
	memConn
	calls, fail int
	err         error
}

func (c *deadlineConn) SetReadDeadline(time.Time) error {
	if c.calls++; c.calls == c.fail {
		return c.err
	}
	return nil
}
