package fuzz

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// The proxy's HTTP/1.1 parsers are fuzzed twice: against net/http's in
// dataplane/ (FuzzRequestHead, FuzzResponseHead, FuzzChunked, which see the
// unexported parsers), and here end to end, through real sockets, as a
// hostile client or a broken backend meets them: whatever the bytes, the
// proxy answers with a well-formed response or closes the connection,
// never hangs, never panics, and keeps serving.

// wireEnv is one proxy, started once per fuzz process, whose single route
// sends everything to a backend that writes the bytes the current input
// says (wireEnv.reply).
type wireEnv struct {
	origin string

	mu    sync.Mutex
	reply []byte
}

var (
	wireOnce sync.Once
	wire     *wireEnv
)

func startWire(t testing.TB) *wireEnv {
	wireOnce.Do(func() {
		w := &wireEnv{}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { // the backend: read a head, answer with w.reply, close
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					br := bufio.NewReader(c)
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					w.mu.Lock()
					reply := w.reply
					w.mu.Unlock()
					c.Write(reply)
				}()
			}
		}()
		p := dataplane.New(dataplane.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		cfg := &proxycfg.Config{
			Schema:    proxycfg.SchemaVersion,
			Listeners: []proxycfg.Listener{{Protocol: proxycfg.ListenerHTTP, Name: "l"}},
			Routes: []proxycfg.Route{{Kind: proxycfg.KindHTTP, Namespace: "n", Name: "r", Listeners: []string{"l"},
				Rules: []proxycfg.Rule{{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}, Backends: []proxycfg.BackendRef{{Cluster: "c", Weight: 1}},
					Timeouts: &proxycfg.Timeouts{Request: proxycfg.Duration(2 * time.Second)}}}}},
			Clusters: []proxycfg.Cluster{{Protocol: proxycfg.ProtoHTTP1, Name: "c", Endpoints: []proxycfg.Endpoint{{Address: ln.Addr().String()}}}},
		}
		if err := p.Load(cfg); err != nil {
			t.Fatal(err)
		}
		ready := make(chan dataplane.Bound, 1)
		go p.Serve(context.Background(), dataplane.ServeOptions{Origin: "127.0.0.1:0", Ready: func(b dataplane.Bound) { ready <- b }})
		w.origin = (<-ready).Origin
		wire = w
	})
	return wire
}

// exchange writes data on a new connection to the origin listener and
// returns everything the proxy sends back before closing or going quiet.
func (w *wireEnv) exchange(t *testing.T, data []byte) []byte {
	c, err := net.Dial("tcp", w.origin)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write(data)
	c.(*net.TCPConn).CloseWrite()
	out, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the proxy neither answered nor closed within 5 s after %q", data)
	}
	return out
}

// checkResponses parses out as a sequence of HTTP/1.1 responses: each must
// be well formed (the proxy never emits a broken message); a trailing cut
// is allowed only where the proxy aborts a response it could not finish.
func checkResponses(t *testing.T, in, out []byte) {
	br := bufio.NewReader(bytes.NewReader(out))
	for {
		if _, err := br.Peek(1); err != nil {
			return
		}
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("malformed response %q to %q: %v", out, in, err)
		}
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if err != nil {
			return // an aborted body: the connection ends here
		}
	}
}

// stillServes checks the proxy answers a plain request afterwards.
func (w *wireEnv) stillServes(t *testing.T) {
	w.mu.Lock()
	w.reply = []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	w.mu.Unlock()
	out := w.exchange(t, []byte("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"))
	if !bytes.HasPrefix(out, []byte("HTTP/1.1 200 ")) {
		t.Fatalf("after the input the proxy answers %q", out)
	}
}

// FuzzOriginRequest sends arbitrary bytes to the origin listener as a
// client would; the backend answers any request it gets with a fixed 200.
func FuzzOriginRequest(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
		"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.0\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello",
		"GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
		"\x16\x03\x01\x00\xa5\x01\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w := startWire(t)
		w.mu.Lock()
		w.reply = []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		w.mu.Unlock()
		out := w.exchange(t, data)
		if strings.Contains(strings.ToLower(string(data)), "upgrade") {
			return // a tunnel carries arbitrary bytes after the handshake
		}
		checkResponses(t, data, out)
		w.stillServes(t)
	})
}

// FuzzBackendResponse has the backend answer with arbitrary bytes: the
// client must get the backend's answer made well formed, a 502, or a cut
// connection, never a malformed or split message.
func FuzzBackendResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nuntil close",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
		"HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
		"HTTP/1.1 200 OK\r\nConnection: X-Secret\r\nX-Secret: s\r\nContent-Length: 0\r\n\r\n",
		"garbage",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w := startWire(t)
		w.mu.Lock()
		w.reply = data
		w.mu.Unlock()
		in := []byte("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
		out := w.exchange(t, in)
		checkResponses(t, data, out)
		if bytes.Contains(out, []byte("X-Secret:")) && bytes.Contains(data, []byte("\nConnection: X-Secret\r\n")) {
			t.Fatalf("a header named in the backend's Connection reached the client: %q", out)
		}
		w.stillServes(t)
	})
}
