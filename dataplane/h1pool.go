package dataplane

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The HTTP/1.1 upstream client is our own rather than net/http's Transport.
// The Transport hands every request to two goroutines of its own (a reader
// and a writer per connection) and allocates a request clone, a response
// and a header map per exchange. Here the handler goroutine writes the
// request and reads the answer on a pooled connection itself, and header
// filters are applied while writing, so a proxied request costs a few
// syscalls and no goroutine hand-off. HTTP/2 upstreams (h2c, TLS with h2)
// still go through net/http's Transport; see h2.go.

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
	// beyond it a request fails at once with 503 (or is retried on another
	// endpoint) instead of piling onto an overloaded backend, and the
	// proxy cannot run out of file descriptors. Default 1024.
	MaxConns int
}

// defaultPoolSettings fill the zero fields of Options.Pool.
var defaultPoolSettings = PoolSettings{MaxIdle: 256, IdleTimeout: 90 * time.Second, DialTimeout: 10 * time.Second, MaxConns: 1024}

// h1Pool holds the idle connections to one endpoint address for one
// (protocol, TLS identity). Most recently used first: a warm connection is
// less likely to have been closed by the server's idle timer.
type h1Pool struct {
	addr     string
	tls      *tls.Config // nil for cleartext
	settings PoolSettings
	// explain adds advice to a failed TLS handshake (backendTLSError).
	explain func(error) error

	mu     sync.Mutex
	idle   []*upConn
	open   int // connections open, busy or idle, and dials under way
	closed bool
}

// upConn is one connection to an upstream with its buffers.
type upConn struct {
	nc     net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	pool   *h1Pool
	reused bool      // it served an exchange before this one
	broken bool      // a deadline was forced into the past: not reusable
	idleAt time.Time // when it went back to the pool
	done   atomic.Bool
}

// close closes the connection and gives its place back to the pool. It
// may be called more than once (a body writer and the response path can
// both give up on a connection).
func (c *upConn) close() {
	if c.done.Swap(true) {
		return
	}
	c.nc.Close()
	c.pool.mu.Lock()
	c.pool.open--
	c.pool.mu.Unlock()
}

func newH1Pool(addr string, tlsConf *tls.Config, s PoolSettings) *h1Pool {
	return &h1Pool{addr: addr, tls: tlsConf, settings: s}
}

// get returns an idle connection or dials a new one. ctx bounds the dial.
func (p *h1Pool) get(ctx context.Context) (*upConn, error) {
	now := time.Now()
	p.mu.Lock()
	for n := len(p.idle); n > 0; n = len(p.idle) {
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		if now.Sub(c.idleAt) < p.settings.IdleTimeout {
			p.mu.Unlock()
			c.reused = true
			return c, nil
		}
		p.mu.Unlock()
		c.close()
		p.mu.Lock()
	}
	p.mu.Unlock()
	return p.fresh(ctx)
}

// errOverloaded is an endpoint at its connection cap: the client gets 503.
var errOverloaded = errors.New("the backend endpoint has as many connections open as allowed (upstream-max-conns)")

// fresh dials a new connection, within the cap: when nothing idle is
// left, or for a request that must not go on a pooled one.
func (p *h1Pool) fresh(ctx context.Context) (*upConn, error) {
	p.mu.Lock()
	if p.open >= p.settings.MaxConns {
		p.mu.Unlock()
		return nil, errOverloaded
	}
	p.open++ // the place is taken before dialling, so dials cannot overshoot
	p.mu.Unlock()
	c, err := p.dial(ctx)
	if err != nil {
		p.mu.Lock()
		p.open--
		p.mu.Unlock()
	}
	return c, err
}

// errDial marks a failure to connect: nothing reached the upstream, so the
// request can go elsewhere and the client gets a 502.
type errDial struct{ err error }

func (e *errDial) Error() string { return e.err.Error() }
func (e *errDial) Unwrap() error { return e.err }

func (p *h1Pool) dial(ctx context.Context) (*upConn, error) {
	ctx, cancel := context.WithTimeout(ctx, p.settings.DialTimeout)
	defer cancel()
	d := net.Dialer{KeepAlive: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, &errDial{err}
	}
	if p.tls != nil {
		tc := tls.Client(nc, p.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			err = fmt.Errorf("TLS handshake with %s: %w", p.addr, err)
			if p.explain != nil {
				err = p.explain(err)
			}
			return nil, &errDial{err}
		}
		if proto := tc.ConnectionState().NegotiatedProtocol; proto != "" && proto != "http/1.1" {
			nc.Close()
			return nil, &errDial{fmt.Errorf("%s negotiated %q, want http/1.1", p.addr, proto)}
		}
		nc = tc
	}
	rw := newRawIO(nc)
	return &upConn{
		nc:   nc,
		br:   bufio.NewReaderSize(rw, upReadBuf),
		bw:   bufio.NewWriterSize(rw, upWriteBuf),
		pool: p,
	}, nil
}

// put returns a connection whose last exchange ended cleanly. Whoever set
// a deadline on it has cleared it.
func (p *h1Pool) put(c *upConn) {
	if c.br.Buffered() > 0 {
		// The server sent more than the response it owed: whatever it is,
		// it must not be read as the answer to the next request.
		c.close()
		return
	}
	c.idleAt = time.Now()
	p.mu.Lock()
	if p.closed || c.broken || len(p.idle) >= p.settings.MaxIdle {
		p.mu.Unlock()
		c.close()
		return
	}
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

// close closes idle connections and makes put close the busy ones as they
// come back: the pool's endpoint left the config.
func (p *h1Pool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
}

// idleCount is the number of pooled connections, for tests.
func (p *h1Pool) idleCount() int {
	idle, _ := p.counts()
	return idle
}

// counts returns the pooled connections and all open ones (busy, idle
// and being dialled), for metrics.
func (p *h1Pool) counts() (idle, open int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle), p.open
}

// errStale is a reused connection that the server had already closed: the
// request never reached it and may be sent again on a new connection.
var errStale = errors.New("upstream closed an idle connection")

// looksAlive checks, without blocking, that the server has not closed an
// idle connection: a peek at the socket finds neither data nor the end of
// the stream. It costs one syscall, so it is used only before sending a
// request that could not be sent again (its body is streamed, not kept).
// Backends often close idle connections sooner than the pool does
// (Node.js after 5 s), and a body sent into a closed connection is lost.
func (c *upConn) looksAlive() bool {
	if c.br.Buffered() > 0 {
		return false // an idle connection has nothing to say
	}
	nc := c.nc
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	alive := true
	var b [1]byte
	rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = n < 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
		return true // never wait
	})
	return alive
}
