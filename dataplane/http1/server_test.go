package http1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// A client that sends a head slowly (slowloris) or sits idle is cut off
// by the janitor, without a timer per request.
func TestServerJanitor(t *testing.T) {
	t.Parallel()
	s := &Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		HeadTimeout: 500 * time.Millisecond, IdleTimeout: 1500 * time.Millisecond,
	}
	addr := startServer(t, s)
	closedWithin := func(c net.Conn, d time.Duration) bool {
		c.SetReadDeadline(time.Now().Add(d))
		_, err := io.ReadAll(c)
		return err == nil // EOF from the server's close, not our deadline
	}
	slow, _ := net.Dial("tcp", addr)
	defer slow.Close()
	io.WriteString(slow, "GET / HTTP/1.1\r\nHo")
	if !closedWithin(slow, 4*time.Second) {
		t.Error("a half-sent head was not cut off")
	}
	idle, _ := net.Dial("tcp", addr)
	defer idle.Close()
	io.WriteString(idle, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("first request: %v", err)
	}
	res.Body.Close()
	if !closedWithin(idle, 5*time.Second) {
		t.Error("an idle connection was not closed")
	}
}

// A client that stops sending its body is noticed: the handler's read
// fails with a timeout after BodyTimeout without progress, and it can
// still answer 408. A slow but steady body is never cut.
func TestServerBodyTimeout(t *testing.T) {
	t.Parallel()
	s := &Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					w.WriteHeader(http.StatusRequestTimeout)
					return
				}
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			io.WriteString(w, strconv.Itoa(len(b)))
		}),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), BodyTimeout: 1500 * time.Millisecond,
	}
	addr := startServer(t, s)

	stalled, _ := net.Dial("tcp", addr)
	defer stalled.Close()
	stalled.SetDeadline(time.Now().Add(6 * time.Second))
	io.WriteString(stalled, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nab")
	res, err := http.ReadResponse(bufio.NewReader(stalled), nil)
	if err != nil || res.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("stalled body: %v %v", res, err)
	}

	steady, _ := net.Dial("tcp", addr)
	defer steady.Close()
	steady.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(steady, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\n")
	for range 4 { // 2.8 s in all, each byte within the timeout
		time.Sleep(700 * time.Millisecond)
		io.WriteString(steady, "x")
	}
	res, err = http.ReadResponse(bufio.NewReader(steady), nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("steady body: %v %v", res, err)
	}
}

// A client that stops reading is cut off after WriteTimeout without
// progress, and the handler's write fails.
func TestServerWriteTimeout(t *testing.T) {
	t.Parallel()
	werr := make(chan error, 1)
	s := &Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			chunk := make([]byte, 64<<10)
			for range 1024 { // 64 MiB: far more than socket buffers hold
				if _, err := w.Write(chunk); err != nil {
					werr <- err
					return
				}
			}
			werr <- nil
		}),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), WriteTimeout: 1500 * time.Millisecond,
	}
	addr := startServer(t, s)
	c, _ := net.Dial("tcp", addr)
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	select {
	case err := <-werr:
		if err == nil {
			t.Fatal("64 MiB written to a client that reads nothing")
		}
	case <-time.After(6 * time.Second):
		t.Fatal("the write to a client that does not read was not cut within 6 s")
	}
}

// interruptFunc is a function waited on.
type interruptFunc func()

func (f interruptFunc) Interrupt() { f() }

// A handler that waits (WaitOn) learns that its client left: the server
// watches the client once the wait has lasted a second, and interrupts
// what the handler waits on.
func TestServerWatchesAClientWhileTheHandlerWaits(t *testing.T) {
	t.Parallel()
	interrupted := make(chan struct{})
	gone := make(chan bool, 1)
	s := &Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rw := w.(*ResponseWriter)
			rw.WaitOn(interruptFunc(func() { close(interrupted) }))
			select {
			case <-interrupted:
			case <-time.After(5 * time.Second):
			}
			rw.WaitOn(nil)
			gone <- rw.ClientGone()
		}),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	addr := startServer(t, s)
	c, _ := net.Dial("tcp", addr)
	io.WriteString(c, "GET /long-poll HTTP/1.1\r\nHost: a\r\n\r\n")
	time.Sleep(200 * time.Millisecond)
	c.Close()
	select {
	case g := <-gone:
		if !g {
			t.Error("the handler was not told its client left")
		}
	case <-time.After(6 * time.Second):
		t.Fatal("the handler was never released")
	}
}

// startServer serves s on a loopback port until the test ends and
// returns the address.
func startServer(t testing.TB, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

// A graceful Shutdown lets the request in flight run to its end: its
// context stays live while the handler waits on something else (a
// backend's dial or answer), as net/http's server does. Close, or the
// end of Shutdown's own deadline, ends it.
func TestShutdownLetsRequestsInFlightFinish(t *testing.T) {
	t.Parallel()
	for _, forced := range []bool{false, true} {
		started, release := make(chan struct{}), make(chan struct{})
		ended := make(chan error, 1)
		s := &Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(started)
				select {
				case <-release:
					io.WriteString(w, "done")
					ended <- nil
				case <-r.Context().Done():
					ended <- r.Context().Err()
				}
			}),
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}
		addr := startServer(t, s)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
		<-started
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if forced {
			cancel() // Shutdown's deadline has passed: it closes what is left
		}
		shut := make(chan error, 1)
		go func() { shut <- s.Shutdown(ctx) }()
		if forced {
			select {
			case err := <-ended:
				if err == nil {
					t.Error("forced: the handler finished, want its context ended")
				}
			case <-time.After(5 * time.Second):
				t.Error("forced: the handler's context did not end when Shutdown gave up")
			}
			<-shut
			cancel()
			continue
		}
		select {
		case err := <-ended:
			t.Fatalf("graceful: the request's context ended during the drain: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
		close(release)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("graceful: the request in flight got %v, %v; want its answer", res, err)
		}
		if err := <-shut; err != nil {
			t.Errorf("graceful: Shutdown: %v", err)
		}
		cancel()
	}
}

// A handler that takes the connection over (Hijack) gets its buffers,
// holding the bytes the client sent behind the head, and the connection
// lets go of them: a tunnel that lasts for hours must not keep a second
// hold on them. The request body and the response fail from then on.
func TestHijackHandsTheBuffersOver(t *testing.T) {
	type seen struct {
		kept              bool
		bodyErr, writeErr error
		early             string
	}
	got := make(chan seen, 1)
	addr := startServer(t, &Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			nc, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("Hijack: %v", err)
				return
			}
			defer nc.Close()
			var s seen
			c := w.(*ResponseWriter).c
			s.kept = c.br != nil || c.bw != nil || c.body.br != nil
			_, s.bodyErr = r.Body.Read(make([]byte, 1))
			_, s.writeErr = w.Write([]byte("x"))
			s.early, _ = rw.ReadString('\n')
			rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\necho " + s.early)
			rw.Flush()
			got <- s
		}),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	// The head and the bytes after it in one write: they are the
	// request's body too, which only the reader Hijack returns may read.
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: echo\r\nContent-Length: 6\r\n\r\nearly\n")
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("answer: %v %v", res, err)
	}
	if line, err := br.ReadString('\n'); line != "echo early\n" {
		t.Fatalf("after the 101: %q, %v", line, err)
	}
	s := <-got
	if s.kept {
		t.Error("the connection still holds its buffers after Hijack")
	}
	if !errors.Is(s.bodyErr, http.ErrHijacked) || !errors.Is(s.writeErr, http.ErrHijacked) {
		t.Errorf("after Hijack: body read %v, response write %v; want http.ErrHijacked", s.bodyErr, s.writeErr)
	}
}
