// This file implements the Server.

package http1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Server serves HTTP/1.1 on kept-alive connections with a handler, as
// net/http's server does, but reusing one request, header map and
// response writer per connection: a request costs two allocations (its
// header values) and one goroutine for the connection's life. Timers are
// not armed per request either: a janitor looks at every connection once
// a second (see janitor).
//
// What it does not do that net/http does: HTTP/2, TLS, and informational
// responses other than 100 Continue.
type Server struct {
	// Handler serves every request. Its http.ResponseWriter is a
	// *ResponseWriter.
	Handler http.Handler
	// Log receives panics recovered from the handler.
	Log Logger
	// HeadTimeout closes a connection that takes longer to send a request
	// head (slowloris); IdleTimeout one idle for longer between requests.
	// Zero is no limit.
	HeadTimeout, IdleTimeout time.Duration
	// BodyTimeout bounds a wait for the client's request body to move:
	// a read that gets nothing for this long fails with a timeout (the
	// handler can still answer 408), and the connection closes after.
	// WriteTimeout bounds a write to a client that does not read: the
	// connection is closed. Both are inactivity limits, as nginx's
	// client_body_timeout and send_timeout: a slow but steady upload or
	// download is never cut. Zero is no limit.
	BodyTimeout, WriteTimeout time.Duration

	mu      sync.Mutex
	conns   map[*conn]struct{}
	ln      net.Listener
	closing atomic.Bool
	wg      sync.WaitGroup
	date    atomic.Pointer[dateText]
	// ended ends the requests' context: at Close, or once every
	// connection is done after Serve returned. A graceful Shutdown lets
	// the requests in flight run on (a dial, a backend's answer), as
	// net/http's does; only Close cuts them.
	ended context.CancelFunc
}

// Logger is where a Server reports what goes wrong inside it.
type Logger interface {
	Error(msg string, args ...any)
}

// conn is one client connection and everything reused across its
// requests.
type conn struct {
	s    *Server
	nc   net.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
	q    requestHead
	req  http.Request
	body requestBody
	resp ResponseWriter
	// watch is the client watch while the handler waits (waiton.go).
	watch watch
	// raw is the client socket's raw calls, nil where there are none;
	// inReadFn and inRead serve requests inside one read of it
	// (inread.go).
	raw      *rawIO
	inReadFn func(fd uintptr) bool
	inRead   inRead
	// phase and seq let the janitor close idle and slow connections
	// without a timer, or even a clock read, per request: phase is what
	// the connection waits for, and seq counts phase changes. The janitor
	// notes when it first saw the current seq (seenSeq, seenAt: its own).
	phase   atomic.Int32
	seq     atomic.Uint32
	seenSeq uint32
	seenAt  int64
	// peekedSeq is the janitor's too: the idle period whose socket it
	// looked at.
	peekedSeq uint32
	// A write that goes out with what is buffered (write): tail is what
	// the writer's flush sends after the buffered bytes, tailN how much
	// of it went; vec makes the vectored write (writev.go).
	tail  []byte
	tailN int
	vec   vecWriter
}

const (
	phaseIdle    = iota // between requests
	phaseHead           // reading a request head
	phaseBusy           // in the handler, waiting on nothing from the client
	phaseBody           // reading the request body
	phaseWrite          // writing to the client
	phaseWait           // in the handler, which waits on a backend (WaitOn)
	phaseClosing        // shutting down, or handed over (hijacked)
)

func (c *conn) setPhase(p int32) {
	c.phase.Store(p)
	c.seq.Add(1)
}

// serve runs the connection's request loop. Where the client's socket
// takes raw calls, requests are served inside one long read of it
// (inread.go), and only a request that needs the client meanwhile (a body
// still to come, an upgrade) or a head larger than the reader's buffer is
// read and served the usual way.
func (c *conn) serve(ctx context.Context) {
	defer c.s.forget(c)
	c.req = http.Request{Header: http.Header{}, ProtoMajor: 1, RemoteAddr: c.nc.RemoteAddr().String()}
	c.req = *c.req.WithContext(ctx)
	if c.req.RemoteAddr == "" || c.req.RemoteAddr == "@" {
		c.req.RemoteAddr = "127.0.0.1:0" // a unix socket peer: cloudflared in the pod
	}
	c.resp.c = c
	c.resp.hdr = http.Header{}
	for {
		next := needHead
		if c.raw != nil {
			next = c.serveInRead()
		}
		switch next {
		case connDone:
			return
		case needHead:
			if !c.readHead() {
				return
			}
			c.begin()
		}
		if !c.respond() {
			return
		}
	}
}

// readHead waits for the next request and reads its head; false ends the
// connection (closed, refused, or the server closing).
func (c *conn) readHead() bool {
	c.setPhase(phaseIdle)
	if c.s.closing.Load() {
		return false
	}
	if _, err := c.br.Peek(1); err != nil {
		return false
	}
	c.setPhase(phaseHead)
	if err := readRequestHead(c.br, &c.q); err != nil {
		c.refuse(err)
		return false
	}
	return true
}

// begin makes the request and its body out of the head just read.
func (c *conn) begin() {
	c.setPhase(phaseBusy)
	c.q.fill(&c.req)
	c.body.reset(c, &c.q)
	c.req.Body = &c.body
	if c.body.done {
		c.req.Body = http.NoBody
	}
	c.resp.reset(&c.q)
}

// respond runs the handler on the request begun, ends its response and
// reads what the handler left of its body; false ends the connection.
func (c *conn) respond() bool {
	ok := c.run()
	c.stopWatch() // a handler that panicked while it waited
	if !ok {
		return false // hijacked, or the handler aborted the response
	}
	if !c.resp.finish() || c.q.closeConn || c.resp.closeAfter {
		return false
	}
	if !c.body.drain(256 << 10) {
		return false
	}
	c.rest()
	return true
}

// rest lets go of what the request just served holds, so that a
// connection waiting for its next request keeps only its buffers: the
// values of a 256 KiB head, or the map of a 512-field one, must not stay
// alive for as long as a client keeps an idle connection open.
func (c *conn) rest() {
	c.req.Header = restMap(c.req.Header)
	c.req.RequestURI, c.req.Host, c.req.URL = "", "", nil
	c.resp.hdr = restMap(c.resp.hdr)
	c.q.rest()
	if cap(c.resp.pending) > smallBody {
		c.resp.pending = nil
	}
}

// restMap empties h, or replaces it when it grew large: clearing a map
// keeps its buckets.
func restMap(h http.Header) http.Header {
	if len(h) > 64 {
		return http.Header{}
	}
	clear(h)
	return h
}

// run calls the handler; it reports false when the connection must not
// be used again (hijacked, or aborted with http.ErrAbortHandler).
func (c *conn) run() (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			ok = false
			if v != http.ErrAbortHandler {
				c.s.Log.Error("panic serving a request", "panic", v)
			}
			if c.resp.hijacked {
				return
			}
			c.bw.Flush() // what was sent stays sent; the close cuts the rest
		}
	}()
	c.s.Handler.ServeHTTP(&c.resp, &c.req)
	return !c.resp.hijacked
}

// refuse answers a request head that could not be read, when it makes
// sense to, and the connection is then closed.
func (c *conn) refuse(err error) {
	var br *errBadRequest
	if errors.As(err, &br) {
		c.bw.WriteString("HTTP/1.1 " + strconv.Itoa(br.status) + " " + http.StatusText(br.status) +
			"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: ")
		msg := br.msg + "\n"
		c.bw.WriteString(strconv.Itoa(len(msg)) + "\r\n\r\n" + msg)
		c.bw.Flush()
		return
	}
	var pe *ProtocolError
	if errors.As(err, &pe) { // a head cut short by the client
		c.bw.WriteString("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
		c.bw.Flush()
	}
}

func (c *conn) sendContinue() {
	if c.resp.headSent {
		return
	}
	c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
	c.bw.Flush()
}

// writeWatch is what a connection's buffered writer writes through: each
// write to the socket is a phaseWrite the janitor can time, whoever makes
// it (the handler's writes, a flush, the server's own answers).
type writeWatch struct {
	c *conn
	w io.Writer
}

func (ww writeWatch) Write(p []byte) (n int, err error) {
	c := ww.c
	prev := c.phase.Load()
	c.setPhase(phaseWrite)
	if c.tail != nil {
		n, c.tailN, err = c.vec.write(ww.w, p, c.tail)
	} else {
		n, err = ww.w.Write(p)
	}
	c.setPhase(prev)
	return n, err
}

// write writes p through the buffered writer. When p does not fit beside
// what is buffered, the two go out in one vectored write, where the
// buffered writer would fill its buffer, write it, then write the rest:
// so a head and the first piece of a large body take one system call.
// It is a write like any other to the janitor (writeWatch times it).
func (c *conn) write(p []byte) (int, error) {
	bw := c.bw
	if bw.Buffered() == 0 || len(p) <= bw.Available() {
		return bw.Write(p)
	}
	c.tail = p
	err := bw.Flush()
	n := c.tailN
	c.tail, c.tailN = nil, 0
	if err != nil {
		return n, err
	}
	if n < len(p) { // not expected: a vectored write sends all or fails
		m, err := bw.Write(p[n:])
		return n + m, err
	}
	return n, nil
}

var errTooManyFiles = syscall.EMFILE

// Serve accepts connections on ln until Shutdown or Close, and serves
// each in a goroutine of its own. It returns http.ErrServerClosed after
// Shutdown or Close, else the listener's error.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.conns == nil {
		s.conns = map[*conn]struct{}{}
	}
	s.ln = ln
	ctx, cancel := context.WithCancel(context.Background())
	s.ended = cancel
	s.mu.Unlock()
	stop := make(chan struct{})
	go s.janitor(stop)
	// The connections outlive Serve during a Shutdown: their deadlines
	// are kept, and their requests' context ends only with them.
	defer func() {
		go func() {
			s.wg.Wait()
			cancel()
			close(stop)
		}()
	}()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		rw := newRawIO(nc)
		c := &conn{s: s, nc: nc, br: bufio.NewReaderSize(rw, 4096)}
		c.bw = bufio.NewWriterSize(writeWatch{c, rw}, 4096)
		c.watch.rc = syscallConn(nc)
		if c.raw = rawOf(rw); c.raw != nil {
			c.inReadFn = c.inReadStep
		}
		s.mu.Lock()
		if s.closing.Load() {
			s.mu.Unlock()
			nc.Close()
			return http.ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go c.serve(ctx)
	}
}

// abort closes a connection from another goroutine than its own, without
// waiting. Its own may be inside a read of the socket (inread.go), which
// holds the descriptor until it returns, and net.Conn.Close waits for
// that: a handler still waiting on a backend would hold the caller (the
// janitor, Close under the server's lock) until it ends. Every wait on
// the connection ends at once either way: Close wakes them first.
func (c *conn) abort() { go c.nc.Close() }

func (s *Server) forget(c *conn) {
	c.nc.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// janitor closes idle connections past the idle timeout, connections
// stuck in a request head past the head timeout (slowloris) or in a write
// to a client that does not read past the write timeout, and fails body
// reads that got nothing past the body timeout. It checks once a second
// instead of arming a timer per request: a connection's seq moves with
// every phase change, and every read of a body or write to the socket
// changes phase, so a wait is measured from the last progress.
func (s *Server) janitor(stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := time.Now().UnixNano()
		s.mu.Lock()
		for c := range s.conns {
			seq := c.seq.Load()
			if seq != c.seenSeq || c.seenAt == 0 {
				c.seenSeq, c.seenAt = seq, now
			}
			age := time.Duration(now - c.seenAt)
			switch c.phase.Load() {
			case phaseIdle:
				if s.IdleTimeout > 0 && age > s.IdleTimeout {
					c.abort()
				} else if seq != c.peekedSeq {
					// Once per idle period: a close that came in with
					// the last request may not have ended the wait
					// (inread.go).
					c.peekedSeq = seq
					if c.clientLeft() {
						c.abort()
					}
				}
			case phaseHead:
				if s.HeadTimeout > 0 && age > s.HeadTimeout {
					c.abort()
				}
			case phaseBody:
				if s.BodyTimeout > 0 && age > s.BodyTimeout {
					// The read fails with a timeout; the handler may still
					// answer, and the connection closes after. Should the
					// read have moved on meanwhile, the deadline goes.
					c.nc.SetReadDeadline(pastDeadline)
					if c.seq.Load() != seq {
						c.nc.SetReadDeadline(time.Time{})
					}
				}
			case phaseWrite:
				if s.WriteTimeout > 0 && age > s.WriteTimeout {
					c.abort()
				}
			case phaseWait:
				if age > 0 { // waiting since an earlier tick: one to two seconds
					c.checkWatch()
				}
			}
		}
		s.mu.Unlock()
	}
}

// Shutdown stops accepting, closes idle connections now and busy ones
// after their current request, and waits for them until ctx ends; then
// it closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	// Under mu: Serve checks closing under mu before wg.Add, so every Add
	// happens before the Wait below, or not at all (a WaitGroup must not
	// see Add from zero while a Wait runs).
	s.mu.Lock()
	s.closing.Store(true)
	if s.ln != nil {
		s.ln.Close()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		s.mu.Lock()
		for c := range s.conns {
			if c.phase.Load() == phaseIdle {
				c.abort()
			}
		}
		s.mu.Unlock()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			s.Close()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Close stops accepting, closes every connection at once, and ends the
// requests' context, so handlers waiting on something else (a backend)
// stop too.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing.Store(true)
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.abort()
	}
	if s.ended != nil {
		s.ended()
	}
}
