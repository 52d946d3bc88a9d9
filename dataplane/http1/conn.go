// This file implements a connection to an upstream.

package http1

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Conn is one connection to an upstream with its buffers. One exchange
// at a time runs on it: the caller writes a request head into Writer,
// then Send, ReadResponse, CopyBody (or Drop), and Finish, which returns
// it to its pool or closes it. Interrupt cuts a wait short from any
// goroutine (the client left).
type Conn struct {
	nc net.Conn
	// rw is what br and bw read and write: the connection, through its
	// raw socket I/O where it has one (rawio.go).
	rw io.ReadWriter
	// br and bw are nil while the connection idles without its buffers
	// (shed, in pool.go).
	br   *bufio.Reader
	bw   *bufio.Writer
	pool *Pool
	peek *peekQuiet // looks at the socket under nc; nil if it cannot
	// held sends a request with the first read of its answer (rawio.go);
	// nil where the connection's I/O cannot.
	held   heldSender
	reused bool // it served an exchange before this one
	// streaming says the current exchange's body is being written by a
	// goroutine of its own, which reads the client's body meanwhile.
	streaming bool
	client    string // whose request holds it ("" when idle): changed under pool.mu, or by its sole owner
	// upload says it counts in the pool's MaxUploadConns: its request's
	// body is still coming from the client. Changed under pool.mu.
	upload bool
	broken atomic.Bool // a deadline was forced into the past: not reusable
	// idleSince is the pool's sweep count when it went back to the pool:
	// a clock that costs no clock read (see Pool.sweep).
	idleSince uint64
	done      atomic.Bool
}

// Close closes the connection and gives its place back to the pool. It
// may be called more than once (a body writer and the response path can
// both give up on a connection).
func (c *Conn) Close() {
	if c.done.Swap(true) {
		return
	}
	c.nc.Close()
	c.pool.mu.Lock()
	c.pool.open--
	c.pool.release(c.client, c.upload)
	c.client, c.upload = "", false
	c.pool.mu.Unlock()
}

// uploaded takes the connection out of the pool's upload share: its
// request body has been sent (or failed), so it waits on the backend
// now, not on the client.
func (c *Conn) uploaded() {
	c.pool.mu.Lock()
	if c.upload {
		c.upload = false
		c.pool.uploads--
		decrement(c.pool.uploading, c.client)
	}
	c.pool.mu.Unlock()
}

// Reused reports whether the connection served an exchange before.
func (c *Conn) Reused() bool { return c.reused }

// Writer is where the caller writes the request head (see
// WriteRequestLine); Send flushes it.
func (c *Conn) Writer() *bufio.Writer { return c.bw }

// Tunnel hands the connection over once a protocol switch (101) made it
// a tunnel: early is a copy of the bytes received after the 101's head
// (nil when none were), and the connection lets go of its buffers, so a
// tunnel that idles for hours holds none of them. Only Close may be
// called on c afterwards.
func (c *Conn) Tunnel() (nc net.Conn, early []byte) {
	early = Unread(c.br)
	c.br, c.bw = nil, nil
	return c.nc, early
}

// Unread is a copy of what br holds, read from its source and not yet
// consumed (nil when nothing is), so that br's buffer can go: for a
// reader handed over with a connection (Tunnel, ResponseWriter.Hijack).
func Unread(br *bufio.Reader) []byte {
	n := br.Buffered()
	if n == 0 {
		return nil
	}
	b, _ := br.Peek(n)
	return append([]byte(nil), b...)
}

// SetDeadline bounds the exchange's I/O; zero clears it.
func (c *Conn) SetDeadline(t time.Time) { c.nc.SetDeadline(t) }

// pastDeadline unblocks a connection's pending I/O at once.
var pastDeadline = time.Unix(1, 0)

// Interrupt cuts short whatever I/O is pending on the connection (the
// client the exchange serves went away), and keeps it from being reused.
// It may be called from any goroutine.
func (c *Conn) Interrupt() {
	c.broken.Store(true)
	c.nc.SetDeadline(pastDeadline)
}

// inlineBody is the largest request body of known length written by the
// caller's goroutine before it reads the response. Bigger or unknown
// bodies are written by a goroutine of their own, so that a backend that
// answers before reading everything (a 413, say) cannot deadlock the
// exchange.
const inlineBody = 64 << 10

// closedBody is a bodyDone channel that has already delivered success.
var closedBody = func() chan error { c := make(chan error, 1); c <- nil; close(c); return c }()

// Send flushes the request head written into Writer, with its body:
// replay when the whole body is in memory, else body with the length the
// head announced (n > 0, or -1 for chunked); neither for no body. A large
// or unknown-length body is written by a goroutine of its own while the
// caller reads the response. bodyDone delivers the outcome of writing the
// body; it is never nil, and the caller must receive from it before
// reading the client's body can stop (Finish does).
//
// A connection got for an upload (Pool.Get) leaves the upload share once
// the body is written, or at once when Send has none to read.
func (c *Conn) Send(body io.Reader, replay []byte, n int64) (bodyDone <-chan error, err error) {
	c.streaming = false
	switch {
	case replay != nil:
		c.bw.Write(replay)
	case body == nil:
	case n > 0 && n <= inlineBody:
		_, err := writeBody(c.bw, body, n)
		if c.upload {
			c.uploaded()
		}
		if err != nil {
			return closedBody, err
		}
	default:
		// The head goes now; the writer owns c.bw from here on.
		if err := c.bw.Flush(); err != nil {
			return closedBody, err
		}
		ch := make(chan error, 1)
		c.streaming = true
		go c.writeBodyAsync(body, n, ch)
		return ch, nil
	}
	if c.upload { // nothing of the client's left to wait for
		c.uploaded()
	}
	return closedBody, c.flushRequest()
}

// heldSender is a connection's raw socket I/O that can send a request
// with the first read of its answer, saving the read that would find
// nothing yet (rawio.go explains why the write must be inside the read).
type heldSender interface {
	// hold makes the next write keep its bytes for the next read.
	hold(on bool)
	// pendingWrite reports whether kept bytes have not been sent.
	pendingWrite() bool
}

// flushRequest flushes what Writer holds of the request. Where the
// socket allows, the bytes go out with the first read of the answer
// (ReadResponse, next): nothing is written to Writer in between.
func (c *Conn) flushRequest() error {
	if c.held == nil {
		return c.bw.Flush()
	}
	c.held.hold(true)
	err := c.bw.Flush()
	c.held.hold(false)
	return err
}

// Streaming reports whether Send left the body to a goroutine of its
// own, still reading the client's body (and so not to be watched).
func (c *Conn) Streaming() bool { return c.streaming }

// writeBodyAsync writes a body while the caller reads the response.
func (c *Conn) writeBodyAsync(body io.Reader, n int64, done chan<- error) {
	_, err := writeBody(c.bw, body, n)
	c.uploaded()
	if err != nil {
		c.Close() // the backend must not take a truncated body as whole
	}
	done <- err
}

// ReadResponse reads the response head into h. upgrade says the request
// asked for a protocol switch; a 101 answer to any other is refused.
func (c *Conn) ReadResponse(h *Head, upgrade bool) error {
	if err := readHead(c.br, h); err != nil {
		return err
	}
	if h.Status == http.StatusSwitchingProtocols && !upgrade {
		return protoErr("101 Switching Protocols without an upgrade request")
	}
	return nil
}

// CopyBody relays the body of the response h (the answer to method) to
// w, as it arrives (see bodyCopy for when it flushes through fl, which may
// be nil). A chunked body's trailers are added to trailers under
// http.TrailerPrefix. upErr is a failure of the upstream (an early close,
// malformed chunking), downErr a failed write to w.
func (c *Conn) CopyBody(w io.Writer, fl http.Flusher, h *Head, method string, trailers http.Header) (upErr, downErr error) {
	if !h.HasBody(method) {
		return nil, nil
	}
	bc := bodyCopy{w: w, fl: fl, br: c.br}
	var err error
	switch {
	case h.Chunked:
		tr := GetHead()
		if err = bc.chunked(tr); err == nil {
			tr.copyTo(trailers, http.TrailerPrefix)
		}
		PutHead(tr)
	case h.ContentLength >= 0:
		err = bc.fixed(h.ContentLength)
	default:
		err = bc.toEOF()
	}
	if bc.downErr != nil {
		return nil, bc.downErr
	}
	return err, nil
}

// ReadBody reads the whole body of a response of known length into p,
// which is exactly h.ContentLength bytes long: for a caller that gives
// the connection back (Finish) before it passes the body on. n is what
// arrived; err, an upstream error (an early close) when not all did.
func (c *Conn) ReadBody(h *Head, p []byte) (n int, err error) {
	if int64(len(p)) != h.ContentLength {
		return 0, errors.New("http1: ReadBody needs a buffer of the body's length")
	}
	n, err = io.ReadFull(c.br, p)
	return n, unexpected(err)
}

// Finish ends the exchange: the connection goes back to its pool when
// clean (the response was read whole), the response lets it live on, it
// was not a bodiless answer that announced a body (see skippedBody), and
// the request body was written whole; otherwise it is closed. It waits
// for a body writer still running, which reads the client's body: that
// must not happen after the request's handler returns.
func (c *Conn) Finish(h *Head, clean bool, method string, bodyDone <-chan error) {
	if clean && h.reusable(method) {
		select {
		case berr := <-bodyDone:
			// The outcome is taken: it must not be waited for again below
			// (the writer sends it once).
			if berr == nil {
				c.pool.put(c)
			} else {
				c.Close()
			}
			return
		default: // still sending a body the backend did not wait for
		}
	}
	c.Close()
	<-bodyDone
}

// Drop ends an exchange whose response the caller does not pass on (a
// retried attempt's, a mirror's): the connection is kept when the body is
// at most limit bytes and can be read past, else closed.
func (c *Conn) Drop(h *Head, method string, limit int64, bodyDone <-chan error) {
	if <-bodyDone == nil && h.reusable(method) && discardBody(c.br, h, method, limit) {
		c.pool.put(c)
		return
	}
	c.Close()
}

// quiet reports whether an idle connection can carry a new request:
// nothing is waiting to be read on it and the server has not closed it.
// Anything an idle connection says is not the answer to a request not yet
// sent (a late response, a body after one that had none, junk, the end of
// the stream), and reading it as such would hand one client another's
// response. It costs one non-blocking syscall.
func (c *Conn) quiet() bool {
	return (c.br == nil || c.br.Buffered() == 0) && (c.peek == nil || c.peek.check())
}

// tlsDrained reports whether a TLS connection holds no decrypted bytes
// beyond the response just read: they would be invisible to quiet, which
// looks at the socket. A read with a deadline in the past returns what
// crypto/tls holds, or a timeout without touching the socket.
func (c *Conn) tlsDrained() bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true
	}
	tc.SetReadDeadline(pastDeadline)
	var b [1]byte
	n, err := tc.Read(b[:])
	tc.SetReadDeadline(time.Time{})
	return n == 0 && isTimeout(err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
