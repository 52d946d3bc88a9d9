// This file implements the upstream connection pool.

package http1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// Upstream buffer sizes. The reader is sized so one read takes a typical
// response whole; the writer holds a request head.
const (
	upReadBuf  = 8 << 10
	upWriteBuf = 4 << 10
)

// PoolSettings tune connection reuse toward each upstream endpoint.
type PoolSettings struct {
	// MaxIdle is the most idle connections kept per endpoint.
	MaxIdle int
	// IdleTimeout closes a connection idle for longer.
	IdleTimeout time.Duration
	// DialTimeout bounds connecting, TLS handshake included.
	DialTimeout time.Duration
	// MaxConns caps the connections open to one endpoint, busy and idle:
	// beyond it a request fails at once with ErrOverloaded instead of
	// piling onto an overloaded backend, and the proxy cannot run out of
	// file descriptors.
	MaxConns int
	// MaxConnsPerClient caps the connections to one endpoint that the
	// requests of one client hold at once, so that a few clients (slow
	// uploads, unread downloads) cannot take all MaxConns and starve the
	// others: beyond it a request fails with ErrClientOverloaded. Default
	// a quarter of MaxConns.
	MaxConnsPerClient int
	// MaxUploadConns caps the connections to one endpoint held by
	// requests whose body is still coming from the client: the backend
	// then waits on the client, at the client's pace, and slow clients
	// from any number of addresses could otherwise take every connection.
	// Beyond it such a request fails at once with ErrUploadsOverloaded;
	// the rest of MaxConns is left to requests that wait on nobody but
	// the backend. A connection leaves the share when its request body
	// has been sent. Default half of MaxConns.
	MaxUploadConns int
	// MaxUploadConnsPerClient caps one client's connections within
	// MaxUploadConns, so that a few clients cannot take the whole share.
	// Default a quarter of MaxUploadConns.
	MaxUploadConnsPerClient int
	// Shed, when set, is told the bytes of buffers a sweep let go of
	// (connections idle for a second or more drop theirs), once the
	// pool's lock is released: garbage the caller may want collected and
	// returned to the operating system.
	Shed func(bytes int)
}

// DefaultPoolSettings are the settings of a proxy that sets none.
var DefaultPoolSettings = PoolSettings{MaxIdle: 256, IdleTimeout: 90 * time.Second, DialTimeout: 10 * time.Second, MaxConns: 1024}

// OrDefaults returns s with its zero fields taken from
// DefaultPoolSettings.
func (s PoolSettings) OrDefaults() PoolSettings {
	d := DefaultPoolSettings
	if s.MaxIdle > 0 {
		d.MaxIdle = s.MaxIdle
	}
	if s.IdleTimeout > 0 {
		d.IdleTimeout = s.IdleTimeout
	}
	if s.DialTimeout > 0 {
		d.DialTimeout = s.DialTimeout
	}
	if s.MaxConns > 0 {
		d.MaxConns = s.MaxConns
	}
	d.MaxConnsPerClient = max(1, d.MaxConns/4)
	if s.MaxConnsPerClient > 0 {
		d.MaxConnsPerClient = min(s.MaxConnsPerClient, d.MaxConns)
	}
	d.MaxUploadConns = max(1, d.MaxConns/2)
	if s.MaxUploadConns > 0 {
		d.MaxUploadConns = min(s.MaxUploadConns, d.MaxConns)
	}
	d.MaxUploadConnsPerClient = max(1, d.MaxUploadConns/4)
	if s.MaxUploadConnsPerClient > 0 {
		d.MaxUploadConnsPerClient = min(s.MaxUploadConnsPerClient, d.MaxUploadConns)
	}
	return d
}

// Pool holds the idle connections to one endpoint address for one
// (protocol, TLS identity). Most recently used first: a warm connection is
// less likely to have been closed by the server's idle timer.
type Pool struct {
	addr     string
	tls      *tls.Config // nil for cleartext
	settings PoolSettings
	// explain adds advice to a failed TLS handshake.
	explain func(error) error

	mu   sync.Mutex
	idle []*Conn
	open int // connections open, busy or idle, and dials under way
	// held counts, by client, the connections that client's requests
	// hold (busy, or being dialled for it).
	held map[string]int
	// uploads counts the connections held by requests still sending their
	// body (Conn.upload), and uploading the same by client.
	uploads   int
	uploading map[string]int
	closed    bool
	// sweeping says a sweep is scheduled; sweeps counts them (see sweep).
	sweeping bool
	sweeps   uint64
}

// NewPool returns an empty pool of connections to addr (host:port), over
// TLS when tlsConf is set. explain, if set, rewrites a failed TLS
// handshake's error with advice for the user.
func NewPool(addr string, tlsConf *tls.Config, s PoolSettings, explain func(error) error) *Pool {
	return &Pool{addr: addr, tls: tlsConf, settings: s, explain: explain}
}

// Get returns an idle connection or dials a new one, for a request of
// client (its address; "" for the proxy's own requests, which no
// client's cap counts). upload says the request's body is still to come
// from the client (it is not in memory): the connection then counts in
// MaxUploadConns until Send has written the body. ctx bounds the dial.
// An idle connection is handed out only if it is quiet: one with
// anything to read, or closed by the server, is closed instead.
func (p *Pool) Get(ctx context.Context, client string, upload bool) (*Conn, error) {
	if c, err := p.takeIdle(client, upload, true); c != nil || err != nil {
		return c, err
	}
	return p.dialFor(ctx, client, upload)
}

// Idle is Get without the dial: an idle connection for a request of
// client, or nil when there is none (and then nothing is held for
// client). A caller that must do something before a dial (watch its
// client meanwhile) calls Idle, then Dial.
func (p *Pool) Idle(client string, upload bool) (*Conn, error) {
	return p.takeIdle(client, upload, false)
}

// takeIdle takes client's places (holdLocked) and an idle connection.
// With none idle it returns nil, and keeps the places for a dial when
// dialNext says one follows.
func (p *Pool) takeIdle(client string, upload, dialNext bool) (*Conn, error) {
	p.mu.Lock()
	if err := p.holdLocked(client, upload); err != nil {
		p.mu.Unlock()
		return nil, err
	}
	for n := len(p.idle); n > 0; n = len(p.idle) {
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		if c.quiet() { // the sweep closes those idle too long
			c.reused, c.client, c.upload = true, client, upload
			c.attach()
			return c, nil
		}
		c.Close()
		p.mu.Lock()
	}
	if !dialNext {
		p.release(client, upload)
	}
	p.mu.Unlock()
	return nil, nil
}

// ErrOverloaded is an endpoint at its connection cap.
var ErrOverloaded = errors.New("the backend endpoint has as many connections open as allowed (upstream-max-conns)")

// ErrClientOverloaded is a client holding as many of an endpoint's
// connections as one client may.
var ErrClientOverloaded = errors.New("this client holds as many connections to the backend endpoint as one client may (upstream-max-conns-per-client)")

// ErrUploadsOverloaded is an endpoint whose connections for requests
// still sending their body are all taken, or this client's part of them.
var ErrUploadsOverloaded = errors.New("the backend endpoint's connections for request bodies still arriving are taken, or as many as one client may have (upstream-max-upload-conns)")

// Dial dials a new connection for a request of client (see Get), within
// the caps: for a request that must not go on a pooled one.
func (p *Pool) Dial(ctx context.Context, client string, upload bool) (*Conn, error) {
	p.mu.Lock()
	err := p.holdLocked(client, upload)
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return p.dialFor(ctx, client, upload)
}

// holdLocked takes one of client's places, and with upload one of the
// upload share's, or fails at a cap. p.mu is held.
func (p *Pool) holdLocked(client string, upload bool) error {
	if client != "" && p.held[client] >= p.settings.MaxConnsPerClient {
		return ErrClientOverloaded
	}
	if upload {
		if p.uploads >= p.settings.MaxUploadConns ||
			(client != "" && p.uploading[client] >= p.settings.MaxUploadConnsPerClient) {
			return ErrUploadsOverloaded
		}
		p.uploads++
		if client != "" {
			if p.uploading == nil {
				p.uploading = map[string]int{}
			}
			p.uploading[client]++
		}
	}
	if client != "" {
		if p.held == nil {
			p.held = map[string]int{}
		}
		p.held[client]++
	}
	return nil
}

// release gives back the places holdLocked took, that of the upload
// share if upload. p.mu is held.
func (p *Pool) release(client string, upload bool) {
	if upload {
		p.uploads--
		decrement(p.uploading, client)
	}
	decrement(p.held, client)
}

// decrement counts one less for client in m, dropping it at zero.
func decrement(m map[string]int, client string) {
	if client == "" {
		return
	}
	if n := m[client] - 1; n > 0 {
		m[client] = n
	} else {
		delete(m, client)
	}
}

// dialFor dials within MaxConns for client, whose places are held.
func (p *Pool) dialFor(ctx context.Context, client string, upload bool) (*Conn, error) {
	p.mu.Lock()
	if p.open >= p.settings.MaxConns {
		p.release(client, upload)
		p.mu.Unlock()
		return nil, ErrOverloaded
	}
	p.open++ // the place is taken before dialling, so dials cannot overshoot
	p.mu.Unlock()
	c, err := p.dial(ctx)
	if err != nil {
		p.mu.Lock()
		p.open--
		p.release(client, upload)
		p.mu.Unlock()
		return nil, err
	}
	c.client, c.upload = client, upload
	return c, nil
}

// DialError is a failure to connect: nothing reached the upstream, so the
// request can go elsewhere.
type DialError struct{ Err error }

func (e *DialError) Error() string { return e.Err.Error() }
func (e *DialError) Unwrap() error { return e.Err }

func (p *Pool) dial(ctx context.Context) (*Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, p.settings.DialTimeout)
	defer cancel()
	d := net.Dialer{KeepAlive: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, &DialError{err}
	}
	if p.tls != nil {
		tc := tls.Client(nc, p.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			err = fmt.Errorf("TLS handshake with %s: %w", p.addr, err)
			if p.explain != nil {
				err = p.explain(err)
			}
			return nil, &DialError{err}
		}
		if proto := tc.ConnectionState().NegotiatedProtocol; proto != "" && proto != "http/1.1" {
			nc.Close()
			return nil, &DialError{fmt.Errorf("%s negotiated %q, want http/1.1", p.addr, proto)}
		}
		nc = tc
	}
	rw := newRawIO(nc)
	c := &Conn{nc: nc, rw: rw, pool: p, peek: socketPeek(nc)}
	c.held, _ = rw.(heldSender)
	c.attach()
	return c, nil
}

// An idle connection keeps its socket, not its buffers. One that has
// idled through a whole sweep drops its reader's and writer's buffers
// (shed: 12 KiB), and is given new ones when it is next handed out
// (attach). A proxy that has sent requests to thousands of endpoints so
// holds buffers for the connections in use, not for every one it keeps
// open; a busy connection keeps its own from one request to the next, at
// no cost. The buffers are dropped, not pooled: a pool would keep them
// alive through the next collection, where the point is to give the
// memory back (PoolSettings.Shed).

// shedBytes is what a connection's buffers weigh.
const shedBytes = upReadBuf + upWriteBuf

// attach gives a connection buffers, if it has shed them.
func (c *Conn) attach() {
	if c.br != nil {
		return
	}
	c.br = bufio.NewReaderSize(c.rw, upReadBuf)
	c.bw = bufio.NewWriterSize(c.rw, upWriteBuf)
}

// shed drops an idle connection's buffers and reports whether it had
// any: only for a connection in the pool's idle list, under its lock
// (nothing else can use it), with nothing buffered (quiet).
func (c *Conn) shed() bool {
	if c.br == nil {
		return false
	}
	c.br, c.bw = nil, nil
	return true
}

// socketPeek is the check of nc's socket (under TLS, the TCP socket), or
// nil for a connection that has no file descriptor.
func socketPeek(nc net.Conn) *peekQuiet {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return newPeekQuiet(rc)
}

// put returns a connection whose last exchange ended cleanly. Whoever set
// a deadline on it has cleared it.
func (p *Pool) put(c *Conn) {
	if c.br.Buffered() > 0 || !c.tlsDrained() || (c.held != nil && c.held.pendingWrite()) {
		// The server sent more than the response it owed: whatever it is,
		// it must not be read as the answer to the next request. (Or the
		// request never went out: its answer was not read.)
		c.Close()
		return
	}
	p.mu.Lock()
	c.idleSince = p.sweeps
	p.release(c.client, c.upload)
	c.client, c.upload = "", false
	if p.closed || c.broken.Load() || len(p.idle) >= p.settings.MaxIdle {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.idle = append(p.idle, c)
	if !p.sweeping {
		p.sweeping = true
		time.AfterFunc(sweepEvery, p.sweep)
	}
	p.mu.Unlock()
}

// sweepEvery is how often idle connections are looked at.
const sweepEvery = time.Second

// sweep closes idle connections past the idle timeout (to within a
// second: idle time is counted in sweeps, so putting a connection back
// reads no clock) and those that are no longer quiet: the server closed
// them, or sent something no request asked for. Those idle for a second
// or more shed their buffers. It runs every sweepEvery
// while the pool holds idle connections. The checks are made under the lock, which Get waits for:
// a few hundred non-blocking syscalls once a second.
func (p *Pool) sweep() {
	var dead []*Conn
	shed := 0
	p.mu.Lock()
	p.sweeps++
	// A connection put back since sweep n has been idle for less than
	// (sweeps - n) × sweepEvery: the idle timeout is kept to a second.
	maxAge := uint64(p.settings.IdleTimeout / sweepEvery)
	keep := p.idle[:0]
	for _, c := range p.idle {
		if p.sweeps-c.idleSince > maxAge || !c.quiet() {
			dead = append(dead, c)
			continue
		}
		if p.sweeps-c.idleSince >= 2 && c.shed() { // idle for a second at least
			shed += shedBytes
		}
		keep = append(keep, c)
	}
	clear(p.idle[len(keep):])
	p.idle = keep
	p.sweeping = len(p.idle) > 0 && !p.closed
	if p.sweeping {
		time.AfterFunc(sweepEvery, p.sweep)
	}
	p.mu.Unlock()
	for _, c := range dead {
		c.Close()
	}
	if shed > 0 && p.settings.Shed != nil {
		p.settings.Shed(shed)
	}
}

// Close closes idle connections and makes the busy ones close as they
// come back: the pool's endpoint left the config.
func (p *Pool) Close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, c := range idle {
		c.Close()
	}
}

// Counts returns the pooled connections and all open ones (busy, idle
// and being dialled), for metrics and tests.
func (p *Pool) Counts() (idle, open int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle), p.open
}

// Uploads returns the connections held by requests still sending their
// body (within MaxUploadConns), for metrics and tests.
func (p *Pool) Uploads() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.uploads
}
