//lint:file-ignore SA1019 x/net's HTTP/2 Transport is the client that runs over connections it did not dial, from a pool of our own, and retries the requests a GOAWAY says were not processed (RFC 9113, 8.7); net/http's ClientConn does neither.

package connector

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
)

// Tunnels is what the edge knows of an account's tunnels. test/cffake's
// Fake is one.
type Tunnels interface {
	// CheckTunnelToken says which tunnel a token names, or why it names none.
	CheckTunnelToken(token string) (accountID, tunnelID string, err error)
	// TunnelConfig returns the tunnel's configuration and its version; nil
	// and 0 when there is none.
	TunnelConfig(accountID, tunnelID string) (json.RawMessage, int)
}

// ConnectionLedger is what an edge tells its Tunnels of connectors, when
// they keep a ledger (test/cffake's Fake does: Cloudflare refuses to
// delete a tunnel with connections). A connector is recorded when it
// registers, and forgotten when the edge finds it gone.
type ConnectionLedger interface {
	Connect(accountID, tunnelID, clientID string) error
	Disconnect(accountID, tunnelID, clientID string)
}

// configPoll is how often the edge looks for a new configuration version.
const configPoll = 100 * time.Millisecond

// Resolver names the tunnel that serves a hostname, as Cloudflare's DNS
// does (test/cffake's Fake does, from its CNAME records).
type Resolver interface {
	ResolveTunnel(hostname string) (tunnelID string, ok bool)
}

// Edge accepts connectors' tunnel connections and sends visitors' requests
// through them. Every registered connector is taken to serve every
// hostname, unless RouteByDNS is set: then a request goes only to the
// connectors of the tunnel its hostname resolves to.
type Edge struct {
	tunnels  Tunnels
	ln       net.Listener
	log      *slog.Logger
	h2       *http2.Transport
	rays     atomic.Uint64
	resolver atomic.Pointer[Resolver]

	mu    sync.Mutex
	conns []*tunnelConn // registered, configured connections
	next  int           // round robin

	stop chan struct{}
	wg   sync.WaitGroup
}

// tunnelConn is one connector's registered connection.
type tunnelConn struct {
	name              string
	account, tunnelID string
	token             string // the token it registered with
	raw               net.Conn
	cc                *http2.ClientConn
	version           int // the configuration version last pushed; the poll loop's
}

// StartEdge listens for connectors on addr (host:port; port 0 picks one).
func StartEdge(addr string, tunnels Tunnels, log *slog.Logger) (*Edge, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Edge{tunnels: tunnels, ln: ln, log: log, stop: make(chan struct{})}
	e.h2 = &http2.Transport{AllowHTTP: true, ConnPool: edgePool{e}}
	e.wg.Add(2)
	go e.accept()
	go e.pushConfigs()
	return e, nil
}

// Addr is where connectors dial (their --edge flag).
func (e *Edge) Addr() string { return e.ln.Addr().String() }

// Client sends visitors' requests into the tunnel. Its URLs are
// http://<hostname>/<path>; nothing is dialed by name.
func (e *Edge) Client(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: visitorTransport{e},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// RouteByDNS makes the edge send each visitor's request only to the
// connectors of the tunnel r names for its hostname, as Cloudflare does
// with a hostname's CNAME; a hostname that names no tunnel reaches none
// (Cloudflare's error 1016).
func (e *Edge) RouteByDNS(r Resolver) { e.resolver.Store(&r) }

// ConnectorsOf names the registered connectors of one tunnel.
func (e *Edge) ConnectorsOf(tunnelID string) []string {
	return e.names(func(c *tunnelConn) bool { return c.tunnelID == tunnelID })
}

// Connectors names the registered connectors, in registration order.
func (e *Edge) Connectors() []string {
	return e.names(func(*tunnelConn) bool { return true })
}

// RegisteredWith names the registered connectors whose connection was
// registered with token.
func (e *Edge) RegisteredWith(token string) []string {
	return e.names(func(c *tunnelConn) bool { return c.token == token })
}

// Taking names the registered connectors that take new requests: not
// those whose GOAWAY reached the edge.
func (e *Edge) Taking() []string {
	return e.names(func(c *tunnelConn) bool { return c.cc.CanTakeNewRequest() })
}

// names names the registered connectors keep accepts, in registration
// order.
func (e *Edge) names(keep func(*tunnelConn) bool) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var names []string
	for _, c := range e.conns {
		if keep(c) {
			names = append(names, c.name)
		}
	}
	return names
}

// Close stops accepting connectors and closes their connections.
func (e *Edge) Close() error {
	close(e.stop)
	err := e.ln.Close()
	e.mu.Lock()
	for _, c := range e.conns {
		c.raw.Close()
	}
	e.conns = nil
	e.mu.Unlock()
	e.wg.Wait()
	return err
}

func (e *Edge) accept() {
	defer e.wg.Done()
	for {
		c, err := e.ln.Accept()
		if err != nil {
			return
		}
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			if err := e.register(c); err != nil {
				e.log.Info("connector refused", "remote", c.RemoteAddr(), "err", err)
				c.Close()
			}
		}()
	}
}

// register runs the handshake, pushes the configuration and adds the
// connection to those visitors' requests may take.
func (e *Edge) register(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	h, err := readHello(c)
	if err != nil {
		return err
	}
	account, tunnelID, err := e.tunnels.CheckTunnelToken(h.Token)
	if err != nil {
		_ = writeLine(c, "refused: "+err.Error())
		return fmt.Errorf("connector %q: %w", h.Connector, err)
	}
	if err := writeLine(c, answerOK); err != nil {
		return err
	}
	_ = c.SetDeadline(time.Time{})
	cc, err := e.h2.NewClientConn(c)
	if err != nil {
		return err
	}
	tc := &tunnelConn{name: h.Connector, account: account, tunnelID: tunnelID, token: h.Token, raw: c, cc: cc}
	if err := e.push(tc); err != nil {
		return fmt.Errorf("connector %q: first configuration: %w", h.Connector, err)
	}
	e.mu.Lock()
	e.conns = append(e.conns, tc)
	e.mu.Unlock()
	if l, ok := e.tunnels.(ConnectionLedger); ok {
		_ = l.Connect(account, tunnelID, h.Connector) // a tunnel deleted meanwhile: the connector serves nothing
	}
	e.log.Info("connector registered", "connector", h.Connector, "tunnel", tunnelID)
	return nil
}

// push sends the tunnel's configuration if its version is newer than the
// last one pushed.
func (e *Edge) push(tc *tunnelConn) error {
	cfg, version := e.tunnels.TunnelConfig(tc.account, tc.tunnelID)
	if version == 0 || version <= tc.version {
		return nil
	}
	body, err := json.Marshal(configPush{Version: version, Config: cfg})
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPut, "http://"+configHost+"/", bytes.NewReader(body))
	if err != nil {
		return err
	}
	res, err := tc.cc.RoundTrip(req)
	if err != nil {
		return err
	}
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		return fmt.Errorf("configuration %d refused: %s %s", version, res.Status, msg)
	}
	tc.version = version
	return nil
}

// pushConfigs pushes new configuration versions to every connection.
func (e *Edge) pushConfigs() {
	defer e.wg.Done()
	t := time.NewTicker(configPoll)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
		}
		e.mu.Lock()
		conns := slices.Clone(e.conns)
		e.mu.Unlock()
		for _, tc := range conns {
			if !tc.cc.CanTakeNewRequest() {
				continue
			}
			if err := e.push(tc); err != nil {
				e.log.Info("configuration push failed", "connector", tc.name, "err", err)
			}
		}
	}
}

// errNoConnector is a visitor's request with no connector to take it.
var errNoConnector = errors.New("connector: no connector of the tunnel can take a request (Cloudflare answers error 1033)")

// errNoTunnel is a visitor's hostname that names no tunnel.
var errNoTunnel = errors.New("connector: the hostname names no tunnel (Cloudflare answers error 1016)")

// edgePool hands the HTTP/2 Transport the registered connections, round
// robin, skipping those that take no new request (a GOAWAY came).
type edgePool struct{ e *Edge }

func (p edgePool) GetClientConn(req *http.Request, _ string) (*http2.ClientConn, error) {
	e := p.e
	tunnel := ""
	if r := e.resolver.Load(); r != nil {
		id, ok := (*r).ResolveTunnel(req.URL.Hostname())
		if !ok {
			return nil, fmt.Errorf("%w: %s", errNoTunnel, req.URL.Hostname())
		}
		tunnel = id
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.conns {
		tc := e.conns[(e.next+i)%len(e.conns)]
		if tunnel != "" && tc.tunnelID != tunnel {
			continue
		}
		if tc.cc.ReserveNewRequest() {
			e.next = (e.next + i + 1) % len(e.conns)
			return tc.cc, nil
		}
	}
	return nil, errNoConnector
}

func (p edgePool) MarkDead(cc *http2.ClientConn) {
	e := p.e
	e.mu.Lock()
	defer e.mu.Unlock()
	e.conns = slices.DeleteFunc(e.conns, func(tc *tunnelConn) bool {
		if tc.cc == cc {
			e.log.Info("connector gone", "connector", tc.name)
			if l, ok := e.tunnels.(ConnectionLedger); ok {
				l.Disconnect(tc.account, tc.tunnelID, tc.name)
			}
			return true
		}
		return false
	})
}

// visitorTransport adds what Cloudflare's edge adds to a proxied request,
// then sends it through a connector. A WebSocket handshake (Connection:
// Upgrade, Upgrade: websocket) goes as a stream marked with
// upgradeHeader whose body is what the visitor writes; a connector's 200
// for it becomes the visitor's 101, whose Body is an io.ReadWriteCloser.
type visitorTransport struct{ e *Edge }

func (t visitorTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if req.URL.Scheme != "http" {
		return nil, fmt.Errorf("connector: edge URLs are http://<hostname>/..., not %s", req.URL)
	}
	ws := httpguts.HeaderValuesContainsToken(req.Header["Connection"], "upgrade") &&
		httpguts.HeaderValuesContainsToken(req.Header["Upgrade"], "websocket")
	removeHopByHop(req.Header)
	const visitor = "203.0.113.7" // TEST-NET-3 (RFC 5737)
	ray := strconv.FormatUint(t.e.rays.Add(1), 16) + "-TEST"
	req.Header.Set("Cf-Connecting-Ip", visitor)
	req.Header.Set("Cf-Ray", ray)
	req.Header.Set("Cf-Visitor", `{"scheme":"https"}`)
	req.Header.Set("X-Forwarded-For", visitor)
	req.Header.Set("X-Forwarded-Proto", "https")
	if !ws {
		return t.e.roundTrip(req)
	}
	req.Header.Set(upgradeHeader, websocketUpgrade)
	pr, pw := io.Pipe()
	req.Body, req.ContentLength, req.GetBody = pr, -1, nil
	res, err := t.e.h2.RoundTrip(req)
	if err != nil || res.StatusCode != http.StatusOK {
		pw.Close()
		return res, err
	}
	res.Status, res.StatusCode = "101 Switching Protocols", http.StatusSwitchingProtocols
	res.Proto, res.ProtoMajor, res.ProtoMinor = "HTTP/1.1", 1, 1
	res.Header.Set("Connection", "Upgrade")
	res.Header.Set("Upgrade", "websocket")
	res.Body = &visitorSocket{ReadCloser: res.Body, w: pw}
	return res, nil
}

// roundTrip sends a request through a connector, and again through
// another while the one it took turns out to be going away before the
// request left (as the edge does for a connector that is shutting down).
//
// Go 1.27's x/net/http2 Transport runs over net/http's HTTP/2, whose
// errors for such a connection (a GOAWAY came, or it closed, between the
// pool's choice and the request) are net/http's own values, which the
// Transport does not recognise as its own retryable ones, so it gives them
// to the caller; they are known here by their text, all net/http exports of
// them. Only a request whose body can be sent again is retried.
func (e *Edge) roundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		res, err := e.h2.RoundTrip(req)
		if err == nil || attempt == maxUnsentRetries || !notSent(err) {
			return res, err
		}
		switch {
		case req.Body == nil || req.Body == http.NoBody:
		case req.GetBody != nil:
			body, gerr := req.GetBody()
			if gerr != nil {
				return nil, err
			}
			req.Body = body
		default:
			return nil, err
		}
	}
}

// maxUnsentRetries bounds the attempts of one request, as x/net's
// Transport bounds its own retries.
const maxUnsentRetries = 7

// notSent reports whether err is net/http's HTTP/2 client saying the
// request never left its connection: the connection took a GOAWAY or
// closed before it could be sent.
func notSent(err error) bool {
	switch err.Error() {
	case "http2: client conn not usable",
		"http2: Transport received Server's graceful shutdown GOAWAY":
		return true
	}
	return false
}

// visitorSocket is a visitor's end of a WebSocket through the tunnel: it
// reads what the origin sent and writes to the origin.
type visitorSocket struct {
	io.ReadCloser
	w *io.PipeWriter
}

func (s *visitorSocket) Write(p []byte) (int, error) { return s.w.Write(p) }

func (s *visitorSocket) Close() error {
	s.w.Close()
	return s.ReadCloser.Close()
}

// WebSocket opens a visitor's WebSocket to url (http://<hostname>/...)
// through the tunnel, as a browser does through Cloudflare: it sends the
// opening handshake (GET, Connection: Upgrade, Upgrade: websocket,
// Sec-WebSocket-Version: 13, a new Sec-WebSocket-Key, and header's fields)
// and returns the answer. A 101 has been checked for the key's
// Sec-WebSocket-Accept, and its Body is an io.ReadWriteCloser carrying the
// connection's bytes both ways (frames are the caller's), open until it
// is closed or ctx ends. Any other answer comes back as it came, for the
// caller to read and close.
func (e *Edge) WebSocket(ctx context.Context, url string, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	key := base64.StdEncoding.EncodeToString(raw[:])
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", key)
	res, err := visitorTransport{e}.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode == http.StatusSwitchingProtocols {
		if got, want := res.Header.Get("Sec-WebSocket-Accept"), WebSocketAccept(key); got != want {
			res.Body.Close()
			return nil, fmt.Errorf("connector: %s: Sec-WebSocket-Accept %q, want %q", url, got, want)
		}
	}
	return res, nil
}

// WebSocketAccept is the Sec-WebSocket-Accept a server answers for a
// Sec-WebSocket-Key (RFC 6455, section 4.2.2).
func WebSocketAccept(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}
