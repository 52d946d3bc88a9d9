package connector

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testpki"
)

// oneHost is an ingress document sending host to service (with
// originRequest, a JSON object, when not ""), and the rest to a 404.
func oneHost(host, service, originRequest string) string {
	rq := ""
	if originRequest != "" {
		rq = `,"originRequest":` + originRequest
	}
	return fmt.Sprintf(`{"ingress":[{"hostname":%q,"service":%q%s},{"service":"http_status:404"}]}`, host, service, rq)
}

// serveTunnel runs an edge with doc as its tunnel's configuration and one
// connector mapping the document's paths with hostPath (nil: unchanged).
func serveTunnel(t *testing.T, doc string, hostPath func(string) string) (*Edge, *tunnels) {
	t.Helper()
	tun := &tunnels{}
	tun.set(doc)
	e := startEdge(t, tun)
	if hostPath == nil {
		hostPath = func(p string) string { return p }
	}
	startConnectorPaths(t, e, "c", goodToken, time.Second, hostPath)
	waitFor(t, "the connector registered", registered(e, "c"))
	return e, tun
}

// wsOrigin is a WebSocket server: it hands the handshake it got to
// handshakes, answers 101 (403 for the path /refuse), echoes every byte
// until the connection ends, then says so on closed.
type wsOrigin struct {
	handshakes chan *http.Request
	closed     chan struct{}
	requests   atomic.Int64
}

func newWSOrigin() *wsOrigin {
	return &wsOrigin{handshakes: make(chan *http.Request, 4), closed: make(chan struct{}, 4)}
}

func (o *wsOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.requests.Add(1)
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		fmt.Fprintf(w, "plain %s", r.URL.Path)
		return
	}
	o.handshakes <- r
	if r.URL.Path == "/refuse" {
		http.Error(w, "not you", http.StatusForbidden)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer func() { conn.Close(); o.closed <- struct{}{} }()
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		WebSocketAccept(r.Header.Get("Sec-WebSocket-Key")))
	if brw.Flush() != nil {
		return
	}
	_, _ = io.Copy(conn, brw)
}

// A visitor's WebSocket to an http:// service: the origin gets an HTTP/1.1
// handshake with the upgrade fields put back, the public Host and the
// edge's headers, answers 101, and bytes go both ways until the visitor
// closes, which closes the origin's connection. A refusal comes back as
// the origin's answer.
func TestWebSocketThroughHTTPOrigin(t *testing.T) {
	o := newWSOrigin()
	srv := httptest.NewServer(o)
	t.Cleanup(srv.Close)
	e, _ := serveTunnel(t, oneHost("ws.example.com", srv.URL, ""), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	res, err := e.WebSocket(ctx, "http://ws.example.com/chat?room=1", http.Header{"Origin": {"https://ws.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusSwitchingProtocols || !strings.EqualFold(res.Header.Get("Upgrade"), "websocket") {
		t.Fatalf("handshake: %s %v; want 101 with Upgrade: websocket", res.Status, res.Header)
	}
	hs := <-o.handshakes
	for k, want := range map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-Websocket-Version": "13",
		"Origin": "https://ws.example.com", "X-Forwarded-Proto": "https", "Cf-Visitor": `{"scheme":"https"}`} {
		if got := hs.Header.Get(k); got != want {
			t.Errorf("origin's handshake %s: %q, want %q", k, got, want)
		}
	}
	if hs.Proto != "HTTP/1.1" || hs.Host != "ws.example.com" || hs.URL.RequestURI() != "/chat?room=1" ||
		hs.Header.Get("Cf-Connecting-Ip") == "" || hs.Header.Get("Cf-Ray") == "" || hs.Header.Get(upgradeHeader) != "" {
		t.Errorf("origin's handshake: %s %s %s %v", hs.Proto, hs.Host, hs.URL, hs.Header)
	}
	conn := res.Body.(io.ReadWriteCloser)
	for _, msg := range []string{"hello", "and again, longer"} {
		if _, err := conn.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(conn, got); err != nil || string(got) != msg {
			t.Fatalf("echo of %q: %q, %v", msg, got, err)
		}
	}
	conn.Close()
	select {
	case <-o.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the origin's connection stayed open after the visitor closed")
	}

	res, err = e.WebSocket(ctx, "http://ws.example.com/refuse", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "not you") {
		t.Errorf("a refused handshake: %s %q; want the origin's 403", res.Status, b)
	}
}

// A WebSocket to a unix: service gets 502 from the connector before
// anything reaches the origin, as cloudflared answers
// (cloudflare/cloudflared#560); plain requests to it still go through.
func TestWebSocketToUnixServiceIs502(t *testing.T) {
	o := newWSOrigin()
	socket := filepath.Join(t.TempDir(), "ws.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: o}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	e, _ := serveTunnel(t, oneHost("ws.example.com", "unix:/run/ws.sock", ""),
		func(p string) string { return strings.Replace(p, "/run/ws.sock", socket, 1) })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	res, err := e.WebSocket(ctx, "http://ws.example.com/chat", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), "no Host in request URL") {
		t.Errorf("WebSocket to a unix: service: %s %q; want 502, no Host in request URL", res.Status, b)
	}
	if n := o.requests.Load(); n != 0 {
		t.Errorf("the origin got %d requests; want none", n)
	}
	code, body, err := get(e.Client(5*time.Second), "http://ws.example.com/page")
	if err != nil || code != 200 || body != "plain /page" {
		t.Errorf("a plain request to the same service: %d %q %v", code, body, err)
	}
}

// A server-sent event stream reaches the visitor event by event: the
// origin sends the next event only once the visitor has read the last, so
// a connector or edge that held the answer back would see the origin give
// up instead. Over http:// and unix: services alike.
func TestSSEStreamsEventByEvent(t *testing.T) {
	next := make(chan struct{})
	sse := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := 1; i <= 3; i++ {
			fmt.Fprintf(w, "data: %d\n\n", i)
			if rc.Flush() != nil {
				return
			}
			if i == 3 {
				return
			}
			select {
			case <-next:
			case <-time.After(5 * time.Second):
				fmt.Fprint(w, "data: the visitor never read the last event\n\n")
				return
			}
		}
	})
	srv := httptest.NewServer(sse)
	t.Cleanup(srv.Close)
	socket := filepath.Join(t.TempDir(), "sse.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	us := &http.Server{Handler: sse}
	go func() { _ = us.Serve(ln) }()
	t.Cleanup(func() { us.Close() })

	for service, hostPath := range map[string]func(string) string{
		srv.URL:              nil,
		"unix:/run/sse.sock": func(p string) string { return strings.Replace(p, "/run/sse.sock", socket, 1) },
	} {
		t.Run(strings.SplitN(service, ":", 2)[0], func(t *testing.T) {
			e, _ := serveTunnel(t, oneHost("sse.example.com", service, ""), hostPath)
			res, err := e.Client(20 * time.Second).Get("http://sse.example.com/events")
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			br := bufio.NewReader(res.Body)
			for i := 1; i <= 3; i++ {
				line, err := br.ReadString('\n')
				if want := fmt.Sprintf("data: %d\n", i); line != want || err != nil {
					t.Fatalf("event %d: %q, %v; want %q", i, line, err, want)
				}
				if _, err := br.ReadString('\n'); err != nil {
					t.Fatal(err)
				}
				if i < 3 {
					select {
					case next <- struct{}{}:
					case <-time.After(5 * time.Second):
						t.Fatalf("event %d reached the visitor only once the origin gave up waiting for it to be read: the answer was held back", i)
					}
				}
			}
			if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
				t.Errorf("after the last event: %q, %v", rest, err)
			}
		})
	}
}

// grpcFrame is one gRPC message: not compressed, a 4-byte length, the
// message.
func grpcFrame(msg string) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// grpcOrigin answers a gRPC-shaped call with "echo:" and the message, the
// protocol it came over in X-Origin-Proto, and the status in trailers,
// two declared and one not.
var grpcOrigin = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Origin-Proto", r.Proto)
	h.Set("Content-Type", "application/grpc")
	h.Set("Trailer", "Grpc-Status, Grpc-Message")
	var head [5]byte
	if _, err := io.ReadFull(r.Body, head[:]); err != nil {
		h.Set("Grpc-Status", "3")
		return
	}
	msg := make([]byte, binary.BigEndian.Uint32(head[1:]))
	if _, err := io.ReadFull(r.Body, msg); err != nil {
		h.Set("Grpc-Status", "3")
		return
	}
	_, _ = w.Write(grpcFrame("echo:" + string(msg)))
	h.Set("Grpc-Status", "0")
	h.Set("Grpc-Message", "te="+r.Header.Get("Te"))
	h.Set(http.TrailerPrefix+"X-Late", "undeclared")
})

// A gRPC call to an https:// service: with http2Origin the connector
// speaks HTTP/2 to the origin over TLS, verifying it with the caPool's CA
// for originServerName, and the answer's trailers reach the visitor.
// Without http2Origin the origin gets HTTP/1.1; a certificate for another
// name, or from a CA the caPool does not hold, gets 502.
func TestGRPCThroughHTTPSOrigin(t *testing.T) {
	ca := testpki.NewCA(t, "origin CA")
	certPEM, keyPEM := ca.IssueServer(t, "origin.test.internal")
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	other := testpki.NewCA(t, "another CA")
	for name, pem := range map[string][]byte{"ca.crt": ca.PEM, "other.crt": other.PEM} {
		if err := os.WriteFile(filepath.Join(dir, name), pem, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewUnstartedServer(grpcOrigin)
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	hostPath := func(p string) string { return strings.Replace(p, "/etc/origin-ca", dir, 1) }

	for _, c := range []struct {
		name, originRequest string
		wantProto           string // "" wants 502
	}{
		{"http2Origin", `{"http2Origin":true,"originServerName":"origin.test.internal","caPool":"/etc/origin-ca/ca.crt"}`, "HTTP/2.0"},
		{"without http2Origin", `{"originServerName":"origin.test.internal","caPool":"/etc/origin-ca/ca.crt"}`, "HTTP/1.1"},
		{"another server name", `{"http2Origin":true,"originServerName":"other.test.internal","caPool":"/etc/origin-ca/ca.crt"}`, ""},
		{"another CA", `{"http2Origin":true,"originServerName":"origin.test.internal","caPool":"/etc/origin-ca/other.crt"}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, _ := serveTunnel(t, oneHost("grpc.example.com", srv.URL, c.originRequest), hostPath)
			req, _ := http.NewRequest("POST", "http://grpc.example.com/test.Echo/Say", strings.NewReader(string(grpcFrame("hi"))))
			req.Header.Set("Content-Type", "application/grpc")
			req.Header.Set("Te", "trailers")
			res, err := e.Client(10 * time.Second).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			if c.wantProto == "" {
				if res.StatusCode != http.StatusBadGateway {
					t.Errorf("%s %q; want 502", res.Status, body)
				}
				return
			}
			if res.StatusCode != 200 || string(body) != string(grpcFrame("echo:hi")) || res.Header.Get("X-Origin-Proto") != c.wantProto {
				t.Errorf("%s over %s: %q; want 200 over %s, echo:hi", res.Status, res.Header.Get("X-Origin-Proto"), body, c.wantProto)
			}
			for k, want := range map[string]string{"Grpc-Status": "0", "Grpc-Message": "te=trailers", "X-Late": "undeclared"} {
				if got := res.Trailer.Get(k); got != want {
					t.Errorf("trailer %s: %q, want %q (trailers %v)", k, got, want, res.Trailer)
				}
			}
		})
	}
}

// The originRequest fields the stand-in does not model refuse the
// document, and so does a caPool it cannot read.
func TestOriginRequestNotModeledIsRefused(t *testing.T) {
	same := func(p string) string { return p }
	for doc, want := range map[string]string{
		oneHost("a.example.com", "https://localhost:8443", `{"noTLSVerify":true}`):                                           "noTLSVerify",
		oneHost("a.example.com", "https://localhost:8443", `{"caPool":"/nonexistent/ca.crt"}`):                               "caPool",
		oneHost("a.example.com", "http://localhost:8080", `{"http2Origin":true,"connectTimeout":30}`):                        "connectTimeout",
		oneHost("a.example.com", "tcp://localhost:20000", `{"access":{"required":true,"audTag":["a"]}}`):                     "teamName",
		oneHost("a.example.com", "tcp://localhost:20000", `{"access":{"required":true,"teamName":"t","environment":"fed"}}`): "environment",
	} {
		_, err := parseIngress([]byte(doc), same, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want an error naming %s", doc, err, want)
		}
	}
	if _, err := parseIngress([]byte(oneHost("a.example.com", "https://localhost:8443", `{"http2Origin":true,"originServerName":"x"}`)), same, nil); err != nil {
		t.Errorf("the fields the controller writes: %v", err)
	}
}
