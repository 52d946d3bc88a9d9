package dataplane

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testnet"
)

func TestSizeClass(t *testing.T) {
	for _, tc := range []struct{ n, class int }{
		{0, 0}, {1, 0}, {minBuffer, 0}, {minBuffer + 1, 1}, {2 * minBuffer, 1},
		{64 << 10, 4}, {64<<10 + 1, 5}, {1 << 20, 8},
	} {
		if got := sizeClass(tc.n); got != tc.class {
			t.Errorf("sizeClass(%d) = %d, want %d", tc.n, got, tc.class)
		}
	}
}

// The budget is taken by each buffer's size while it is out and given
// back by its last holder; a buffer the budget has no room for is not
// handed out, and a loose one is not handed out again.
func TestBuffersBudget(t *testing.T) {
	bs := newBuffers(96<<10, 1<<20)
	a := bs.get(100)
	if a == nil || len(a.b) != minBuffer || bs.inUse() != minBuffer {
		t.Fatalf("get(100): %v, %d bytes in use", a, bs.inUse())
	}
	copy(a.b, "kept")
	b := bs.grow(a, 4, 40<<10) // 64 KiB, with a given back
	if b == nil || len(b.b) != 64<<10 || bs.inUse() != 64<<10 || string(b.b[:4]) != "kept" {
		t.Fatalf("grow to 40 KiB: %d bytes in use", bs.inUse())
	}
	if c := bs.get(40 << 10); c != nil {
		t.Fatalf("a buffer beyond the budget was handed out")
	}
	if c := bs.grow(b, 10, 128<<10); c != nil || bs.inUse() != 64<<10 {
		t.Fatalf("grow beyond the budget: %v, %d bytes in use", c, bs.inUse())
	}
	b.hold() // a mirror's copy
	b.release()
	if bs.inUse() != 64<<10 {
		t.Fatalf("released by one of two holders: %d bytes in use", bs.inUse())
	}
	b.loosen()
	b.release()
	if bs.inUse() != 0 {
		t.Fatalf("released by both: %d bytes in use", bs.inUse())
	}
	for range 100 {
		if c := bs.get(64 << 10); c == b {
			t.Fatal("a loose buffer was handed out again")
		} else {
			c.release()
		}
	}
	var none *bodyBuf
	none.release() // no buffer: nothing to do
}

// rawPOST sends the head of a POST for host to the origin listener, with
// the body framed by length (n >= 0) or chunked (n < 0), and returns the
// connection.
func rawPOST(t *testing.T, e *testEnv, host string, n int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", e.bound.Origin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	head := "POST /up HTTP/1.1\r\nHost: " + host + "\r\n"
	if n >= 0 {
		head += "Content-Length: " + strconv.Itoa(n) + "\r\n\r\n"
	} else {
		head += "Transfer-Encoding: chunked\r\n\r\n"
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	return c
}

// chunk is n bytes of body as one chunk.
func chunk(n int) string {
	return strconv.FormatInt(int64(n), 16) + "\r\n" + strings.Repeat("c", n) + "\r\n"
}

// A body is charged as it arrives: a client that announces half a
// megabyte and sends none or a byte of it holds the smallest buffer; the
// charge grows with what it sends, whatever the framing, and goes when
// the request ends.
func TestBodyChargedAsItArrives(t *testing.T) {
	be := startBackend(t, echo("a"))
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", be)))
	bs := e.p.buffers
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			const total = 512 << 10
			n, send := total, func(c net.Conn, k int) { io.WriteString(c, strings.Repeat("b", k)) }
			if chunked {
				n, send = -1, func(c net.Conn, k int) { io.WriteString(c, chunk(k)) }
			}
			c := rawPOST(t, e, "app.example.com", n)
			waitFor(t, "the smallest buffer to be charged", func() bool { return bs.inUse() == minBuffer })
			send(c, 1)
			send(c, 10<<10) // 10 KiB + 1 in all: a 16 KiB buffer
			waitFor(t, "11 KiB to be charged as 16", func() bool { return bs.inUse() == 16<<10 })
			send(c, total-1-10<<10)
			if chunked {
				io.WriteString(c, "0\r\n\r\n")
			}
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || res.StatusCode != 200 {
				t.Fatalf("response: %v %v", res, err)
			}
			body, _ := io.ReadAll(res.Body)
			if got := len(echoed(string(body), "body")); got != total {
				t.Errorf("the backend got %d bytes of body, want %d", got, total)
			}
			waitFor(t, "the buffer to be given back", func() bool { return bs.inUse() == 0 })
		})
	}
}

// Whatever way a request ends, the buffers of its body and its answer
// are given back: after a success, a client that stops sending, a
// backend that fails before or in the middle of its answer (the handler
// aborts), a retry, a mirror that outlives the request, and a body
// streamed past the bound.
func TestBodyBuffersReleasedOnEveryPath(t *testing.T) {
	ok := startBackend(t, echo("ok"))
	hangup := rawAnswer(t, "")
	midBody := rawAnswer(t, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"+strings.Repeat("x", 500))
	var tries atomic.Int32
	flaky := testnet.RawServer(t, func(c net.Conn) { // 503, then 200, per connection
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if tries.Add(1)%2 == 1 {
				io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
			} else {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
		}
	})
	gate := make(chan struct{})
	sink := startMirrorSink(t, proxycfg.ProtoHTTP1, gate, 10*time.Second)
	retry := to("flaky")
	retry.Retry = &proxycfg.Retry{Codes: []int{503}, Attempts: 1}
	mirrored := to("ok")
	mirrored.Filters = []proxycfg.Filter{mirrorFilter("m", nil)}
	host := func(r proxycfg.Route, h string) proxycfg.Route { r.Hostnames = []string{h}; return r }
	cfg := config([]proxycfg.Route{
		host(route("ok", to("ok")), "ok.example"),
		host(route("hangup", to("hangup")), "hangup.example"),
		host(route("mid", to("mid")), "mid.example"),
		host(route("retry", retry), "retry.example"),
		host(route("mirror", mirrored), "mirror.example"),
	}, cluster("ok", ok), cluster("hangup", hangup), cluster("mid", midBody), cluster("flaky", flaky), sink.cluster("m", proxycfg.ProtoHTTP1))
	e := newTestEnv(t, cfg, func(o *Options) { o.RequestBuffer = 64 << 10 })
	bs := e.p.buffers
	released := func(t *testing.T) {
		t.Helper()
		waitFor(t, "the buffers to be given back", func() bool { return bs.inUse() == 0 })
	}
	send := func(t *testing.T, method, h string, n int) (*http.Response, error) {
		req, _ := http.NewRequest(method, e.url("/"), strings.NewReader(strings.Repeat("p", n)))
		req.Host = h
		res, err := e.client.Do(req)
		if err == nil {
			_, err = io.ReadAll(res.Body)
			res.Body.Close()
		}
		return res, err
	}
	post := func(t *testing.T, h string, n int) (*http.Response, error) { return send(t, "POST", h, n) }

	t.Run("success", func(t *testing.T) {
		if res, err := post(t, "ok.example", 20<<10); err != nil || res.StatusCode != 200 {
			t.Fatalf("%v %v", res, err)
		}
		released(t)
	})
	t.Run("streamed past the bound", func(t *testing.T) {
		if res, err := post(t, "ok.example", 200<<10); err != nil || res.StatusCode != 200 {
			t.Fatalf("%v %v", res, err)
		}
		released(t)
	})
	t.Run("client stops sending", func(t *testing.T) {
		for _, sent := range []int{1000, 100 << 10} { // buffering, and streaming
			c := rawPOST(t, e, "ok.example", 300<<10)
			io.WriteString(c, strings.Repeat("b", sent))
			waitFor(t, "the body to be charged, or sent", func() bool {
				idle, open := e.p.slots["ok"].state.Load().endpoints()[0].conns()
				return bs.inUse() > 0 || open > idle
			})
			c.Close()
			released(t)
		}
	})
	t.Run("backend hangs up", func(t *testing.T) {
		if res, err := post(t, "hangup.example", 1000); err != nil || res.StatusCode != 502 {
			t.Fatalf("%v %v", res, err)
		}
		released(t)
	})
	t.Run("backend fails mid-answer", func(t *testing.T) {
		if _, err := post(t, "mid.example", 1000); err == nil {
			t.Fatal("a short answer read as whole")
		}
		released(t)
	})
	t.Run("retry", func(t *testing.T) {
		// PUT: a request that reached the backend is retried only if
		// it is idempotent.
		if res, err := send(t, "PUT", "retry.example", 1000); err != nil || res.StatusCode != 200 {
			t.Fatalf("%v %v", res, err)
		}
		if e.p.stats.Retries.Load() == 0 {
			t.Fatal("not retried")
		}
		released(t)
	})
	t.Run("mirror outlives the request", func(t *testing.T) {
		if res, err := post(t, "mirror.example", 1000); err != nil || res.StatusCode != 200 {
			t.Fatalf("%v %v", res, err)
		}
		sink.next(t)
		waitFor(t, "the request's own buffers to be given back", func() bool { return bs.inUse() <= minBuffer })
		if n := bs.inUse(); n != minBuffer {
			t.Errorf("%d bytes held while the mirror is sent, want its body's %d", n, minBuffer)
		}
		close(gate)
		released(t)
	})
}

// A body that finds the budget taken is neither refused nor kept
// waiting: a short one (at most startRead by its length) is read whole
// outside the budget, as before the budget existed, and so needs no place
// in the upload share; a longer one is streamed, in the share.
func TestBodyWhenTheBudgetIsTaken(t *testing.T) {
	be := startBackend(t, echo("a"))
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", be)),
		func(o *Options) {
			o.BufferMemory = 2 * minBuffer
			o.Pool.MaxConns, o.Pool.MaxConnsPerClient = 2, 2 // an upload share of 1; one client here
		})
	bs := e.p.buffers
	for range 2 { // two slow clients take the budget
		c := rawPOST(t, e, "app.example.com", 100<<10)
		io.WriteString(c, "x")
	}
	waitFor(t, "the budget to be taken", func() bool { return bs.inUse() == 2*minBuffer })
	c := rawPOST(t, e, "app.example.com", 100<<10) // a third streams, and takes the upload share
	io.WriteString(c, "x")
	waitFor(t, "the upload to take the share", func() bool {
		_, open := e.p.slots["a"].state.Load().endpoints()[0].conns()
		return open == 1
	})
	for _, tc := range []struct {
		n    int
		want int
	}{
		{100, 200},       // read whole: not an upload
		{startRead, 200}, // the same
		{30 << 10, 503},  // an upload, beyond the share
	} {
		req, _ := http.NewRequest("POST", e.url("/"), strings.NewReader(strings.Repeat("v", tc.n)))
		req.Host = "app.example.com"
		res, body := e.do(e.client, req)
		if res.StatusCode != tc.want || (tc.want == 200 && len(echoed(body, "body")) != tc.n) {
			t.Errorf("a body of %d bytes with the budget and the upload share taken: %d (want %d), %d bytes at the backend",
				tc.n, res.StatusCode, tc.want, len(echoed(body, "body")))
		}
	}
	if n := bs.inUse(); n != 2*minBuffer {
		t.Errorf("%d bytes in use, want the budget of %d", n, 2*minBuffer)
	}
}

// A body that streams past the bound gives its buffer back once the
// buffer's bytes have gone to the backend: a long upload holds a
// connection in the upload share, but none of the budget.
func TestBodyHeadGivenBackOnceSent(t *testing.T) {
	be := startBackend(t, echo("a"))
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", be)),
		func(o *Options) { o.RequestBuffer = 64 << 10 })
	bs := e.p.buffers
	for _, n := range []int{256 << 10, -1} {
		c := rawPOST(t, e, "app.example.com", n)
		if n < 0 {
			io.WriteString(c, chunk(64<<10+1))
		} else {
			io.WriteString(c, strings.Repeat("b", 64<<10+1))
		}
		waitFor(t, "the upload to reach the backend", func() bool {
			_, open := e.p.slots["a"].state.Load().endpoints()[0].conns()
			return open == 1
		})
		waitFor(t, "its buffer to be given back", func() bool { return bs.inUse() == 0 })
		c.Close()
		waitFor(t, "the upload's connection to go", func() bool {
			_, open := e.p.slots["a"].state.Load().endpoints()[0].conns()
			return open == 0
		})
	}
}
