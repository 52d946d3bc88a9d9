package dataplane

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// rawExchange writes req on a new connection to addr and returns what the
// server sends until it closes the connection or goes quiet for 300 ms.
func rawExchange(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	var out []byte
	buf := make([]byte, 64<<10)
	for {
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		n, err := c.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return string(out)
		}
	}
}

func TestOriginServerRefusesAmbiguousRequests(t *testing.T) {
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", startBackend(t, echo("a")))))
	for _, c := range []struct{ name, req, want string }{
		{"length and chunked", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "400"},
		{"two lengths", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", "400"},
		{"length list", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\nabc", "400"},
		{"gzip coding", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", "501"},
		{"obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", "400"},
		{"space before colon", "GET / HTTP/1.1\r\nHost: a\r\nX : a\r\n\r\n", "400"},
		{"no host", "GET / HTTP/1.1\r\n\r\n", "400"},
		{"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "400"},
		{"host with space", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", "400"},
		{"bad escape", "GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n", "400"},
		{"http/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "505"},
		{"unknown expect", "GET / HTTP/1.1\r\nHost: a\r\nExpect: magic\r\n\r\n", "417"},
	} {
		got := rawExchange(t, e.bound.Origin, c.req)
		if !strings.HasPrefix(got, "HTTP/1.1 "+c.want+" ") || !strings.Contains(got, "Connection: close") {
			t.Errorf("%s: got %q, want %s and a close", c.name, firstLine(got), c.want)
		}
	}
	big := "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("x", 300<<10) + "\r\n\r\n"
	if got := rawExchange(t, e.bound.Origin, big); !strings.HasPrefix(got, "HTTP/1.1 431 ") {
		t.Errorf("oversized head: %q", firstLine(got))
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\r\n")
	return l
}

func TestOriginServerPipeliningHeadAndHTTP10(t *testing.T) {
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", startBackend(t, echo("a")))))
	// Two requests in one write, the second a HEAD: two answers, in order,
	// the HEAD one with a length and no body.
	got := rawExchange(t, e.bound.Origin,
		"GET /one HTTP/1.1\r\nHost: a\r\n\r\nHEAD /two HTTP/1.1\r\nHost: a\r\n\r\nGET /three HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	if n := strings.Count(got, "HTTP/1.1 200 OK"); n != 3 {
		t.Fatalf("%d answers to 3 pipelined requests:\n%s", n, got)
	}
	one, two, three := strings.Index(got, "target=/one"), strings.Index(got, "target=/two"), strings.Index(got, "target=/three")
	if one < 0 || two >= 0 || three < one {
		t.Errorf("bodies out of order or HEAD with a body:\n%s", got)
	}
	// HTTP/1.0 without keep-alive: answered with a length, then closed.
	got = rawExchange(t, e.bound.Origin, "GET /old HTTP/1.0\r\nHost: a\r\n\r\n")
	if !strings.HasPrefix(got, "HTTP/1.1 200 ") || !strings.Contains(got, "Connection: close") || !strings.Contains(got, "target=/old") {
		t.Errorf("HTTP/1.0: %q", got)
	}
}

func TestOriginServerExpectContinueAndChunkedBody(t *testing.T) {
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", startBackend(t, echo("a")))))
	c, err := net.Dial("tcp", e.bound.Origin)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	io.WriteString(c, "POST /up HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	line, _ := br.ReadString('\n')
	if line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("before the body: %q", line)
	}
	br.ReadString('\n')
	io.WriteString(c, "hello")
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if echoed(string(body), "body") != "hello" {
		t.Errorf("body after 100 Continue: %q", body)
	}
	// A chunked upload on the same connection.
	io.WriteString(c, "POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nT: v\r\n\r\n")
	res, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	if echoed(string(body), "body") != "abcde" {
		t.Errorf("chunked upload: %q", body)
	}
}

// Shutdown lets a request in flight finish and refuses new connections.
func TestOriginServerGracefulShutdown(t *testing.T) {
	release := make(chan struct{})
	be := startBackend(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		io.WriteString(w, "finished")
	})
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	mustLoad(t, p, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", be)))
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan Bound, 1)
	done := make(chan error, 1)
	go func() {
		done <- p.Serve(ctx, ServeOptions{Origin: "127.0.0.1:0", Grace: 5 * time.Second, Ready: func(b Bound) { ready <- b }})
	}()
	b := <-ready
	got := make(chan string, 1)
	go func() {
		res, err := http.Get("http://" + b.Origin + "/")
		if err != nil {
			got <- err.Error()
			return
		}
		body, _ := io.ReadAll(res.Body)
		got <- string(body)
	}()
	waitUntil(t, func() bool { return p.Stats().Requests.Load() == 1 })
	cancel()
	waitUntil(t, func() bool {
		_, err := net.Dial("tcp", b.Origin)
		return err != nil
	})
	close(release)
	if s := <-got; s != "finished" {
		t.Errorf("in-flight request during shutdown: %q", s)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 5 s")
}

// cloudflared can reach the origin listener over a unix socket
// (`unix:` service); a stale socket file from an earlier run is replaced.
func TestOriginOverUnixSocket(t *testing.T) {
	sock := t.TempDir() + "/origin.sock"
	if ln, err := net.Listen("unix", sock); err == nil {
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		ln.Close() // leaves a stale socket file behind
	}
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	mustLoad(t, p, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", startBackend(t, echo("a")))))
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan Bound, 1)
	done := make(chan error, 1)
	go func() {
		done <- p.Serve(ctx, ServeOptions{Origin: "unix:" + sock, Ready: func(b Bound) { ready <- b }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Serve: %v", err)
	}
	defer func() { cancel(); <-done }()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	defer c.CloseIdleConnections()
	for i := range 3 { // kept alive: the same connection serves all three
		res, err := c.Get("http://app.example/x")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || echoed(string(body), "X-Forwarded-For") != "127.0.0.1" {
			t.Fatalf("request %d: %d %q", i, res.StatusCode, body)
		}
	}
}
