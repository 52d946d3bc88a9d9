// This file implements the stream sockets: opening them as configs come, and relaying each connection to a backend.

package dataplane

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	relay "github.com/tunnelgate/tunnelgate/dataplane/pipe"
	"github.com/tunnelgate/tunnelgate/dataplane/sni"
)

// Stream sockets relay connections whole, for stream routes (stream.go).
// While Serve runs the proxy opens, as configs come and go:
//
//   - for each socket of its own (gateways.go) of TCP or TLS listeners,
//     when it serves sockets of their own, a plain TCP socket there;
//   - for each stream route with an OriginPort, a socket at that port on
//     loopback (the plain origin listener's host when that is a loopback
//     address, else 127.0.0.1), where cloudflared, beside the proxy, sends
//     the route's streams. Never on another address: Cloudflare Access
//     on a stream is checked by cloudflared alone (a raw stream carries
//     no token the proxy can read), so an origin port reachable from
//     elsewhere would let a client past it.
//
// Each connection is given its route from the config current when it
// arrives: an origin port's route; a TCP socket's route; on a TLS socket
// the route its ClientHello's server name chooses (read within
// StreamOptions.HandshakeTimeout, then replayed to the backend whole).
// Where the proxy terminates (a TLS socket whose listeners carry
// certificates, the origin port of a TLSRoute on such listeners), the
// whole handshake completes within StreamOptions.HandshakeTimeout, with
// the certificate the server name chooses, the route is chosen by that
// name, and the plaintext is relayed: to the backend over TLS when its
// cluster has TLS settings (re-encryption, within
// StreamOptions.ConnectTimeout), else as it comes.
// A backend is chosen by weight (a backend with a Status refuses the
// connection), then an endpoint of its cluster, from the cluster's
// endpoints at that moment, in turn; an endpoint that does not answer
// within StreamOptions.ConnectTimeout gives way to the next, at most
// three in all. The bytes are then relayed (package pipe) until either
// side ends, within the idle and half-close bounds.
//
// A connection over the cap (StreamOptions.MaxStreams) is closed at
// once. A config that no longer has a route (by identity) closes the
// route's connections; a route edited keeps them. At shutdown the
// sockets close, and the connections run on for the grace period, then
// are cut (streamlive.go).

// StreamOptions tune the relaying of stream routes. Zero fields take
// their defaults.
type StreamOptions struct {
	// HandshakeTimeout bounds the wait for a TLS listener's client's
	// whole ClientHello, or whole handshake where the proxy terminates;
	// default 10 s.
	HandshakeTimeout time.Duration
	// ConnectTimeout bounds a connection to one endpoint; default 10 s.
	ConnectTimeout time.Duration
	// Idle closes a stream with no byte moving either way for this long;
	// default one hour.
	Idle time.Duration
	// HalfClose closes a stream one side of which ended this long ago
	// while the other goes on; default 30 s.
	HalfClose time.Duration
	// MaxStreams bounds the connections the stream sockets hold at once;
	// default 10,000.
	MaxStreams int
}

// Stream defaults.
const (
	DefaultStreamConnectTimeout = 10 * time.Second
	DefaultMaxStreams           = 10000
	// streamDialTries bounds the endpoints a connection tries.
	streamDialTries = 3
	// helloBuffer is what a ClientHello is read into first: nearly
	// every hello fits.
	helloBuffer = 2 << 10
)

// DefaultStreamOptions are the defaults of StreamOptions' zero fields.
func DefaultStreamOptions() StreamOptions { return StreamOptions{}.withDefaults() }

func (o StreamOptions) withDefaults() StreamOptions {
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = sni.DefaultTimeout
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultStreamConnectTimeout
	}
	if o.Idle <= 0 {
		o.Idle = relay.DefaultIdle
	}
	if o.HalfClose <= 0 {
		o.HalfClose = relay.DefaultHalfClose
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = DefaultMaxStreams
	}
	return o
}

// streamAddr is a stream socket's address: a socket of its own, or an
// origin port.
type streamAddr struct {
	gatewayAddr
	origin bool
}

// streamServers keeps the stream sockets of the current config while
// Serve runs.
type streamServers struct {
	p    *Proxy
	opts StreamOptions
	// gateways: the proxy serves sockets of their own.
	gateways bool
	// originHost is where origin ports open; originOK is false when the
	// proxy has no origin listener.
	originHost netip.Addr
	originOK   bool
	live       *liveStreams

	mu      sync.Mutex
	sockets map[streamAddr]net.Listener
	closed  bool
}

// originHostOf is the host origin ports open on, for an origin listener's
// address ("host:port" or "unix:/path"): its host when that is a
// loopback address, else 127.0.0.1 (a unix socket, a name, an address
// others reach, or every local address).
func originHostOf(addr string) netip.Addr {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		if a, err := netip.ParseAddr(host); err == nil && a.Zone() == "" && a.Unmap().IsLoopback() {
			return a.Unmap()
		}
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}

// sync opens the stream sockets the config cc has and this does not,
// closes those it no longer has, and cuts the connections of routes cc
// no longer has. A socket that cannot be opened is logged and tried
// again at the next config. p.mu is held.
func (s *streamServers) sync(cc *compiledConfig) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || cc == nil {
		return
	}
	want := map[streamAddr]bool{}
	if s.gateways {
		for e := range cc.streams.sockets {
			want[streamAddr{gatewayAddr: e}] = true
		}
	}
	if s.originOK {
		for port := range cc.streams.origin {
			want[streamAddr{gatewayAddr{s.originHost, port}, true}] = true
		}
	}
	for at, ln := range s.sockets {
		if !want[at] {
			ln.Close()
			delete(s.sockets, at)
		}
	}
	for at := range want {
		if s.sockets[at] != nil {
			continue
		}
		ln, err := net.Listen("tcp", at.String())
		if err != nil {
			s.p.opts.Log.Error("cannot open a stream socket; retrying at the next config", "address", at.String(), "origin", at.origin, "err", err)
			continue
		}
		s.p.opts.Log.Info("serving a stream socket", "address", at.String(), "origin", at.origin)
		s.sockets[at] = ln
		go s.accept(ln, at)
	}
	s.live.cut(func(r *streamRoute) bool { return cc.streams.routes[r.id] == nil })
}

// accept serves ln's connections until ln is closed. Another error (out
// of file descriptors) is waited out, as net/http's servers do, from 5 ms
// doubling up to a second.
func (s *streamServers) accept(ln net.Listener, at streamAddr) {
	var wait time.Duration
	for {
		c, err := ln.Accept()
		switch {
		case errors.Is(err, net.ErrClosed):
			return
		case err != nil:
			wait = min(max(2*wait, 5*time.Millisecond), time.Second)
			s.p.opts.Log.Warn("stream socket: accept failed; waiting", "address", at.String(), "err", err, "wait", wait)
			time.Sleep(wait)
			continue
		}
		wait = 0
		go s.serveConn(c, at)
	}
}

// serveConn relays one connection, or closes it: over the cap, without
// a route, refused, or when no endpoint answers.
func (s *streamServers) serveConn(c net.Conn, at streamAddr) {
	defer c.Close()
	ctx, done, a := s.live.admit()
	if a != admitted {
		if a == overLimit {
			s.p.stats.Streams[observe.StreamOverLimit].Add(1)
		}
		return
	}
	defer done()
	conn := streamConn{client: c, at: at, start: time.Now()}
	if !s.route(ctx, &conn) {
		return
	}
	ctx, leave, ok := s.live.hold(ctx, conn.route)
	if !ok {
		return // cut while its route was chosen
	}
	defer leave()
	if s.p.current.Load().streams.routes[conn.route.id] == nil {
		return // the route went before the connection was held
	}
	s.relay(ctx, &conn)
}

// streamConn is one connection as it goes through.
type streamConn struct {
	client net.Conn
	at     streamAddr
	start  time.Time
	route  *streamRoute
	// hello is a TLS socket's ClientHello, and what was read with it,
	// to replay; serverName what it names.
	hello      []byte
	serverName string
	// terminated: client is the plaintext of a TLS connection the proxy
	// terminated.
	terminated bool
}

// route finds conn's route in the current config; false, counted, when
// it has none.
func (s *streamServers) route(ctx context.Context, conn *streamConn) bool {
	cc := s.p.current.Load()
	if conn.at.origin {
		conn.route = cc.streams.origin[conn.at.port]
		if conn.route != nil && conn.route.terminate != nil && !s.terminate(ctx, conn, conn.route.terminate) {
			return false
		}
	} else if sock := cc.streams.sockets[conn.at.gatewayAddr]; sock != nil && !sock.tls {
		conn.route = sock.tcp
	} else if sock != nil && sock.terminate != nil {
		if !s.terminate(ctx, conn, sock.terminate) {
			return false
		}
		conn.route = sock.route(conn.serverName)
	} else if sock != nil {
		stop := context.AfterFunc(ctx, func() { conn.client.SetReadDeadline(time.Now()) })
		hello, raw, err := sni.ReadConn(conn.client, make([]byte, 0, helloBuffer), sni.Limits{Timeout: s.opts.HandshakeTimeout})
		stop()
		if err != nil {
			s.p.stats.Streams[observe.StreamHandshakeFailed].Add(1)
			s.p.opts.Log.Debug("stream: no ClientHello", "address", conn.at.String(), "client", conn.client.RemoteAddr().String(), "err", err)
			return false
		}
		conn.hello, conn.serverName = raw, hello.ServerName
		conn.route = sock.route(hello.ServerName)
	}
	if conn.route == nil {
		s.p.stats.Streams[observe.StreamNoRoute].Add(1)
		return false
	}
	return true
}

// terminate completes the TLS handshake with conn's client within
// HandshakeTimeout, with conf, and makes conn's client its plaintext;
// false, counted, when it fails.
func (s *streamServers) terminate(ctx context.Context, conn *streamConn, conf *tls.Config) bool {
	hctx, cancel := context.WithTimeout(ctx, s.opts.HandshakeTimeout)
	defer cancel()
	tc := tls.Server(conn.client, conf)
	if err := tc.HandshakeContext(hctx); err != nil {
		s.p.stats.Streams[observe.StreamHandshakeFailed].Add(1)
		s.p.opts.Log.Debug("stream: TLS handshake failed", "address", conn.at.String(), "client", conn.client.RemoteAddr().String(), "err", err)
		return false
	}
	conn.client, conn.serverName, conn.terminated = tc, tc.ConnectionState().ServerName, true
	return true
}

// relay chooses conn's backend and endpoint and relays the bytes.
func (s *streamServers) relay(ctx context.Context, conn *streamConn) {
	r := conn.route
	b, ok := r.pick()
	if !ok || b.slot == nil {
		s.count(r, nil, observe.StreamRefused)
		return
	}
	backend, addr, err := s.dial(ctx, b.slot, conn.terminated)
	if err != nil {
		s.count(r, b.slot, observe.StreamDialFailed)
		s.p.logUpstream(b.slot.name, addr, 0, err)
		return
	}
	s.count(r, b.slot, observe.StreamRelayed)
	r.stats.Start()
	b.slot.stream.Start()
	res := relay.Run(ctx, conn.client, backend, relay.Options{Idle: s.opts.Idle, HalfClose: s.opts.HalfClose, Preface: conn.hello})
	r.stats.End(res)
	b.slot.stream.End(res)
	s.p.logStream(conn, b.slot.name, addr, &res)
}

// count counts a connection's outcome proxy-wide, for its route and, when
// one was chosen, for its cluster.
func (s *streamServers) count(r *streamRoute, slot *clusterSlot, o observe.StreamOutcome) {
	s.p.stats.Streams[o].Add(1)
	r.stats.Outcome(o)
	if slot != nil {
		slot.stream.Outcome(o)
	}
}

// dial connects to an endpoint of slot's cluster as it is now, taking
// them in turn: when one does not answer, the next, at most
// streamDialTries in all; over TLS when the connection was terminated
// and the cluster has TLS settings (a failed handshake is not retried
// elsewhere: the settings are the cluster's). It returns the endpoint's
// address (the last tried, on failure).
func (s *streamServers) dial(ctx context.Context, slot *clusterSlot, terminated bool) (net.Conn, string, error) {
	cs := slot.state.Load()
	if cs == nil || len(cs.addrs) == 0 {
		return nil, "", errors.New("cluster " + strconv.Quote(slot.name) + " has no endpoints")
	}
	eps := cs.endpoints()
	first := int(slot.streamNext.Add(1) - 1)
	d := net.Dialer{Timeout: s.opts.ConnectTimeout}
	var err error
	var addr string
	for i := range min(streamDialTries, len(eps)) {
		addr = eps[(first+i)%len(eps)].addr
		var c net.Conn
		if c, err = d.DialContext(ctx, "tcp", addr); err != nil {
			continue
		}
		if !terminated || cs.t.tls == nil {
			return c, addr, nil
		}
		hctx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
		tc := tls.Client(c, cs.t.tls)
		err = tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			c.Close()
			if cs.t.explain != nil {
				err = cs.t.explain(err)
			}
			return nil, addr, err
		}
		return tc, addr, nil
	}
	return nil, addr, err
}

// close closes the sockets, lets the connections run on for grace, then
// cuts those left and waits for them to end.
func (s *streamServers) close(grace time.Duration) {
	s.mu.Lock()
	s.closed = true
	for at, ln := range s.sockets {
		ln.Close()
		delete(s.sockets, at)
	}
	s.mu.Unlock()
	s.live.drain(grace)
}

// logStream writes conn's access log line, when the access log is on
// and samples it.
func (p *Proxy) logStream(conn *streamConn, cluster, endpoint string, res *relay.Result) {
	al := p.opts.AccessLog
	if al == nil || !al.Sampled() {
		return
	}
	client, _, _ := net.SplitHostPort(conn.client.RemoteAddr().String())
	al.WriteStream(&observe.StreamLine{
		Start: conn.start, ClientIP: client, Kind: string(conn.route.id.Kind), Route: conn.route.name,
		SNI: conn.serverName, Backend: cluster, Endpoint: endpoint, Result: *res,
	})
}
