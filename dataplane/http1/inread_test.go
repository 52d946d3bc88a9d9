package http1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// echoServer answers every request with its method, target and body, and
// takes over the connection of an upgrade request: it answers 101, then
// echoes one line.
func echoServer(t *testing.T) string {
	t.Helper()
	return startServer(t, &Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Upgrade") != "" {
				nc, rw, err := w.(http.Hijacker).Hijack()
				if err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				defer nc.Close()
				rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
				rw.Flush()
				line, _ := rw.ReadString('\n')
				rw.WriteString("echo " + line)
				rw.Flush()
				return
			}
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, "%s %s %q", r.Method, r.RequestURI, b) // origin form: no URL
		}),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
}

// dialEcho connects to a new echoServer, with a deadline on everything
// the test does with the connection.
func dialEcho(t *testing.T, d time.Duration) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(d))
	return c, bufio.NewReader(c)
}

// Requests arrive in every shape on one kept-alive connection, and each
// is answered whole and in order: whether it is served inside the read
// (inread.go) or handed over to the usual path, and however its bytes are
// cut across the client's writes.
func TestServeInReadEveryArrival(t *testing.T) {
	t.Parallel()
	c, br := dialEcho(t, 20*time.Second)
	expect := func(what string, want ...string) {
		t.Helper()
		for _, w := range want {
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("%s: %v (want %q)", what, err, w)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if string(b) != w {
				t.Fatalf("%s: answer %q, want %q", what, b, w)
			}
		}
	}
	pause := func() { time.Sleep(50 * time.Millisecond) }

	// Pipelined, more than the reader's 4 KiB in one write: the read that
	// fills the reader leaves bytes on the socket, which must be read
	// before any wait, since no new readiness will come for them.
	var pipe strings.Builder
	var want []string
	for i := range 80 {
		fmt.Fprintf(&pipe, "GET /p%d HTTP/1.1\r\nHost: a\r\nX-Pad: %s\r\n\r\n", i, strings.Repeat("x", 40))
		want = append(want, fmt.Sprintf("GET /p%d \"\"", i))
	}
	if pipe.Len() <= 4096 {
		t.Fatalf("the pipelined requests are %d bytes, want more than the reader holds", pipe.Len())
	}
	io.WriteString(c, pipe.String())
	expect("pipelined", want...)

	// A head cut in three writes.
	for _, part := range []string{"GET /sp", "lit HTTP/1.1\r\nHo", "st: a\r\n\r\n"} {
		io.WriteString(c, part)
		pause()
	}
	expect("split head", `GET /split ""`)

	// A head larger than the reader: the usual path reads it.
	fmt.Fprintf(c, "GET /big HTTP/1.1\r\nHost: a\r\nX-Big: %s\r\n\r\n", strings.Repeat("b", 6000))
	expect("large head", `GET /big ""`)

	// A body in the same write as its head, and one that comes later.
	io.WriteString(c, "POST /now HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello")
	expect("body with the head", `POST /now "hello"`)
	io.WriteString(c, "POST /later HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhe")
	pause()
	io.WriteString(c, "llo")
	expect("body after the head", `POST /later "hello"`)

	// Chunked, and a request pipelined behind it.
	io.WriteString(c, "POST /chunked HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"+
		"GET /after HTTP/1.1\r\nHost: a\r\n\r\n")
	expect("chunked then pipelined", `POST /chunked "hello"`, `GET /after ""`)

	// The connection is still good after all of it, and a truncated head
	// then the client's half-close is answered 400, as on the usual path.
	io.WriteString(c, "GET /last HTTP/1.1\r\nHost: a\r\n\r\nGET /cut HTTP/1.1\r\nHo")
	expect("last", `GET /last ""`)
	c.(*net.TCPConn).CloseWrite()
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusBadRequest {
		t.Fatalf("a head cut short by the client's close: %v, %v; want 400", res, err)
	}
}

// An upgrade request is served the usual way, so its handler can take
// over the connection and read from it, after requests served inside the
// read on the same connection.
func TestServeInReadHandsOverUpgrades(t *testing.T) {
	t.Parallel()
	c, br := dialEcho(t, 10*time.Second)
	io.WriteString(c, "GET /first HTTP/1.1\r\nHost: a\r\n\r\n")
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	res, err = http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v, %v; want 101", res, err)
	}
	io.WriteString(c, "ping\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "echo ping\n" {
		t.Fatalf("after the upgrade: %q, %v; want the handler's echo", line, err)
	}
}

// Close does not wait for a handler that waits on something else: the
// handler runs inside the read of its client's socket, which holds the
// descriptor, so a Close that waited for the descriptor would wait for
// the handler, which waits for Close to end its context.
func TestCloseDoesNotWaitForAHandler(t *testing.T) {
	t.Parallel()
	started, ended := make(chan struct{}), make(chan struct{})
	s := &Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(started)
			<-r.Context().Done()
			close(ended)
		}),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	addr := startServer(t, s)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	<-started
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	for _, ch := range []chan struct{}{closed, ended} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("Close, or the handler's context, did not end")
		}
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("the client's connection was not closed: %v", err)
	}
}

// FuzzHeadEnds holds headEnds to the parser it stands for: when it says
// the bytes hold a whole head, readRequestHead reads no further than them
// (it never needs the socket, inside the read where it could not wait),
// and whenever the parser reads a whole head from the bytes, headEnds says
// so.
func FuzzHeadEnds(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\nHost: a\n\n",
		"GET / HTTP/1.1\r\nHost: a\r\n",
		"GET / HTTP/1.1\r\n\r\n",
		"\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n\r",
		"GET / HTTP/1.1\r\nX: a\r\r\n\r\n",
		"GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
		"\n",
		"",
	} {
		f.Add([]byte(s))
	}
	errMore := errors.New("needs more")
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return // the reader's size: a longer head never goes inside
		}
		br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(data), errReader{errMore}), 4096)
		var q requestHead
		err := readRequestHead(br, &q)
		needed := errors.Is(err, errMore) || strings.Contains(fmt.Sprint(err), errMore.Error())
		ends := headEnds(data)
		if ends && needed {
			t.Fatalf("headEnds says %q holds a whole head, but the parser read past it", data)
		}
		if err == nil && !ends {
			t.Fatalf("the parser read a whole head from %q, but headEnds says there is none", data)
		}
	})
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// A client's close is seen however it comes: one that sends a request
// and closes its side at once gets the answer, then the close, as on the
// usual path; a kept-alive client whose close comes in with its last
// request, which ends no wait inside the read, is closed by the janitor's
// look at idle sockets (inread.go), not left open until IdleTimeout.
func TestServeInReadSeesCloses(t *testing.T) {
	t.Parallel()
	addr := echoServer(t) // no IdleTimeout: only the close may end it
	readToClose := func(c net.Conn, what string, want int) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("%s: the server did not close after the client did: %v (read %q)", what, err, b)
		}
		if n := bytes.Count(b, []byte("HTTP/1.1 200 OK")); n != want {
			t.Fatalf("%s: %d answers before the close, want %d: %q", what, n, want, b)
		}
	}
	oneShot, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer oneShot.Close()
	io.WriteString(oneShot, "GET /once HTTP/1.1\r\nHost: a\r\n\r\n")
	oneShot.(*net.TCPConn).CloseWrite()
	readToClose(oneShot, "one request, then the close", 1)

	kept, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	br := bufio.NewReader(kept)
	for i := range 3 {
		fmt.Fprintf(kept, "GET /kept%d HTTP/1.1\r\nHost: a\r\n\r\n", i)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		time.Sleep(20 * time.Millisecond) // the server waits for the next
	}
	io.WriteString(kept, "GET /last HTTP/1.1\r\nHost: a\r\n\r\n")
	kept.(*net.TCPConn).CloseWrite()
	kept.SetReadDeadline(time.Now().Add(5 * time.Second))
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("kept alive, then a request and the close: the server did not close: %v (read %q)", err, rest)
	}
	if !bytes.Contains(rest, []byte(`GET /last ""`)) {
		t.Fatalf("kept alive, then a request and the close: %q, want the last answer", rest)
	}
}
