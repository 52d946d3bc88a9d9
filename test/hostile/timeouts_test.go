package hostile

// Clients that stop halfway. One that announces a body and stops sending
// it, or that stops reading a large response, would otherwise hold a
// goroutine and a backend connection for as long as it keeps its
// connection open: a few hundred of them take an endpoint's connection
// cap. Every listener bounds both waits from the last progress (the
// listener's BodyTimeout and WriteTimeout, nginx's client_body_timeout and
// send_timeout): a body that stops gets 408, a client that stops reading
// is cut off and its backend connection released.

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/test/testnet"
)

// clientTimeout is the listeners' BodyTimeout and WriteTimeout in these
// tests, and timeoutSlack what a deadline may take beyond it (the own
// server's janitor looks once a second, net/http's deadlines move once a
// second).
const (
	clientTimeout = 1500 * time.Millisecond
	timeoutSlack  = 3 * time.Second
)

func withClientTimeouts() option {
	return withServeOptions(func(l *dataplane.ServeOptions) {
		l.BodyTimeout, l.WriteTimeout = clientTimeout, clientTimeout
	})
}

// A body that stops arriving gets 408 within the body timeout, whether it
// never started or stopped after its first bytes (then streamed to the
// backend, which must see its connection closed, not a complete body).
// A body of at most 64 KiB is written to the backend by the handler
// itself, past that by a goroutine of its own (http1.Conn.Send): both
// are stalled. (net/http's servers end the request's context when a body
// read fails; an inline body's failure was taken for that, and answered
// 502 as the backend's.)
func TestStalledBodyGets408(t *testing.T) {
	be := newBackend(t)
	e := newEnv(t, be.addr, withClientTimeouts())
	t.Cleanup(func() { // after the parallel subtests, before the proxies stop
		for end := time.Now().Add(2 * time.Second); be.busy.Load() != 0 && time.Now().Before(end); {
			time.Sleep(10 * time.Millisecond)
		}
		if n := be.busy.Load(); n != 0 {
			t.Errorf("the backend still waits on %d bodies", n)
		}
	})
	e.each(func(t *testing.T, p path) {
		t.Parallel()
		for _, c := range []struct{ sent, size int }{{0, 100_000}, {10, 100_000}, {10, 40_000}} {
			start := time.Now()
			status := stalledUpload(t, p, c.sent, c.size)
			took := time.Since(start)
			if status != "408" {
				t.Fatalf("%d body bytes of %d, then nothing: got %s after %v, want 408", c.sent, c.size, status, took)
			}
			if took < clientTimeout-time.Second || took > clientTimeout+timeoutSlack {
				t.Errorf("%d body bytes of %d: 408 after %v, want about %v", c.sent, c.size, took, clientTimeout)
			}
		}
	})
}

// stalledUpload announces a body of size bytes, sends sent bytes of it
// and waits; it returns the status of the answer, as text.
func stalledUpload(t *testing.T, p path, sent, size int) string {
	t.Helper()
	c := p.dial(t)
	defer c.Close()
	body := strings.Repeat("x", sent)
	if p.proto == "h1" {
		c.SetDeadline(time.Now().Add(clientTimeout + timeoutSlack + time.Second))
		io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: app.example\r\nContent-Length: "+strconv.Itoa(size)+"\r\n\r\n"+body)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err.Error()
		}
		res.Body.Close()
		return res.Status[:3]
	}
	h := h2dial(t, c)
	s := h.open(p.request("POST", "/upload", "app.example", hf{"content-length", strconv.Itoa(size)}), false)
	if sent > 0 {
		h.data(s, []byte(body), false)
	}
	select {
	case <-s.done:
		return s.String()[:3]
	case <-time.After(clientTimeout + timeoutSlack + time.Second):
		return "no answer"
	}
}

// A client that stops reading a large response is cut off within the
// write timeout, and the backend connection serving it is released: the
// backend's write fails.
func TestUnreadResponseReleasesTheBackend(t *testing.T) {
	var mu sync.Mutex
	released := map[string]chan time.Time{} // by request target: one per path
	releasedFor := func(target string) chan time.Time {
		mu.Lock()
		defer mu.Unlock()
		if released[target] == nil {
			released[target] = make(chan time.Time, 1)
		}
		return released[target]
	}
	be := testnet.RawServer(t, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n")
		chunk := make([]byte, 64<<10)
		for range 1 << 14 { // up to 1 GiB: far beyond every buffer on the way
			if _, err := c.Write(chunk); err != nil {
				releasedFor(req.URL.Path) <- time.Now()
				return
			}
		}
	})
	e := newEnv(t, be, withClientTimeouts())
	e.each(func(t *testing.T, p path) {
		t.Parallel()
		target := "/download/" + strings.ReplaceAll(p.name, "/", "-")
		c := p.dial(t)
		defer c.Close()
		start := time.Now()
		if p.proto == "h1" {
			io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: app.example\r\n\r\n")
		} else {
			// A client that sends its preface and request, then reads
			// nothing: the stream's window (64 KiB) fills, then TCP's.
			io.WriteString(c, http2.ClientPreface)
			fr := http2.NewFramer(c, c)
			fr.WriteSettings()
			h := &h2conn{t: t, nc: c, fr: fr, next: 1, streams: map[uint32]*h2stream{}}
			h.enc = hpack.NewEncoder(&h.hbuf)
			h.open(p.request("GET", target, "app.example"), true)
		}
		// What releases the backend must be the write timeout: the next
		// bound that could (the default body and write timeouts) is 60 s.
		// So the wait is bounded well below that, and well above what a
		// busy machine adds to the write timeout (seen: 6.5 s in all with
		// every package's tests running at once).
		const bound = clientTimeout + 15*time.Second
		select {
		case <-releasedFor(target):
		case <-time.After(bound):
			t.Fatalf("the backend still sends to a client that reads nothing after %v", time.Since(start))
		}
	})
}
