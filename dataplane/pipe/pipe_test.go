// This file implements the tests of the pipe's rules, each over real
// loopback TCP sockets.

package pipe

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"testing"
	"time"
)

// tcpPair returns the two ends of a fresh loopback TCP connection.
func tcpPair(t testing.TB) (a, b *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return d.(*net.TCPConn), c.(*net.TCPConn)
}

// rig is a pipe under test: the test plays client and backend through
// the peers, and Run relays between the other ends.
type rig struct {
	client, backend *net.TCPConn // the test's ends
	done            chan Result
	cancel          context.CancelFunc
}

func start(t testing.TB, opts Options) *rig {
	t.Helper()
	return startConns(t, opts, func(c, b net.Conn) (net.Conn, net.Conn) { return c, b })
}

// starter starts a rig on one of the pipe's two paths.
type starter func(testing.TB, Options) *rig

// onEachPath runs test on each path a pipe may move bytes by: through
// the kernel (two TCP sockets as the net package makes them) and through
// a buffer (the same sockets wrapped, as a conn of unknown kind would
// be), each with CloseWrite; and through buffers with one side a plain
// socket, which its direction waits on without a buffer (buffer.go), as
// a TLS conn's other side would be.
func onEachPath(t *testing.T, test func(t *testing.T, start starter)) {
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			test(t, func(t testing.TB, opts Options) *rig { return startConns(t, opts, path.wrap) })
		})
	}
}

// paths are the pipe's paths, and how a test makes it take each.
var paths = []struct {
	name string
	wrap func(c, b net.Conn) (net.Conn, net.Conn)
}{
	{"kernel", func(c, b net.Conn) (net.Conn, net.Conn) { return c, b }},
	{"buffer", bufferOnly},
	{"buffer-client-socket", func(c, b net.Conn) (net.Conn, net.Conn) { return c, wrapped{b.(*net.TCPConn)} }},
	{"buffer-backend-socket", func(c, b net.Conn) (net.Conn, net.Conn) { return wrapped{c.(*net.TCPConn)}, b }},
}

// wrapped hides a TCP conn's type, and keeps its CloseWrite.
type wrapped struct{ *net.TCPConn }

// bufferOnly keeps the conns from the kernel path, and from waiting
// without a buffer, and keeps their CloseWrite.
func bufferOnly(c, b net.Conn) (net.Conn, net.Conn) {
	return wrapped{c.(*net.TCPConn)}, wrapped{b.(*net.TCPConn)}
}

// startConns starts a rig whose pipe sees the conns wrap returns.
func startConns(t testing.TB, opts Options, wrap func(c, b net.Conn) (net.Conn, net.Conn)) *rig {
	t.Helper()
	cp, cc := tcpPair(t)
	bc, bp := tcpPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := &rig{client: cp, backend: bp, done: make(chan Result, 1), cancel: cancel}
	c, b := wrap(cc, bc)
	go func() { r.done <- Run(ctx, c, b, opts) }()
	t.Cleanup(func() {
		cancel()
		cp.Close()
		bp.Close()
		r.wait(t, 5*time.Second)
	})
	return r
}

// wait returns the pipe's result, failing the test if Run takes more than
// max. It may be called more than once.
func (r *rig) wait(t testing.TB, max time.Duration) Result {
	t.Helper()
	select {
	case res := <-r.done:
		r.done <- res
		return res
	case <-time.After(max):
		t.Fatalf("Run did not return within %v", max)
		return Result{}
	}
}

// stream writes n bytes in 1 MiB blocks, each different, to w and returns
// their hash.
func stream(w io.Writer, n int) ([32]byte, error) {
	block := make([]byte, 1<<20)
	rand.NewChaCha8([32]byte{}).Read(block)
	h := sha256.New()
	for i := 0; n > 0; i++ {
		binary.BigEndian.PutUint64(block, uint64(i))
		b := block[:min(n, len(block))]
		h.Write(b)
		if _, err := w.Write(b); err != nil {
			return [32]byte{}, err
		}
		n -= len(b)
	}
	return [32]byte(h.Sum(nil)), nil
}

// drain reads r to its end and returns the hash and count of what it read.
func drain(r io.Reader) ([32]byte, int64, error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	return [32]byte(h.Sum(nil)), n, err
}

type sent struct {
	sum [32]byte
	err error
}

// halfCloser is a test's end of a connection, which it writes to and
// then shuts: *net.TCPConn and *tls.Conn.
type halfCloser interface {
	io.ReadWriter
	CloseWrite() error
}

// send streams n bytes to c and shuts its write side.
func send(c halfCloser, n int) chan sent {
	ch := make(chan sent, 1)
	go func() {
		sum, err := stream(c, n)
		if err == nil {
			err = c.CloseWrite()
		}
		ch <- sent{sum, err}
	}()
	return ch
}

func TestBothWays64MiB(t *testing.T) {
	onEachPath(t, func(t *testing.T, start starter) {
		r := start(t, Options{Idle: 5 * time.Second})
		bothWays(t, r.client, r.backend, 64<<20, r.done)
	})
}

// bothWays streams n bytes each way at once between the test's client
// and backend ends, each shutting its writes after, and checks that each
// end receives the other's bytes whole and in order, and that the pipe
// (whose result done delivers) then ends with the counts and no error.
func bothWays(t *testing.T, client, backend halfCloser, n int, done chan Result) {
	t.Helper()
	up, down := send(client, n), send(backend, n)
	type got struct {
		sum [32]byte
		n   int64
		err error
	}
	atBackend, atClient := make(chan got, 1), make(chan got, 1)
	go func() { s, n, err := drain(backend); atBackend <- got{s, n, err} }()
	go func() { s, n, err := drain(client); atClient <- got{s, n, err} }()
	for _, c := range []struct {
		name string
		sent chan sent
		got  chan got
	}{{"client to backend", up, atBackend}, {"backend to client", down, atClient}} {
		s, g := <-c.sent, <-c.got
		if s.err != nil || g.err != nil {
			t.Fatalf("%s: send %v, receive %v", c.name, s.err, g.err)
		}
		if g.n != int64(n) || g.sum != s.sum {
			t.Errorf("%s: received %d bytes, sha256 equal %v; want %d bytes, equal", c.name, g.n, g.sum == s.sum, n)
		}
	}
	var res Result
	select {
	case res = <-done:
		done <- res
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after both ends shut their writes")
	}
	if res.ClientToBackend != int64(n) || res.BackendToClient != int64(n) {
		t.Errorf("Result counts %d up, %d down; want %d each", res.ClientToBackend, res.BackendToClient, n)
	}
	if res.End != ClientClosed && res.End != BackendClosed || res.Err != nil {
		t.Errorf("End %q, Err %v; want a side closed, no error", res.End, res.Err)
	}
}

func TestHalfClose(t *testing.T) {
	onEachPath(t, func(t *testing.T, start starter) {
		r := start(t, Options{Idle: 5 * time.Second, HalfClose: 5 * time.Second})
		req := []byte("GET / HTTP/1.0\r\n\r\n")
		reply := bytes.Repeat([]byte("reply "), 200_000) // past the socket buffers
		go func() {
			got, err := io.ReadAll(r.backend)
			if err != nil || !bytes.Equal(got, req) {
				t.Errorf("backend read %q, %v; want the request, EOF", got, err)
			}
			r.backend.Write(reply)
			r.backend.Close()
		}()
		if _, err := r.client.Write(req); err != nil {
			t.Fatal(err)
		}
		if err := r.client.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r.client)
		if err != nil || !bytes.Equal(got, reply) {
			t.Fatalf("client read %d bytes, %v; want %d, EOF", len(got), err, len(reply))
		}
		res := r.wait(t, 2*time.Second)
		if res.End != ClientClosed || res.Err != nil {
			t.Errorf("End %q, Err %v; want %q", res.End, res.Err, ClientClosed)
		}
		if res.ClientToBackend != int64(len(req)) || res.BackendToClient != int64(len(reply)) {
			t.Errorf("counts %d, %d; want %d, %d", res.ClientToBackend, res.BackendToClient, len(req), len(reply))
		}
	})
}

// hideCloseWrite hides the conns' CloseWrite from the pipe.
func hideCloseWrite(c, b net.Conn) (net.Conn, net.Conn) {
	type plain struct{ net.Conn }
	return plain{c}, plain{b}
}

func TestNoCloseWriteEndsAtFirstEOF(t *testing.T) {
	r := startConns(t, Options{Idle: 5 * time.Second}, hideCloseWrite)
	r.client.Write([]byte("bye"))
	r.client.CloseWrite()
	got, err := io.ReadAll(r.backend)
	if err != nil || string(got) != "bye" {
		t.Errorf("backend read %q, %v; want bye, EOF", got, err)
	}
	res := r.wait(t, 2*time.Second)
	if res.End != ClientClosed {
		t.Errorf("End %q; want %q", res.End, ClientClosed)
	}
	if _, err := r.client.Read(make([]byte, 1)); err == nil {
		t.Error("client side still open")
	}
}

func TestIdle(t *testing.T) {
	onEachPath(t, func(t *testing.T, start starter) {
		const idle = 200 * time.Millisecond
		r := start(t, Options{Idle: idle})
		res := r.wait(t, 3*time.Second)
		if res.End != Idle {
			t.Errorf("End %q; want %q", res.End, Idle)
		}
		if res.Duration < idle || res.Duration > idle+time.Second {
			t.Errorf("ended after %v; want about %v", res.Duration, idle)
		}
	})
}

func TestIdleSparedByTrickle(t *testing.T) {
	onEachPath(t, func(t *testing.T, start starter) {
		const idle = 200 * time.Millisecond
		r := start(t, Options{Idle: idle})
		for i := 0; i < 16; i++ { // 4 Idle periods
			if _, err := r.client.Write([]byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(r.backend, make([]byte, 1)); err != nil {
				t.Fatalf("byte %d: %v", i, err)
			}
			time.Sleep(idle / 4)
		}
		select {
		case res := <-r.done:
			t.Fatalf("pipe ended during the trickle: %q", res.End)
		default:
		}
		r.client.Close()
		io.ReadAll(r.backend)
		r.backend.Close()
		if res := r.wait(t, 2*time.Second); res.End != ClientClosed {
			t.Errorf("End %q; want %q", res.End, ClientClosed)
		}
	})
}

// A peer that never reads must not hold the pipe past Idle.
func TestStalledReader(t *testing.T) {
	onEachPath(t, func(t *testing.T, start starter) {
		const idle = 300 * time.Millisecond
		for _, tc := range []struct {
			name           string
			writer, sleepy func(*rig) *net.TCPConn
		}{
			{"backend never reads", func(r *rig) *net.TCPConn { return r.client }, func(r *rig) *net.TCPConn { return r.backend }},
			{"client never reads", func(r *rig) *net.TCPConn { return r.backend }, func(r *rig) *net.TCPConn { return r.client }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := start(t, Options{Idle: idle})
				w := tc.writer(r)
				go w.Write(make([]byte, 16<<20)) // ends in an error once the pipe closes
				res := r.wait(t, 3*time.Second)
				if res.End != Idle {
					t.Errorf("End %q; want %q", res.End, Idle)
				}
				if res.ClientToBackend+res.BackendToClient == 0 {
					t.Error("no bytes moved before the stall")
				}
			})
		}
	})
}

// A write that makes no progress ends the pipe even while the other
// direction keeps it busy.
func TestStalledWriteWhileOtherWayFlows(t *testing.T) {
	onEachPath(t, func(t *testing.T, start starter) {
		const idle = 300 * time.Millisecond
		r := start(t, Options{Idle: idle})
		go r.client.Write(make([]byte, 16<<20)) // the backend never reads it
		go io.Copy(io.Discard, r.client)
		tick := time.NewTicker(idle / 4)
		defer tick.Stop()
		limit := time.After(3 * time.Second)
		for {
			select {
			case <-tick.C:
				r.backend.Write([]byte{1})
				continue
			case res := <-r.done:
				r.done <- res
				if res.End != Idle {
					t.Errorf("End %q; want %q", res.End, Idle)
				}
				if res.BackendToClient == 0 {
					t.Error("the trickle did not flow")
				}
			case <-limit:
				t.Fatal("a stalled write held the pipe")
			}
			return
		}
	})
}

func TestHalfCloseTimeout(t *testing.T) {
	onEachPath(t, func(t *testing.T, start starter) {
		const half = 200 * time.Millisecond
		r := start(t, Options{Idle: 5 * time.Second, HalfClose: half})
		r.client.Write([]byte("request"))
		r.client.CloseWrite()
		if got, err := io.ReadAll(r.backend); err != nil || string(got) != "request" {
			t.Fatalf("backend read %q, %v", got, err)
		}
		// The backend neither answers nor closes.
		res := r.wait(t, 3*time.Second)
		if res.End != HalfCloseTimeout {
			t.Errorf("End %q; want %q", res.End, HalfCloseTimeout)
		}
		if res.Duration < half || res.Duration > half+time.Second {
			t.Errorf("ended after %v; want about %v", res.Duration, half)
		}
	})
}

func TestCancel(t *testing.T) {
	onEachPath(t, func(t *testing.T, start starter) {
		r := start(t, Options{})
		r.client.Write([]byte("x"))
		io.ReadFull(r.backend, make([]byte, 1))
		begin := time.Now()
		r.cancel()
		res := r.wait(t, time.Second)
		if d := time.Since(begin); d > 500*time.Millisecond {
			t.Errorf("Run returned %v after the cancel", d)
		}
		if res.End != Stopped {
			t.Errorf("End %q; want %q", res.End, Stopped)
		}
		for name, c := range map[string]*net.TCPConn{"client": r.client, "backend": r.backend} {
			c.SetReadDeadline(time.Now().Add(time.Second))
			if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, net.ErrClosed) || timedOut(err) {
				t.Errorf("%s peer read %v; want EOF or a reset", name, err)
			}
		}
	})
}

// Preface and Reply, read before the pipe began, reach their sides
// before any byte the pipe reads itself, which is there already.
func TestPrefaceAndReplyFirst(t *testing.T) {
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			preface := []byte("\x16\x03\x01 the hello the reader consumed;")
			reply := []byte("the frame read with the 101;")
			cp, cc := tcpPair(t)
			bc, bp := tcpPair(t)
			defer cp.Close()
			defer bp.Close()
			// Each side's bytes are there before the pipe starts.
			cp.Write([]byte("then the client"))
			cp.CloseWrite()
			bp.Write([]byte("then the backend"))
			bp.CloseWrite()
			done := make(chan Result, 1)
			c, b := path.wrap(cc, bc)
			go func() {
				done <- Run(context.Background(), c, b, Options{Preface: preface, Reply: reply, Idle: 5 * time.Second})
			}()
			for _, side := range []struct {
				name string
				conn *net.TCPConn
				want string
			}{{"backend", bp, string(preface) + "then the client"}, {"client", cp, string(reply) + "then the backend"}} {
				if got, err := io.ReadAll(side.conn); err != nil || string(got) != side.want {
					t.Fatalf("%s read %q, %v; want %q", side.name, got, err, side.want)
				}
			}
			res := <-done
			if res.ClientToBackend != int64(len(preface)+15) || res.BackendToClient != int64(len(reply)+16) {
				t.Errorf("counts %d up, %d down; want %d, %d", res.ClientToBackend, res.BackendToClient, len(preface)+15, len(reply)+16)
			}
		})
	}
}

func TestReset(t *testing.T) {
	onEachPath(t, func(t *testing.T, start starter) {
		for _, tc := range []struct {
			name  string
			reset func(*rig) *net.TCPConn
			other func(*rig) *net.TCPConn
			want  Reason
		}{
			{"backend", func(r *rig) *net.TCPConn { return r.backend }, func(r *rig) *net.TCPConn { return r.client }, BackendError},
			{"client", func(r *rig) *net.TCPConn { return r.client }, func(r *rig) *net.TCPConn { return r.backend }, ClientError},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := start(t, Options{Idle: 5 * time.Second})
				c := tc.reset(r)
				c.SetLinger(0)
				c.Close()
				res := r.wait(t, 2*time.Second)
				if res.End != tc.want || res.Err == nil {
					t.Errorf("End %q, Err %v; want %q and the error", res.End, res.Err, tc.want)
				}
				o := tc.other(r)
				o.SetReadDeadline(time.Now().Add(time.Second))
				if _, err := o.Read(make([]byte, 1)); err == nil || timedOut(err) {
					t.Errorf("the other peer read %v; want its side closed", err)
				}
			})
		}
	})
}

func TestNoGoroutineLeft(t *testing.T) {
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			for i := 0; i < 50; i++ {
				cp, cc := tcpPair(t)
				bc, bp := tcpPair(t)
				ctx, cancel := context.WithCancel(context.Background())
				switch i % 3 {
				case 0: // both sides end
					cp.Write([]byte("hi"))
					cp.CloseWrite()
					bp.CloseWrite()
				case 1: // cancelled
					cancel()
				case 2: // idle
				}
				c, b := path.wrap(cc, bc)
				Run(ctx, c, b, Options{Idle: 10 * time.Millisecond})
				cancel()
				cp.Close()
				bp.Close()
			}
			deadline := time.Now().Add(2 * time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				t.Errorf("%d goroutines after 50 pipes; %d before", n, before)
			}
		})
	}
}
