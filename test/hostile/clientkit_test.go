package hostile

// The tools the client-side attacks share:
//
//   - dialFrom: a raw connection from another loopback address, so the
//     proxy sees a second client;
//   - exchange1: one raw HTTP/1.1 request and its response, for request
//     bytes Go's client would refuse or canonicalise;
//   - h2conn: a raw HTTP/2 client on x/net/http2's Framer and hpack, which
//     sends whatever pseudo-header and field bytes a test gives it;
//   - backend: an HTTP/1.1 backend that records every request line and
//     field name exactly as it arrived, reads every body whole before it
//     answers 200, and counts the requests whose body it is waiting for
//     and the connections it accepted;
//   - upstreamErrorsMetric: the cluster's result="error" count in /metrics.

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/test/testnet"
)

// wait bounds every read a test does on a socket.
const wait = 5 * time.Second

// attackerIP is a loopback source address other than 127.0.0.1, where the
// victims of a test connect from: to the proxy, another client.
const attackerIP = "127.0.0.77"

// dialFrom is p.dial from the loopback address ip.
func (p path) dialFrom(t testing.TB, ip string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: wait, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", p.addr)
	if err != nil {
		t.Fatalf("%s: dial from %s: %v", p.name, ip, err)
	}
	if p.tls == nil {
		return c
	}
	tc := tls.Client(c, p.tls)
	tc.SetDeadline(time.Now().Add(wait))
	if err := tc.Handshake(); err != nil {
		c.Close()
		t.Fatalf("%s: TLS handshake from %s: %v", p.name, ip, err)
	}
	tc.SetDeadline(time.Time{})
	return tc
}

// proxy is the proxy that serves p (origin-nethttp and the listener
// ports have one of their own).
func (e *env) proxy(p path) *dataplane.Proxy {
	switch p.listener {
	case "origin-nethttp":
		return e.pNet
	case "ports", "ports-tls":
		return e.pPorts
	}
	return e.p
}

// adminOf is the admin listener of the proxy that serves p.
func (e *env) adminOf(p path) string {
	switch p.listener {
	case "origin-nethttp":
		return e.adminNet
	case "ports", "ports-tls":
		return e.adminPorts
	}
	return e.admin
}

// peerIP is the address the proxy sees c coming from.
func peerIP(c net.Conn) string {
	return c.LocalAddr().(*net.TCPAddr).IP.String()
}

// scheme is the scheme of p as the proxy's listener sees it.
func (p path) scheme() string {
	if p.tls != nil {
		return "https"
	}
	return "http"
}

// exchange1 writes req on c and reads one response to it, body included.
// method is the request's, which decides whether the response has a body.
func exchange1(c net.Conn, req []byte, method string) (*http.Response, []byte, error) {
	c.SetDeadline(time.Now().Add(wait))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(req); err != nil {
		return nil, nil, fmt.Errorf("writing the request: %w", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		return nil, nil, fmt.Errorf("reading the response: %w", err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return res, body, fmt.Errorf("reading the response body: %w", err)
	}
	return res, body, nil
}

// ---- A raw HTTP/2 client ----

// h2conn is an HTTP/2 client connection that writes frames as told: no
// validation of pseudo-headers, field names or values, nor of framing
// against content-length. A goroutine reads what the server sends,
// acknowledges SETTINGS and PING, returns flow-control credit for DATA,
// and files responses, resets and GOAWAY by stream.
type h2conn struct {
	t  testing.TB
	nc net.Conn

	wmu  sync.Mutex // the framer's write side and the encoder
	fr   *http2.Framer
	enc  *hpack.Encoder
	hbuf bytes.Buffer
	next uint32 // the next stream ID

	mu      sync.Mutex
	streams map[uint32]*h2stream
	dead    error // why the connection ended; nil while it runs
}

// h2stream is one request; its fields are set when done is closed.
type h2stream struct {
	id   uint32
	done chan struct{}
	// status is the response's :status, 0 if none came.
	status int
	body   []byte
	// reset is the RST_STREAM error code, when the server reset it.
	reset    http2.ErrCode
	wasReset bool
	// err is set when the connection ended (GOAWAY, close) first.
	err error
}

// h2dial opens an HTTP/2 connection on c, a raw connection to p (TLS
// done with ALPN h2 on h2 paths, prior knowledge on h2c ones), sending
// settings in its SETTINGS frame.
func h2dial(t testing.TB, c net.Conn, settings ...http2.Setting) *h2conn {
	t.Helper()
	h := &h2conn{t: t, nc: c, next: 1, streams: map[uint32]*h2stream{}}
	h.fr = http2.NewFramer(c, c)
	h.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	h.enc = hpack.NewEncoder(&h.hbuf)
	t.Cleanup(func() { c.Close() })
	c.SetWriteDeadline(time.Now().Add(wait))
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatalf("HTTP/2 preface: %v", err)
	}
	if err := h.fr.WriteSettings(settings...); err != nil {
		t.Fatalf("HTTP/2 SETTINGS: %v", err)
	}
	c.SetWriteDeadline(time.Time{})
	go h.readLoop()
	return h
}

func (h *h2conn) readLoop() {
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			h.end(fmt.Errorf("connection ended: %w", err), 0)
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				h.write(func() error { return h.fr.WriteSettingsAck() })
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				h.write(func() error { return h.fr.WritePing(true, f.Data) })
			}
		case *http2.MetaHeadersFrame:
			h.onStream(f.StreamID, func(s *h2stream) bool {
				if s.status == 0 {
					s.status, _ = strconv.Atoi(f.PseudoValue("status"))
				}
				return f.StreamEnded()
			})
		case *http2.DataFrame:
			if n := uint32(len(f.Data())); n > 0 {
				h.write(func() error { return h.fr.WriteWindowUpdate(0, n) })
			}
			h.onStream(f.StreamID, func(s *h2stream) bool {
				s.body = append(s.body, f.Data()...)
				return f.StreamEnded()
			})
		case *http2.RSTStreamFrame:
			h.onStream(f.StreamID, func(s *h2stream) bool {
				s.reset, s.wasReset = f.ErrCode, true
				return true
			})
		case *http2.GoAwayFrame:
			// Streams above the last one the server processed never will be.
			h.end(fmt.Errorf("GOAWAY %v (last stream %d): %s", f.ErrCode, f.LastStreamID, f.DebugData()), f.LastStreamID)
		}
	}
}

// write runs a framer write under the write lock, with a deadline.
func (h *h2conn) write(w func() error) error {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	h.nc.SetWriteDeadline(time.Now().Add(wait))
	defer h.nc.SetWriteDeadline(time.Time{})
	return w()
}

// onStream applies a frame to its stream; f reports whether it ended it.
func (h *h2conn) onStream(id uint32, f func(*h2stream) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.streams[id]
	if s == nil {
		return
	}
	if f(s) {
		delete(h.streams, id)
		close(s.done)
	}
}

// end fails the open streams above last with err; with last 0, all of
// them, and the connection is dead.
func (h *h2conn) end(err error, last uint32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if last == 0 && h.dead == nil {
		h.dead = err
	}
	for id, s := range h.streams {
		if id > last {
			s.err = err
			delete(h.streams, id)
			close(s.done)
		}
	}
}

// hf is a header field to send, pseudo or not, in order.
type hf struct{ name, value string }

// request is the fields of a request to p: the four pseudo-headers, then
// extra.
func (p path) request(method, target, authority string, extra ...hf) []hf {
	return append([]hf{{":method", method}, {":scheme", p.scheme()}, {":authority", authority}, {":path", target}}, extra...)
}

// open sends a HEADERS frame with fields on a new stream.
func (h *h2conn) open(fields []hf, endStream bool) *h2stream {
	h.t.Helper()
	s := &h2stream{done: make(chan struct{})}
	err := h.write(func() error {
		h.hbuf.Reset()
		for _, f := range fields {
			h.enc.WriteField(hpack.HeaderField{Name: f.name, Value: f.value})
		}
		s.id = h.next
		h.next += 2
		h.mu.Lock()
		if h.dead != nil {
			s.err = h.dead
			close(s.done)
		} else {
			h.streams[s.id] = s
		}
		h.mu.Unlock()
		return h.fr.WriteHeaders(http2.HeadersFrameParam{
			StreamID: s.id, BlockFragment: h.hbuf.Bytes(), EndStream: endStream, EndHeaders: true,
		})
	})
	if err != nil {
		h.t.Fatalf("HEADERS: %v", err)
	}
	return s
}

// data sends a DATA frame on s.
func (h *h2conn) data(s *h2stream, b []byte, endStream bool) {
	h.t.Helper()
	if err := h.write(func() error { return h.fr.WriteData(s.id, endStream, b) }); err != nil {
		h.t.Fatalf("DATA: %v", err)
	}
}

// result waits for s to end: a response, a reset, or the connection's end.
func (s *h2stream) result(t testing.TB) *h2stream {
	t.Helper()
	select {
	case <-s.done:
		return s
	case <-time.After(wait):
		t.Fatalf("stream %d: no response, reset or GOAWAY within %v", s.id, wait)
		return nil
	}
}

// String says how the stream ended, for failure messages.
func (s *h2stream) String() string {
	switch {
	case s.wasReset:
		return fmt.Sprintf("reset (%v)", s.reset)
	case s.err != nil:
		return s.err.Error()
	}
	return fmt.Sprintf("%d %q", s.status, truncated(string(s.body)))
}

// refused reports whether the server reset the stream without a
// response (a connection that just ends is not a refusal).
func (s *h2stream) refused() bool { return s.status == 0 && s.wasReset }

func truncated(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// ---- A recording backend ----

// backend is an HTTP/1.1 server for the proxy to forward to. It keeps the
// head of every request as the bytes arrived, reads each body whole
// (Content-Length or chunked) before it answers "200 ok", and closes a
// connection whose request it cannot frame.
type backend struct {
	addr string
	// busy counts requests whose body the backend is still reading: each
	// holds one of the proxy's upstream connections.
	busy atomic.Int32
	// accepted counts the connections the proxy opened to it.
	accepted atomic.Int64

	mu    sync.Mutex
	reqs  []rawRequest
	conns map[net.Conn]struct{}
}

// rawRequest is a request head as the backend received it.
type rawRequest struct {
	line   string     // the request line, without CRLF
	fields []rawField // in order, names as sent
}

// rawField is a header field; values are cut to 1 KiB (memory_test sends
// big ones, and nothing here compares long values).
type rawField struct{ name, value string }

// values returns the fields whose name, read case-insensitively with "_"
// as "-", is name (lower case, with "-").
func (r rawRequest) values(name string) []rawField {
	var out []rawField
	for _, f := range r.fields {
		if normName(f.name) == name {
			out = append(out, f)
		}
	}
	return out
}

// host is the Host field's value; ok is false unless there is exactly one.
func (r rawRequest) host() (string, bool) {
	h := r.values("host")
	if len(h) != 1 {
		return "", false
	}
	return h[0].value, true
}

// normName is how a lenient backend reads a field name (CGI, WSGI, PHP,
// Rack turn both "-" and "_" into "_"): lower case, "_" as "-".
func normName(n string) string { return strings.ReplaceAll(strings.ToLower(n), "_", "-") }

// newBackend starts a backend; it and its connections close when the test
// ends.
func newBackend(t testing.TB) *backend {
	t.Helper()
	b := &backend{conns: map[net.Conn]struct{}{}}
	b.addr = testnet.RawServer(t, b.serve)
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for c := range b.conns {
			c.Close()
		}
	})
	return b
}

func (b *backend) serve(c net.Conn) {
	b.accepted.Add(1)
	b.mu.Lock()
	b.conns[c] = struct{}{}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.conns, c)
		b.mu.Unlock()
	}()
	br := bufio.NewReaderSize(c, 4096)
	for {
		req, err := readRawHead(br)
		if err != nil {
			return
		}
		b.mu.Lock()
		b.reqs = append(b.reqs, req)
		b.mu.Unlock()
		b.busy.Add(1)
		err = readRawBody(br, req)
		b.busy.Add(-1)
		if err != nil {
			return
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
			return
		}
	}
}

// requests returns the requests received so far.
func (b *backend) requests() []rawRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]rawRequest(nil), b.reqs...)
}

// since returns the requests received after the first n.
func (b *backend) since(n int) []rawRequest { return b.requests()[n:] }

// waitIdle waits until no request is waiting for its body: the attacks of
// one subtest have let go of the proxy's upstream connections.
func (b *backend) waitIdle(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for b.busy.Load() > 0 {
		if time.Now().After(deadline) {
			t.Errorf("backend: %d requests still waiting for their body %v after the attack ended", b.busy.Load(), wait)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readRawHead reads a request head without judging it.
func readRawHead(br *bufio.Reader) (rawRequest, error) {
	var r rawRequest
	for i := 0; ; i++ {
		line, err := readRawLine(br)
		if err != nil {
			return r, err
		}
		if i == 0 {
			r.line = line
			continue
		}
		if line == "" {
			return r, nil
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.Trim(value, " \t")
		if len(value) > 1024 {
			value = value[:1024]
		}
		r.fields = append(r.fields, rawField{name, value})
	}
}

// readRawLine reads a line of any length and drops its CRLF; a line
// longer than 1 KiB is cut there (its bytes are read, not kept).
func readRawLine(br *bufio.Reader) (string, error) {
	var keep []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(keep) < 1024 {
			keep = append(keep, frag[:min(len(frag), 1024-len(keep))]...)
		}
		if err == nil { // frag ends the line
			line := strings.TrimSuffix(string(keep), "\n")
			return strings.TrimSuffix(line, "\r"), nil
		}
		if err != bufio.ErrBufferFull {
			return "", err
		}
	}
}

// readRawBody reads the body the head announces and drops it.
func readRawBody(br *bufio.Reader, r rawRequest) error {
	for _, f := range r.fields {
		switch normName(f.name) {
		case "transfer-encoding":
			if _, err := io.Copy(io.Discard, httputil.NewChunkedReader(br)); err != nil {
				return err
			}
			for { // the trailer section
				line, err := readRawLine(br)
				if err != nil || line == "" {
					return err
				}
			}
		case "content-length":
			n, err := strconv.ParseInt(f.value, 10, 64)
			if err != nil {
				return err
			}
			if _, err := io.CopyN(io.Discard, br, n); err != nil {
				return err
			}
			return nil
		}
	}
	return nil
}

// ---- Metrics ----

// upstreamErrorsMetric is tunnelgate_upstream_requests_total for the
// backend cluster with result="error", read from the admin listener.
func upstreamErrorsMetric(t testing.TB, admin string) float64 {
	t.Helper()
	sum := 0.0
	for series, v := range scrapeMetrics(t, admin) {
		if strings.HasPrefix(series, "tunnelgate_upstream_requests_total{") &&
			strings.Contains(series, `cluster="backend"`) && strings.Contains(series, `result="error"`) {
			sum += v
		}
	}
	return sum
}

// scrapeMetrics reads admin's /metrics: each series (name and labels)
// with its value.
func scrapeMetrics(t testing.TB, admin string) map[string]float64 {
	t.Helper()
	c := http.Client{Timeout: wait}
	res, err := c.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatalf("scraping /metrics: %v", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("scraping /metrics: %d %v", res.StatusCode, err)
	}
	out := map[string]float64{}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics: %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}
