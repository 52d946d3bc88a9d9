package dataplane

import (
	"bufio"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testnet"
)

// End-to-end tests of WebSocket tunnels without a WebSocket library: the
// handshake is written and checked by hand (RFC 6455 §4), and after it the
// test exchanges raw bytes, which is all the proxy sees of frames anyway.

// wsGUID is RFC 6455's magic string for Sec-WebSocket-Accept.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// wsAccept is the Sec-WebSocket-Accept for a Sec-WebSocket-Key.
func wsAccept(key string) string {
	h := sha1.Sum([]byte(key + wsGUID))
	return base64.StdEncoding.EncodeToString(h[:])
}

// wsFinal is what the echo backend sends once the client has finished
// sending (it read EOF), before it closes.
const wsFinal = "<final>"

// wsBackend is a WebSocket server: it checks the handshake, answers 101,
// then echoes every byte until the client half-closes, then sends wsFinal
// and closes. sawEOF, if not nil, is told when the client's EOF arrived.
// With refuse set it answers 403 instead.
func wsBackend(refuse bool, sawEOF chan<- struct{}) http.HandlerFunc {
	return wsServer(refuse, sawEOF, nil)
}

// wsServer is wsBackend, or with push set, a server that only talks: it
// calls push with the connection after the handshake, then closes.
func wsServer(refuse bool, sawEOF chan<- struct{}, push func(net.Conn)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Sec-WebSocket-Key")
		var bad string
		switch {
		case !httpsyntax.HasToken(r.Header["Upgrade"], "websocket"):
			bad = "no Upgrade: websocket"
		case !httpsyntax.HasToken(r.Header["Connection"], "upgrade"):
			bad = "no Connection: upgrade"
		case r.Header.Get("Sec-WebSocket-Version") != "13":
			bad = "no Sec-WebSocket-Version: 13"
		case key == "":
			bad = "no Sec-WebSocket-Key"
		}
		if bad != "" {
			http.Error(w, "bad handshake: "+bad, http.StatusBadRequest)
			return
		}
		if refuse {
			http.Error(w, "not you", http.StatusForbidden)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer conn.Close()
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", wsAccept(key))
		if err := brw.Flush(); err != nil {
			return
		}
		if push != nil {
			push(conn)
			return
		}
		buf := make([]byte, 4096)
		for {
			n, err := brw.Read(buf)
			if n > 0 {
				if _, werr := conn.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					if sawEOF != nil {
						sawEOF <- struct{}{}
					}
					conn.Write([]byte(wsFinal))
				}
				return
			}
		}
	}
}

// wsConn is the client end of a tunnel through the proxy.
type wsConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

// wsHandshake writes the handshake as cloudflared passes it on and reads
// the answer head. For a 101 it checks Sec-WebSocket-Accept.
func wsHandshake(t *testing.T, addr, host string) (*wsConn, *http.Response) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	var raw [16]byte
	rand.Read(raw[:])
	key := base64.StdEncoding.EncodeToString(raw[:])
	fmt.Fprintf(nc, "GET /socket?room=1 HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\nOrigin: https://%s\r\n\r\n", host, key, host)
	br := bufio.NewReader(nc)
	req, _ := http.NewRequest("GET", "/socket?room=1", nil)
	res, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatalf("reading the handshake answer: %v", err)
	}
	if res.StatusCode == http.StatusSwitchingProtocols {
		if got, want := res.Header.Get("Sec-WebSocket-Accept"), wsAccept(key); got != want {
			t.Fatalf("Sec-WebSocket-Accept %q, want %q", got, want)
		}
		if !httpsyntax.HasToken(res.Header["Upgrade"], "websocket") || !httpsyntax.HasToken(res.Header["Connection"], "upgrade") {
			t.Fatalf("101 without Upgrade/Connection: %v", res.Header)
		}
	}
	return &wsConn{t: t, nc: nc, br: br}, res
}

// roundTrip sends msg and reads its echo.
func (c *wsConn) roundTrip(msg string) error {
	c.nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c.nc, msg); err != nil {
		return fmt.Errorf("sending %q: %w", msg, err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c.br, got); err != nil {
		return fmt.Errorf("reading the echo of %q: %w", msg, err)
	}
	if string(got) != msg {
		return fmt.Errorf("echo %q, want %q", got, msg)
	}
	return nil
}

// exchange sends several messages, some larger than one read, and
// checks their echoes.
func (c *wsConn) exchange() {
	c.t.Helper()
	for i, msg := range []string{"hello", strings.Repeat("x", 100_000), "\x81\x05frame", "bye"} {
		if err := c.roundTrip(msg); err != nil {
			c.t.Fatalf("message %d: %v", i, err)
		}
	}
}

// halfClose closes the client's sending side and expects wsFinal, then EOF.
func (c *wsConn) halfClose(sawEOF <-chan struct{}) {
	c.t.Helper()
	c.nc.SetDeadline(time.Now().Add(5 * time.Second))
	if err := c.nc.(*net.TCPConn).CloseWrite(); err != nil {
		c.t.Fatal(err)
	}
	select {
	case <-sawEOF:
	case <-time.After(5 * time.Second):
		c.t.Fatal("the backend did not see the client's half-close")
	}
	rest, err := io.ReadAll(c.br)
	if err != nil {
		c.t.Fatalf("reading after half-close: %v (got %q)", err, rest)
	}
	if string(rest) != wsFinal {
		c.t.Fatalf("after half-close got %q, want %q", rest, wsFinal)
	}
}

func TestWebSocketE2E(t *testing.T) {
	t.Parallel()
	sawEOF := make(chan struct{}, 1)
	be := startBackend(t, wsBackend(false, sawEOF))
	e := ptEnv(t, config([]proxycfg.Route{route("r", to("ws"))}, cluster("ws", be)))
	c, res := wsHandshake(t, e.bound.Origin, "chat.example.com")
	if res.StatusCode != 101 {
		t.Fatalf("handshake: status %d", res.StatusCode)
	}
	c.exchange()
	c.halfClose(sawEOF)
	if n := e.p.Stats().WebSockets.Load(); n != 1 {
		t.Errorf("WebSockets counter %d, want 1", n)
	}
}

// TestWebSocketE2ETLS is wss: the same backend behind a TLS cluster.
func TestWebSocketE2ETLS(t *testing.T) {
	t.Parallel()
	ca := ptCA(t, "ws CA")
	leaf := ptLeaf(t, ca, "ws", []string{"ws.internal"}, nil, x509.ExtKeyUsageServerAuth)
	sawEOF := make(chan struct{}, 1)
	be := ptTLSBackend(t, &tls.Config{Certificates: []tls.Certificate{leaf.tlsCert()}}, false, wsBackend(false, sawEOF))
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("h2=%v", h2), func(t *testing.T) {
			// An h2 cluster still carries the handshake over HTTP/1.1.
			e := ptEnv(t, config([]proxycfg.Route{route("r", to("ws"))},
				ptTLSCluster("ws", be, proxycfg.TLSSettings{SNI: "ws.internal", CAPEM: ca.certPEM(), H2: h2})))
			c, res := wsHandshake(t, e.bound.Origin, "chat.example.com")
			if res.StatusCode != 101 {
				t.Fatalf("handshake: status %d", res.StatusCode)
			}
			c.exchange()
			c.halfClose(sawEOF)
		})
	}
}

func TestWebSocketE2ERefused(t *testing.T) {
	t.Parallel()
	be := startBackend(t, wsBackend(true, nil))
	e := ptEnv(t, config([]proxycfg.Route{route("r", to("ws"))}, cluster("ws", be)))
	_, res := wsHandshake(t, e.bound.Origin, "chat.example.com")
	if res.StatusCode != 403 {
		t.Fatalf("handshake: status %d, want 403", res.StatusCode)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil || !strings.Contains(string(body), "not you") {
		t.Errorf("403 body %q, %v", body, err)
	}
	if httpsyntax.HasToken(res.Header["Upgrade"], "websocket") {
		t.Errorf("403 carries Upgrade: %v", res.Header)
	}
	if n := e.p.Stats().WebSockets.Load(); n != 0 {
		t.Errorf("WebSockets counter %d after a refused upgrade", n)
	}
}

// TestWebSocketE2EIdle checks Options.WebSocketIdle: a quiet tunnel is
// closed, one with traffic every third of the limit is not.
func TestWebSocketE2EIdle(t *testing.T) {
	t.Parallel()
	// Long enough that a busy machine (the race detector, packages tested
	// side by side on two cores) does not delay a tick of "every third of
	// the limit" past the limit: at 300 ms one did.
	const idle = time.Second
	be := startBackend(t, wsBackend(false, nil))
	e := ptEnv(t, config([]proxycfg.Route{route("r", to("ws"))}, cluster("ws", be)),
		func(o *Options) { o.WebSocketIdle = idle })

	t.Run("quiet", func(t *testing.T) {
		t.Parallel()
		c, res := wsHandshake(t, e.bound.Origin, "chat.example.com")
		if res.StatusCode != 101 {
			t.Fatalf("handshake: status %d", res.StatusCode)
		}
		if err := c.roundTrip("one"); err != nil {
			t.Fatal(err)
		}
		last := time.Now()
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := c.br.Read(make([]byte, 16))
		waited := time.Since(last)
		if n != 0 || !errors.Is(err, io.EOF) {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("an idle tunnel was still open after %v (idle limit %v)", waited, idle)
			}
			t.Fatalf("read %d bytes, %v; want EOF", n, err)
		}
		if waited < idle*2/3 {
			t.Errorf("closed after %v of quiet, before the %v limit", waited, idle)
		}
	})
	t.Run("backend talks, client silent", func(t *testing.T) {
		t.Parallel()
		// Traffic in one direction keeps the tunnel open: the quiet
		// direction's timer is renewed while the other one moves.
		const n = 10
		pe := ptEnv(t, config([]proxycfg.Route{route("r", to("ws"))}, cluster("ws", startBackend(t, wsServer(false, nil, func(c net.Conn) {
			tick := time.NewTicker(idle / 3)
			defer tick.Stop()
			for i := range n {
				<-tick.C
				if _, err := fmt.Fprintf(c, "push-%d;", i); err != nil {
					return
				}
			}
		})))), func(o *Options) { o.WebSocketIdle = idle })
		c, res := wsHandshake(t, pe.bound.Origin, "feed.example.com")
		if res.StatusCode != 101 {
			t.Fatalf("handshake: status %d", res.StatusCode)
		}
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		var want strings.Builder
		for i := range n {
			fmt.Fprintf(&want, "push-%d;", i)
		}
		got, err := io.ReadAll(c.br) // the backend closes after the last
		if string(got) != want.String() || err != nil {
			t.Fatalf("the client read %q, %v; want %q", got, err, want.String())
		}
	})
	t.Run("active", func(t *testing.T) {
		t.Parallel()
		c, res := wsHandshake(t, e.bound.Origin, "chat.example.com")
		if res.StatusCode != 101 {
			t.Fatalf("handshake: status %d", res.StatusCode)
		}
		tick := time.NewTicker(idle / 3)
		defer tick.Stop()
		end := time.Now().Add(time.Second)
		for i := 0; time.Now().Before(end); i++ {
			<-tick.C
			if err := c.roundTrip(fmt.Sprintf("tick-%d", i)); err != nil {
				t.Fatalf("an active tunnel: %v", err)
			}
		}
	})
}

// Bytes that come with a handshake, before the tunnel begins, go through
// first: a client's first frame sent in the same write as its handshake,
// and a server's first frame sent in the same write as its 101 answer.
// The proxy has read them with the heads; they must reach the other side
// before anything else.
func TestWebSocketE2EEarlyBytes(t *testing.T) {
	t.Parallel()
	const clientFirst, serverFirst = "client-first;", "server-first;"
	be := testnet.RawServer(t, func(c net.Conn) {
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n%s",
			wsAccept(req.Header.Get("Sec-WebSocket-Key")), serverFirst)
		io.Copy(c, br) // the echo
	})
	e := ptEnv(t, config([]proxycfg.Route{route("r", to("ws"))}, cluster("ws", be)))
	nc, err := net.Dial("tcp", e.bound.Origin)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	fmt.Fprintf(nc, "GET /socket HTTP/1.1\r\nHost: chat.example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n\r\n%s", key, clientFirst)
	br := bufio.NewReader(nc)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v, %v; want 101", res, err)
	}
	want := serverFirst + clientFirst // the server's frame, then the echo of the client's
	got := make([]byte, len(want))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != want {
		t.Fatalf("after the 101: %q, %v; want %q", got, err, want)
	}
}
