package http1

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// A client that sends a head slowly (slowloris) or sits idle is cut off
// by the janitor, without a timer per request.
func TestServerJanitor(t *testing.T) {
	s := &Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		HeadTimeout: 500 * time.Millisecond, IdleTimeout: 1500 * time.Millisecond,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer s.Close()
	closedWithin := func(c net.Conn, d time.Duration) bool {
		c.SetReadDeadline(time.Now().Add(d))
		_, err := io.ReadAll(c)
		return err == nil // EOF from the server's close, not our deadline
	}
	slow, _ := net.Dial("tcp", ln.Addr().String())
	defer slow.Close()
	io.WriteString(slow, "GET / HTTP/1.1\r\nHo")
	if !closedWithin(slow, 4*time.Second) {
		t.Error("a half-sent head was not cut off")
	}
	idle, _ := net.Dial("tcp", ln.Addr().String())
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
