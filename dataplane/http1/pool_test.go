package http1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testnet"
)

// backend accepts loopback connections and answers every request head
// with answer(n), n counting requests on that connection from 0; after
// that it writes extra(n), if any, after a pause of wait. It counts the
// connections it accepted and the extras it wrote.
type backend struct {
	addr    string
	accepts atomic.Int32
	extras  atomic.Int32
}

func startBackend(t *testing.T, answer func(n int) string, extra func(n int) (string, time.Duration)) *backend {
	t.Helper()
	b := &backend{}
	b.addr = testnet.RawServer(t, func(c net.Conn) {
		b.accepts.Add(1)
		br := bufio.NewReader(c)
		for n := 0; ; n++ {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			io.WriteString(c, answer(n))
			if extra == nil {
				continue
			}
			if s, wait := extra(n); s != "" {
				time.Sleep(wait)
				io.WriteString(c, s)
				b.extras.Add(1)
			}
		}
	})
	return b
}

func testPool(addr string) *Pool {
	return NewPool(addr, nil, PoolSettings{MaxIdle: 4, IdleTimeout: time.Minute, DialTimeout: time.Second, MaxConns: 8}, nil)
}

// exchange sends one GET (or method) on a connection from p and returns
// the answer's status and body, releasing the connection as the proxy
// does.
func exchange(t *testing.T, p *Pool, method string) (status int, body string) {
	t.Helper()
	c, err := p.Get(context.Background(), "", false)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	WriteRequestLine(c.Writer(), method, "/", "h")
	EndHead(c.Writer(), 0)
	done, err := c.Send(nil, nil, 0)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	h := GetHead()
	defer PutHead(h)
	if err := c.ReadResponse(h, false); err != nil {
		c.Close()
		return 0, err.Error()
	}
	var sb strings.Builder
	upErr, downErr := c.CopyBody(&sb, nil, h, method, http.Header{})
	c.SetDeadline(time.Time{})
	c.Finish(h, upErr == nil && downErr == nil, method, done)
	return h.Status, sb.String()
}

// ok is a complete 200 response with body.
func ok(body string) string {
	return "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// Bytes a server sends after a complete response, in the same write or
// later while the connection is idle, are never read as the answer to
// the next request: the connection is closed and a new one dialled.
func TestPoolNeverReusesAConnectionWithStrayBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait time.Duration
	}{
		{"in the same write", 0},
		{"while idle", 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBackend(t, func(n int) string { return ok("answer") },
				func(n int) (string, time.Duration) { return ok("stray"), tc.wait })
			p := testPool(b.addr)
			for i := range 3 {
				if _, body := exchange(t, p, "GET"); body != "answer" {
					t.Fatalf("request %d got %q", i, body)
				}
				// The stray bytes are written before the next request,
				// however late the backend runs: bytes that come after a
				// request is sent cannot be told from its answer.
				for deadline := time.Now().Add(5 * time.Second); b.extras.Load() <= int32(i); time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the backend did not write its stray bytes")
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
			if n := b.accepts.Load(); n != 3 {
				t.Errorf("%d connections for 3 requests: a dirty one was reused", n)
			}
		})
	}
}

// A connection the server closed while it sat in the pool is not handed
// out: the next request goes on a new one instead of failing.
func TestPoolSkipsAConnectionTheServerClosed(t *testing.T) {
	closed := make(chan struct{}, 3)
	addr := testnet.RawServer(t, func(c net.Conn) { // one answer, then an idle timeout of 20 ms
		if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			io.WriteString(c, ok("answer"))
			time.Sleep(20 * time.Millisecond)
			c.Close()
			closed <- struct{}{}
		}
	})
	p := testPool(addr)
	for i := range 3 {
		if _, body := exchange(t, p, "GET"); body != "answer" {
			t.Fatalf("request %d got %q", i, body)
		}
		// Closed before the next request, however late the server runs:
		// a close after a request is sent is a failed request.
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatal("the server did not close its connection")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A response to HEAD, 204 or 304 that announced a body (a length, or
// chunking) closes its connection: a server that gets this wrong usually
// sends the body too, and it may arrive after any check for it.
func TestPoolClosesAfterABodilessAnswerThatAnnouncedABody(t *testing.T) {
	for _, tc := range []struct {
		name, method, answer string
		reuse                bool
	}{
		{"HEAD with a length", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", false},
		{"HEAD chunked", "HEAD", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false},
		{"HEAD without a length", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true},
		{"204 with a length", "GET", "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", false},
		{"304 with a length", "GET", "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n", false},
		{"304", "GET", "HTTP/1.1 304 Not Modified\r\nEtag: \"x\"\r\n\r\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBackend(t, func(int) string { return tc.answer }, nil)
			p := testPool(b.addr)
			exchange(t, p, tc.method)
			if idle, _ := p.Counts(); (idle == 1) != tc.reuse {
				t.Errorf("%d idle connections after the answer, want reuse=%v", idle, tc.reuse)
			}
		})
	}
}

// The sweep closes idle connections that are no longer quiet, without
// waiting for a request to find them.
func TestPoolSweepClosesDirtyIdleConnections(t *testing.T) {
	b := startBackend(t, func(int) string { return ok("x") },
		func(int) (string, time.Duration) { return "junk", 100 * time.Millisecond })
	p := testPool(b.addr)
	exchange(t, p, "GET")
	if idle, _ := p.Counts(); idle != 1 {
		t.Fatalf("%d idle after one exchange", idle)
	}
	deadline := time.Now().Add(3 * sweepEvery)
	for {
		idle, open := p.Counts()
		if idle == 0 && open == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d idle, %d open %v after the junk arrived", idle, open, 3*sweepEvery)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Informational responses are skipped, at most max1xx of them, and all
// heads of a response share one size limit.
func TestReadHeadCapsInformationalResponses(t *testing.T) {
	final := "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
	early := "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
	big := "HTTP/1.1 103 Early Hints\r\nLink: " + strings.Repeat("x", 60<<10) + "\r\n\r\n"
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"five", strings.Repeat(early, 5) + final, true},
		{"six", strings.Repeat(early, 6) + final, false},
		{"large ones", strings.Repeat(big, 5) + final, false},
	} {
		h := &Head{}
		err := readHead(bufio.NewReader(strings.NewReader(tc.in)), h)
		var pe *ProtocolError
		switch {
		case tc.ok && (err != nil || h.Status != 200):
			t.Errorf("%s: %v, status %d", tc.name, err, h.Status)
		case !tc.ok && !errors.As(err, &pe):
			t.Errorf("%s: accepted (err %v)", tc.name, err)
		}
	}
}

// Bytes sent in the same TLS record as a response can stay inside
// crypto/tls, where a look at the socket cannot see them; the connection
// is closed rather than pooled.
func TestPoolClosesATLSConnectionHoldingStrayBytes(t *testing.T) {
	// The second response ends exactly where the reader's first read ends
	// (its buffer size), in one 16 KiB record with a stray response after
	// it, which then stays in crypto/tls. (Go's TLS server sends small
	// records until 128 KiB went out: the first response is that large.)
	big := ok(strings.Repeat("a", 256<<10))
	head := "HTTP/1.1 200 OK\r\nContent-Length: 8151\r\n\r\n"
	body := strings.Repeat("b", upReadBuf-len(head))
	if len(body) != 8151 {
		t.Fatalf("body of %d bytes: fix the head's length", len(body))
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, big) // the answer to the request that was hijacked
		if _, err := http.ReadRequest(brw.Reader); err != nil {
			return
		}
		io.WriteString(c, head+body+ok("stray")) // one write: one record
		time.Sleep(200 * time.Millisecond)
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	conf := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	conf.NextProtos, conf.ServerName = []string{"http/1.1"}, "example.com"
	p := NewPool(srv.Listener.Addr().String(), conf, PoolSettings{MaxIdle: 4, IdleTimeout: time.Minute, DialTimeout: time.Second, MaxConns: 8}, nil)
	if _, got := exchange(t, p, "GET"); len(got) != 256<<10 {
		t.Fatalf("first answer: %d bytes", len(got))
	}
	if idle, _ := p.Counts(); idle != 1 {
		t.Fatalf("the first connection was not pooled")
	}
	if _, got := exchange(t, p, "GET"); got != body {
		t.Fatalf("second answer: %d bytes", len(got))
	}
	if idle, _ := p.Counts(); idle != 0 {
		t.Errorf("a connection with a stray response in its TLS buffer was pooled")
	}
}

// One client holds at most MaxConnsPerClient of an endpoint's
// connections; others still get theirs, and a client's place comes back
// when its connection does.
func TestPoolCapsConnectionsPerClient(t *testing.T) {
	b := startBackend(t, func(int) string { return ok("x") }, nil)
	p := NewPool(b.addr, nil, PoolSettings{MaxConns: 8}.OrDefaults(), nil)
	var mine []*Conn
	for range 2 { // a quarter of 8
		c, err := p.Get(t.Context(), "203.0.113.66", false)
		if err != nil {
			t.Fatal(err)
		}
		mine = append(mine, c)
	}
	if _, err := p.Get(t.Context(), "203.0.113.66", false); !errors.Is(err, ErrClientOverloaded) {
		t.Fatalf("third connection for one client: %v", err)
	}
	other, err := p.Get(t.Context(), "203.0.113.7", false)
	if err != nil {
		t.Fatalf("another client: %v", err)
	}
	other.Close()
	mine[0].Close()
	c, err := p.Get(t.Context(), "203.0.113.66", false)
	if err != nil {
		t.Fatalf("after one came back: %v", err)
	}
	c.Close()
	mine[1].Close()
	if _, open := p.Counts(); open != 0 {
		t.Errorf("%d connections counted open", open)
	}
	if len(p.held) != 0 {
		t.Errorf("places still held: %v", p.held)
	}
}

// Idle hands out an idle connection, or none without dialling and
// without keeping the client's place; at the client's cap it fails as
// Get does.
func TestPoolIdle(t *testing.T) {
	b := startBackend(t, func(int) string { return ok("x") }, nil)
	p := NewPool(b.addr, nil, PoolSettings{MaxConns: 4}.OrDefaults(), nil)
	const client = "203.0.113.66"
	if c, err := p.Idle(client, false); c != nil || err != nil {
		t.Fatalf("Idle on an empty pool: %v, %v", c, err)
	}
	if len(p.held) != 0 || b.accepts.Load() != 0 {
		t.Fatalf("Idle on an empty pool held %v and dialled %d times", p.held, b.accepts.Load())
	}
	exchange(t, p, "GET") // leaves its connection idle
	c, err := p.Idle(client, false)
	if c == nil || err != nil {
		t.Fatalf("Idle with a connection idle: %v, %v", c, err)
	}
	if !c.Reused() || p.held[client] != 1 {
		t.Errorf("Idle's connection: reused %v, the client holds %d", c.Reused(), p.held[client])
	}
	if _, err := p.Idle(client, false); !errors.Is(err, ErrClientOverloaded) { // a quarter of 4
		t.Errorf("Idle at the client's cap: %v", err)
	}
	c.Close()
	if len(p.held) != 0 {
		t.Errorf("places still held: %v", p.held)
	}
}

// A request body that fails after the backend's whole answer was read
// (a backend that answers before it reads the body) ends the exchange:
// Finish closes the connection and returns, whatever the order in which
// the answer and the body's failure came.
func TestFinishAfterTheBodyFailed(t *testing.T) {
	b := startBackend(t, func(int) string { return ok("early") }, nil)
	p := testPool(b.addr)
	c, err := p.Get(t.Context(), "", false)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	WriteRequestLine(c.Writer(), "POST", "/", "h")
	EndHead(c.Writer(), -1)
	fail := make(chan struct{})
	done, err := c.Send(io.MultiReader(strings.NewReader("part"), failAfter(fail)), nil, -1)
	if err != nil {
		t.Fatal(err)
	}
	h := GetHead()
	defer PutHead(h)
	if err := c.ReadResponse(h, false); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if upErr, downErr := c.CopyBody(&sb, nil, h, "POST", http.Header{}); upErr != nil || downErr != nil {
		t.Fatal(upErr, downErr)
	}
	close(fail) // the client's body breaks off now, with the answer read
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, open := p.Counts(); open == 0 { // the writer closed it
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the body writer did not give up")
		}
	}
	finished := make(chan struct{})
	go func() {
		c.Finish(h, true, "POST", done)
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		t.Fatal("Finish still waits for the body's outcome it already took")
	}
	if idle, open := p.Counts(); idle != 0 || open != 0 {
		t.Errorf("%d idle, %d open after a failed body", idle, open)
	}
}

// failAfter is a body that fails once fail is closed.
type failAfter chan struct{}

func (f failAfter) Read([]byte) (int, error) {
	<-f
	return 0, io.ErrUnexpectedEOF
}

// Connections for requests still sending their body come from the upload
// share (half of MaxConns), a quarter of it per client; other requests
// still get theirs when it is taken; a connection leaves the share once
// its body has been written, and every count comes back to zero.
func TestPoolCapsUploads(t *testing.T) {
	b := startBackend(t, func(int) string { return ok("x") }, nil)
	p := NewPool(b.addr, nil, PoolSettings{MaxConns: 16}.OrDefaults(), nil) // 8 for uploads, 2 a client
	if s := p.settings; s.MaxUploadConns != 8 || s.MaxUploadConnsPerClient != 2 {
		t.Fatalf("upload share %d, per client %d; want 8 and 2", s.MaxUploadConns, s.MaxUploadConnsPerClient)
	}
	client := func(i int) string { return "203.0.113." + strconv.Itoa(i) }
	var held []*Conn
	for i := range 4 {
		for range 2 {
			c, err := p.Get(t.Context(), client(i), true)
			if err != nil {
				t.Fatalf("upload %d of client %d: %v", len(held), i, err)
			}
			held = append(held, c)
		}
	}
	if _, err := p.Get(t.Context(), client(0), true); !errors.Is(err, ErrUploadsOverloaded) {
		t.Fatalf("a third upload for one client: %v", err)
	}
	if _, err := p.Dial(t.Context(), client(9), true); !errors.Is(err, ErrUploadsOverloaded) {
		t.Fatalf("an upload beyond the share: %v", err)
	}
	if p.Uploads() != 8 {
		t.Fatalf("%d uploads counted, want 8", p.Uploads())
	}
	// The other half is everyone else's, the attackers' addresses too.
	other, err := p.Get(t.Context(), client(0), false)
	if err != nil {
		t.Fatalf("a request without a body to wait for: %v", err)
	}
	other.Close()

	// A body written whole takes the connection out of the share, on the
	// goroutine that writes it and on the caller's alike.
	c := held[0]
	WriteRequestLine(c.Writer(), "POST", "/", "h")
	EndHead(c.Writer(), -1)
	done, err := c.Send(strings.NewReader("body"), nil, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if p.Uploads() != 7 {
		t.Fatalf("%d uploads counted after one body was written, want 7", p.Uploads())
	}
	again, err := p.Get(t.Context(), client(0), true)
	if err != nil {
		t.Fatalf("the client's place in the share did not come back: %v", err)
	}
	again.Close()
	c = held[1]
	WriteRequestLine(c.Writer(), "POST", "/", "h")
	EndHead(c.Writer(), 4)
	if _, err := c.Send(strings.NewReader("body"), nil, 4); err != nil {
		t.Fatal(err)
	}
	if p.Uploads() != 6 {
		t.Fatalf("%d uploads counted after a short body was written, want 6", p.Uploads())
	}
	for _, c := range held {
		c.Close()
	}
	if _, open := p.Counts(); open != 0 || p.Uploads() != 0 || len(p.held) != 0 || len(p.uploading) != 0 {
		t.Errorf("after every connection closed: %d open, %d uploads, held %v, uploading %v", open, p.Uploads(), p.held, p.uploading)
	}
}

// Thousands of requests of every kind, from several clients at once,
// leave no count behind: uploads and not, bodies written whole or failing
// on the client's side, answers read and connections kept, or closed.
func TestPoolUploadCountsComeBackToZero(t *testing.T) {
	b := startBackend(t, func(int) string { return ok("x") }, nil)
	p := NewPool(b.addr, nil, PoolSettings{MaxConns: 16, MaxIdle: 4, DialTimeout: time.Second}.OrDefaults(), nil)
	var wg sync.WaitGroup
	var refused atomic.Int32
	for g := range 8 {
		wg.Go(func() {
			for i := range 400 {
				upload := i%2 == 0
				c, err := p.Get(t.Context(), "203.0.113."+strconv.Itoa(g%3), upload)
				if err != nil {
					if !errors.Is(err, ErrUploadsOverloaded) && !errors.Is(err, ErrClientOverloaded) && !errors.Is(err, ErrOverloaded) {
						t.Errorf("Get: %v", err)
						return
					}
					refused.Add(1)
					continue
				}
				c.SetDeadline(time.Now().Add(5 * time.Second))
				WriteRequestLine(c.Writer(), "POST", "/", "h")
				var body io.Reader
				n := int64(0)
				switch i % 4 {
				case 0: // streamed, chunked
					body, n = strings.NewReader("chunked body"), -1
				case 1: // nothing to wait for
				case 2: // the client's body fails
					body, n = io.MultiReader(strings.NewReader("part"), failing{}), -1
				case 3:
					body, n = strings.NewReader("four"), 4
				}
				EndHead(c.Writer(), n)
				done, err := c.Send(body, nil, n)
				if err != nil {
					c.Close()
					continue
				}
				h := GetHead()
				if err := c.ReadResponse(h, false); err != nil {
					c.Close()
					<-done
					PutHead(h)
					continue
				}
				var sb strings.Builder
				upErr, downErr := c.CopyBody(&sb, nil, h, "POST", http.Header{})
				c.SetDeadline(time.Time{})
				if i%8 == 7 {
					c.Drop(h, "POST", 0, done)
				} else {
					c.Finish(h, upErr == nil && downErr == nil, "POST", done)
				}
				PutHead(h)
			}
		})
	}
	wg.Wait()
	if _, open := p.Counts(); p.Uploads() != 0 || len(p.held) != 0 || len(p.uploading) != 0 {
		t.Errorf("after 3,200 requests: %d uploads counted, held %v, uploading %v (%d open)", p.Uploads(), p.held, p.uploading, open)
	}
	if idle, open := p.Counts(); idle != open {
		t.Errorf("%d connections open, %d idle: busy places leaked", open, idle)
	}
	t.Logf("%d requests refused at a cap", refused.Load())
}

// failing is a client body that breaks off.
type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

// A connection idle for a second or more gives its buffers back, and
// takes pooled ones when it is next used; one put back since the last
// sweep keeps its own.
func TestPoolIdleConnectionsShedTheirBuffers(t *testing.T) {
	b := startBackend(t, func(int) string { return ok("hello") }, nil)
	var shed atomic.Int64
	p := NewPool(b.addr, nil, PoolSettings{MaxIdle: 4, IdleTimeout: time.Minute, DialTimeout: time.Second, MaxConns: 8,
		Shed: func(n int) { shed.Add(int64(n)) }}, nil)
	defer p.Close()
	if status, body := exchange(t, p, "GET"); status != 200 || body != "hello" {
		t.Fatalf("first exchange: %d %q", status, body)
	}
	idleConn := func() *Conn {
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(p.idle) != 1 {
			t.Fatalf("%d idle connections, want 1", len(p.idle))
		}
		return p.idle[0]
	}
	p.sweep() // put back since the last sweep: under a second idle
	if c := idleConn(); c.br == nil || c.bw == nil || shed.Load() != 0 {
		t.Fatalf("a connection idle for less than a second shed its buffers (%d bytes told)", shed.Load())
	}
	p.sweep()
	if c := idleConn(); c.br != nil || c.bw != nil {
		t.Fatal("a connection idle through a whole sweep kept its buffers")
	}
	if n := shed.Load(); n != shedBytes {
		t.Fatalf("the sweep told of %d bytes shed, want %d", n, shedBytes)
	}
	p.sweep()
	if n := shed.Load(); n != shedBytes {
		t.Fatalf("a connection without buffers was told as shed again: %d bytes in all", n)
	}
	if status, body := exchange(t, p, "GET"); status != 200 || body != "hello" {
		t.Fatalf("exchange on a connection that shed its buffers: %d %q", status, body)
	}
	if n := b.accepts.Load(); n != 1 {
		t.Fatalf("the backend accepted %d connections, want 1 (the idle one reused)", n)
	}
	if c := idleConn(); c.br == nil || c.bw == nil {
		t.Fatal("a connection back from an exchange has no buffers")
	}
}

// After a 101, Tunnel hands the connection over with a copy of the bytes
// that came behind the 101's head, and the connection lets go of its
// buffers; Close still gives its place back to the pool.
func TestConnTunnelHandsTheConnectionOver(t *testing.T) {
	addr := testnet.RawServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nearly\n")
		line, _ := br.ReadString('\n')
		io.WriteString(c, "later "+line)
	})
	p := testPool(addr)
	c, err := p.Get(t.Context(), "", false)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	WriteRequestLine(c.Writer(), "GET", "/", "h")
	WriteField(c.Writer(), "Connection", "Upgrade")
	WriteField(c.Writer(), "Upgrade", "echo")
	EndHead(c.Writer(), 0)
	if _, err := c.Send(nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	h := GetHead()
	defer PutHead(h)
	if err := c.ReadResponse(h, true); err != nil || h.Status != http.StatusSwitchingProtocols {
		t.Fatalf("answer: %d, %v", h.Status, err)
	}
	nc, early := c.Tunnel()
	if string(early) != "early\n" {
		t.Errorf("early bytes %q", early)
	}
	if c.br != nil || c.bw != nil {
		t.Error("the connection still holds its buffers after Tunnel")
	}
	io.WriteString(nc, "x\n")
	if line, err := bufio.NewReader(nc).ReadString('\n'); line != "later x\n" {
		t.Errorf("through the tunnel: %q, %v", line, err)
	}
	c.Close()
	if _, open := p.Counts(); open != 0 {
		t.Errorf("%d connections open after Close", open)
	}
}
