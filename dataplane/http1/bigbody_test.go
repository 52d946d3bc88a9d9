// This file tests how large response bodies move from a backend to a
// client, through real sockets at both ends.

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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testnet"
)

// relay is a handler that forwards each request to its pool's backend as
// the proxy does (dataplane/forward_h1.go): the answer's head copied, its
// body passed on with CopyBody as it arrives, the connection given back
// only when the exchange was clean, and an upstream failure aborting the
// response so the client sees it cut. Each exchange's outcome goes to
// results, when set. With hold, the body goes through a writer that
// sends nothing until flushed, which only the flushing rule then
// delivers.
type relay struct {
	p       *Pool
	results chan relayResult
	hold    bool
}

// holdingWriter keeps everything written until Flush.
type holdingWriter struct {
	bw *bufio.Writer
	fl http.Flusher
}

func (h *holdingWriter) Write(p []byte) (int, error) { return h.bw.Write(p) }
func (h *holdingWriter) Flush()                      { h.bw.Flush(); h.fl.Flush() }

type relayResult struct{ upErr, downErr error }

func (rl *relay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := rl.p.Get(r.Context(), "", false)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	WriteRequestLine(c.Writer(), r.Method, r.RequestURI, "h")
	EndHead(c.Writer(), 0)
	done, err := c.Send(nil, nil, 0)
	h := GetHead()
	defer PutHead(h)
	if err == nil {
		err = c.ReadResponse(h, false)
	}
	if err != nil {
		c.Close()
		<-done
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hdr := w.Header()
	h.CopyTo(hdr)
	if h.Chunked {
		hdr["Transfer-Encoding"] = []string{"chunked"}
	}
	w.WriteHeader(h.Status)
	fl := w.(http.Flusher)
	var out io.Writer = w
	if rl.hold {
		hw := &holdingWriter{bw: bufio.NewWriterSize(w, 4<<20), fl: fl}
		defer hw.bw.Flush()
		out, fl = hw, hw
	}
	upErr, downErr := c.CopyBody(out, fl, h, r.Method, hdr)
	c.Finish(h, upErr == nil && downErr == nil, r.Method, done)
	if rl.results != nil {
		rl.results <- relayResult{upErr, downErr}
	}
	if upErr != nil {
		fl.Flush()
		panic(http.ErrAbortHandler)
	}
}

// startRelay serves a relay to backend addr on the package's server and
// returns the server's address, and the relay.
func startRelay(t *testing.T, addr string, writeTimeout time.Duration, hold bool) (string, *relay) {
	t.Helper()
	rl := &relay{p: testPool(addr), results: make(chan relayResult, 16), hold: hold}
	s := &Server{Handler: rl, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), WriteTimeout: writeTimeout}
	return startServer(t, s), rl
}

// pattern is n bytes that differ from one position to the next, so that
// a byte lost, doubled or moved shows.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

// client is a kept-alive client connection.
type client struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialClient(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, br: bufio.NewReader(c)}
}

// do sends a request and reads its response head.
func (cl *client) do(method, target string) *http.Response {
	cl.t.Helper()
	cl.c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(cl.c, "%s %s HTTP/1.1\r\nHost: a\r\n\r\n", method, target)
	res, err := http.ReadResponse(cl.br, &http.Request{Method: method})
	if err != nil {
		cl.t.Fatalf("%s %s: %v", method, target, err)
	}
	return res
}

// chunkedAnswer is a chunked response carrying pieces, one chunk each,
// and a trailer field.
func chunkedAnswer(pieces ...[]byte) string {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n")
	for _, p := range pieces {
		b.WriteString(strconv.FormatInt(int64(len(p)), 16) + "\r\n")
		b.Write(p)
		b.WriteString("\r\n")
	}
	b.WriteString("0\r\nX-Sum: 42\r\n\r\n")
	return b.String()
}

// Bodies of 64 KiB and 1 MiB, of known length, chunked in large chunks,
// and ended by the close, arrive whole and in order; the connection of a
// body whose end was read is reused.
func TestRelayLargeBodies(t *testing.T) {
	t.Parallel()
	big := pattern(1 << 20)
	for _, tc := range []struct {
		name   string
		answer string
		body   []byte
		reuse  bool
	}{
		{"length/64KiB", ok(string(big[:64<<10])), big[:64<<10], true},
		{"length/1MiB", ok(string(big)), big, true},
		{"length/1MiB+3", ok(string(big) + "abc"), append(big[:len(big):len(big)], "abc"...), true},
		{"chunked/3x300KiB", chunkedAnswer(big[:300<<10], big[300<<10:600<<10], big[600<<10:900<<10]), big[:900<<10], true},
		{"eof/1MiB", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + string(big), big, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := startBackend(t, func(int) string { return tc.answer }, nil)
			if !tc.reuse { // the body ends at the close
				b.addr = testnet.RawServer(t, func(c net.Conn) {
					b.accepts.Add(1)
					if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
						io.WriteString(c, tc.answer)
					}
				})
			}
			addr, rl := startRelay(t, b.addr, 0, false)
			cl := dialClient(t, addr)
			for i := range 3 {
				res := cl.do("GET", "/")
				got, err := io.ReadAll(res.Body)
				if err != nil || !bytes.Equal(got, tc.body) {
					t.Fatalf("request %d: %d bytes of %d (%v), equal %v", i, len(got), len(tc.body), err, bytes.Equal(got, tc.body))
				}
				if r := <-rl.results; r.upErr != nil || r.downErr != nil {
					t.Fatalf("request %d: %+v", i, r)
				}
				if strings.HasPrefix(tc.name, "chunked") && res.Trailer.Get("X-Sum") != "42" {
					t.Errorf("request %d: trailer lost: %v", i, res.Trailer)
				}
			}
			if want := int32(1); tc.reuse && b.accepts.Load() != want {
				t.Errorf("%d backend connections for 3 requests, want %d", b.accepts.Load(), want)
			}
		})
	}
}

// The flushing rule: a body the backend sends in pieces, waiting for the
// client to have each one before it sends the next, reaches the client
// piece by piece, whatever the framing, for pieces larger than the
// upstream reader's buffer (read straight from the connection) and
// smaller; also through a writer that sends only what is flushed.
func TestRelayBodyInPieces(t *testing.T) {
	t.Parallel()
	data := pattern(200 << 10)
	sizes := []int{20 << 10, 100, 70 << 10, 5, 9 << 10, 64 << 10}
	var pieces [][]byte
	total := 0
	for _, n := range sizes {
		pieces = append(pieces, data[total:total+n])
		total += n
	}
	for _, framing := range []string{"length", "chunked", "eof", "length/held", "chunked/held", "eof/held"} {
		held := strings.HasSuffix(framing, "/held")
		framing := strings.TrimSuffix(framing, "/held")
		name := framing
		if held {
			name += "/held"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			next := make(chan struct{})
			be := testnet.RawServer(t, func(c net.Conn) {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				switch framing {
				case "length":
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", total)
				case "chunked":
					io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
				case "eof":
					io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\n")
				}
				for i, p := range pieces {
					if i > 0 {
						select {
						case <-next:
						case <-time.After(10 * time.Second):
							return
						}
					}
					if framing == "chunked" {
						fmt.Fprintf(c, "%x\r\n%s\r\n", len(p), p)
					} else {
						c.Write(p)
					}
				}
				if framing == "chunked" {
					io.WriteString(c, "0\r\n\r\n")
				}
			})
			addr, _ := startRelay(t, be, 0, held)
			cl := dialClient(t, addr)
			res := cl.do("GET", "/")
			for i, p := range pieces {
				// Each piece must arrive while the backend waits for
				// this client: nothing else will make it send more.
				cl.c.SetReadDeadline(time.Now().Add(3 * time.Second))
				got := make([]byte, len(p))
				if _, err := io.ReadFull(res.Body, got); err != nil {
					t.Fatalf("piece %d (%d bytes) held back: %v", i, len(p), err)
				}
				if !bytes.Equal(got, p) {
					t.Fatalf("piece %d differs", i)
				}
				if i < len(pieces)-1 {
					select {
					case next <- struct{}{}:
					case <-time.After(5 * time.Second):
						t.Fatal("the backend stopped waiting")
					}
				}
			}
			if rest, err := io.ReadAll(res.Body); err != nil || len(rest) != 0 {
				t.Fatalf("after the pieces: %d bytes, %v", len(rest), err)
			}
		})
	}
}

// A backend that closes in the middle of a large body: the client gets
// what arrived, then a cut response (never a complete short one), the
// exchange reports an upstream error, and the connection is not kept.
func TestRelayBackendClosesMidBody(t *testing.T) {
	t.Parallel()
	sent := pattern(300 << 10)
	be := testnet.RawServer(t, func(c net.Conn) {
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", 1<<20)
		c.Write(sent)
	})
	addr, rl := startRelay(t, be, 0, false)
	cl := dialClient(t, addr)
	res := cl.do("GET", "/")
	got, err := io.ReadAll(res.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) || !bytes.Equal(got, sent) {
		t.Errorf("client read %d bytes (the backend sent %d), then %v; want all of them, then a cut", len(got), len(sent), err)
	}
	r := <-rl.results
	if r.upErr == nil || r.downErr != nil {
		t.Errorf("outcome %+v, want an upstream error", r)
	}
	if c, _ := rl.p.Idle("", false); c != nil {
		t.Error("the connection of a cut body went back to the pool")
	}
}

// A client that stops reading a large body is cut off by the server's
// WriteTimeout: the copy ends with a client error, and the backend's
// connection is closed, not kept with a body half read.
func TestRelayClientStopsReading(t *testing.T) {
	t.Parallel()
	beDone := make(chan error, 1)
	be := testnet.RawServer(t, func(c net.Conn) {
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", 1<<30)
		chunk := pattern(64 << 10)
		for range 1 << 14 {
			if _, err := c.Write(chunk); err != nil {
				beDone <- err
				return
			}
		}
		beDone <- nil
	})
	addr, rl := startRelay(t, be, time.Second, false)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n") // and never read
	select {
	case r := <-rl.results:
		if r.downErr == nil {
			t.Errorf("outcome %+v, want a client error", r)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the copy to a client that does not read was not cut within 8 s")
	}
	select {
	case err := <-beDone:
		if err == nil {
			t.Error("the backend wrote its whole 1 GiB body")
		}
	case <-time.After(5 * time.Second):
		t.Error("the backend's connection was kept open")
	}
}

// A HEAD answer that announces a large body carries none, and the
// client's next request on the connection gets its own answer.
func TestRelayHeadOfLargeBody(t *testing.T) {
	t.Parallel()
	body := pattern(1 << 20)
	be := testnet.RawServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if req.Method == "HEAD" {
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(body))
			} else {
				io.WriteString(c, ok(string(body)))
			}
		}
	})
	addr, _ := startRelay(t, be, 0, false)
	cl := dialClient(t, addr)
	res := cl.do("HEAD", "/")
	if res.ContentLength != int64(len(body)) {
		t.Errorf("HEAD: Content-Length %d, want %d", res.ContentLength, len(body))
	}
	res = cl.do("GET", "/")
	got, err := io.ReadAll(res.Body)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("GET after HEAD: %d bytes, %v", len(got), err)
	}
}

// eofWithLast gives its data, and io.EOF with the last of it, as
// crypto/tls does when the peer's close_notify follows a record.
type eofWithLast struct{ data []byte }

func (r *eofWithLast) Read(p []byte) (int, error) {
	n := copy(p, r.data)
	r.data = r.data[n:]
	if len(r.data) == 0 {
		return n, io.EOF
	}
	return n, nil
}

// A body whose last bytes come with the end of the stream is whole; one
// whose stream ends before its length is cut.
func TestCopyLargeBodyEndingWithEOF(t *testing.T) {
	body := pattern(200 << 10)
	for _, tc := range []struct {
		sent    int
		wantErr error
	}{{len(body), nil}, {len(body) - 1, io.ErrUnexpectedEOF}} {
		var out bytes.Buffer
		c := bodyCopy{w: &out, br: bufio.NewReaderSize(&eofWithLast{data: body[:tc.sent]}, upReadBuf)}
		err := c.fixed(int64(len(body)))
		if err != tc.wantErr || !bytes.Equal(out.Bytes(), body[:tc.sent]) {
			t.Errorf("%d bytes of %d sent: %v, %d bytes passed on; want %v and all of them", tc.sent, len(body), err, out.Len(), tc.wantErr)
		}
		if c.big != nil {
			t.Error("the copy kept its large buffer")
		}
	}
}
