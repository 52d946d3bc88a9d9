// This file implements the buffer path: a direction that copies through a
// pooled buffer, held only while bytes move where the source allows.

package pipe

import (
	"errors"
	"io"
	"net"
	"sync"
)

// bufSize is the size of each direction's copy buffer.
const bufSize = 32 << 10

var bufs = sync.Pool{New: func() any { return new([bufSize]byte) }}

// bufferCopy is one direction on the buffer path: the kernel cannot
// splice its sockets (a TLS connection the proxy terminates, a conn that
// is not a socket, a system without splice), or could make no kernel
// pipe for it.
//
// Where its source can be waited on without a buffer (newWaiter: a plain
// socket, or TLS over one), the buffer is held only while bytes move: a
// read that leaves the source empty (shorter than the most it could
// return) is followed by a wait for the socket, and a wait that has to
// park gives the buffer back to the pool; the next bytes take one again.
// So a quiet connection holds no copy buffer, as on the kernel path.
// Another source keeps its buffer from the first read to the end.
type bufferCopy struct {
	p       *pipe
	d       int
	buf     *[bufSize]byte
	waits   bool   // the source can be waited on without the buffer (w)
	w       waiter // made once, in the pipe's own memory
	emptied bool   // the last read left the source empty, or none was made
}

// copyBuffered moves direction d's bytes through a buffer until its
// source ends or fails or the pipe closes.
func (p *pipe) copyBuffered(d int) {
	c := &p.buffered[d]
	c.p, c.d, c.buf = p, d, bufs.Get().(*[bufSize]byte)
	defer giveBack(&c.buf)
	c.waits = c.w.init(p.conns[d], &c.buf)
	c.emptied = c.waits // the pipe begins by waiting for bytes
	dst := p.conns[1-d]
	for {
		nr, rerr := c.read()
		if nr > 0 && !p.write(d, dst, c.buf[:nr]) {
			return
		}
		if rerr == io.EOF {
			p.ended(d, dst)
			return
		}
		if rerr != nil {
			p.fail(side(d, true), rerr)
			return
		}
	}
}

// read reads the source's next bytes into c.buf. After a read that left
// the source empty it first takes what the source's TLS holds, if
// anything, then waits for the socket without the buffer.
func (c *bufferCopy) read() (int, error) {
	if c.emptied {
		if n, err := c.w.held(c.buf[:]); n > 0 || err != nil {
			c.emptied = n < c.w.full
			return n, err
		}
		if err := c.w.wait(); err != nil {
			return 0, err
		}
		if c.buf == nil {
			c.buf = bufs.Get().(*[bufSize]byte)
		}
	}
	n, err := c.p.conns[c.d].Read(c.buf[:])
	c.emptied = c.waits && n < c.w.full
	return n, err
}

// giveBack gives the buffer in slot back to the pool, if it holds one.
func giveBack(slot **[bufSize]byte) {
	if *slot != nil {
		bufs.Put(*slot)
		*slot = nil
	}
}

// timedOut reports whether err is a timeout (a deadline that passed).
func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
