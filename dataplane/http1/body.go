// This file copies response bodies.

package http1

import (
	"bufio"
	"io"
	"net/http"
	"sync"
)

// bodyCopy moves a response body from an upstream connection's reader to
// the client. What the reader has buffered is written straight out of its
// buffer; what is left of a large body (see bigRead) is read straight
// from the connection into a pooled buffer, one read and one write per
// piece.
//
// Flushing rule: bytes already received are never held back while the
// proxy waits for more. Before any read that would block, what was written
// is flushed. A response that arrives whole costs no flush at all (net/http
// sends it when the handler returns); a stream (SSE, gRPC, chunked
// progress) reaches the client as each piece arrives.
type bodyCopy struct {
	w     io.Writer
	fl    http.Flusher // nil when the writer cannot flush
	br    *bufio.Reader
	dirty bool // written since the last flush
	n     int64
	// big is the pooled buffer large reads go into, held from the first
	// one until the copy ends or the body trickles (see readBig).
	big *[bigRead]byte
	// trickle says the last read from the connection brought less than
	// the reader holds: the sender sends in small pieces, and reads go
	// through the reader, with no large buffer held while they wait.
	trickle bool
	// downErr is set when the client could not be written to; the copy
	// stops and the upstream connection is not reused.
	downErr error
}

// fill makes sure the reader has at least one byte buffered, flushing to
// the client first if it must wait.
func (c *bodyCopy) fill() error {
	if c.br.Buffered() > 0 {
		return nil
	}
	c.flush()
	_, err := c.br.Peek(1)
	c.trickle = c.br.Buffered() < c.br.Size()
	return err
}

// flush sends on what was written since the last flush, before a read
// that may wait (the flushing rule).
func (c *bodyCopy) flush() {
	if c.dirty && c.fl != nil {
		c.fl.Flush()
		c.dirty = false
	}
}

// bigRead is the most a large body's read takes from the connection at
// once, and the size of the pooled buffer it reads into: what a socket
// holds of a body arriving at speed moves in one read and one write,
// where the reader's own buffer (8 KiB) would take eight of each; 64 KiB
// is also a loopback segment, and the largest answer the dataplane reads
// whole (responseBuffer), so both paths move the same pieces.
//
// Memory: one buffer per response that is streaming a large body, taken
// at its first large read and given back when the copy ends, or as soon
// as a read brings less than the reader holds (a trickle, an event
// stream): a response waiting on a slow sender holds it only if the last
// piece was large. An idle connection holds none. The buffers are not
// charged to the dataplane's -buffer-memory budget: that budget pays for
// bodies held so that a connection can be given back early, and is what
// lets small answers and request bodies free their connections under
// load; a copy buffer frees nothing, lives only as long as the upstream
// connection it reads from is busy, and so is bounded by the connection
// caps (MaxConns per endpoint, MaxConnsPerClient per client) and, for a
// client that stops reading, by the server's WriteTimeout. Charging it
// would let a few large downloads take the memory that keeps small
// answers from holding connections.
const bigRead = 64 << 10

var bigBufs = sync.Pool{New: func() any { return new([bigRead]byte) }}

// readBig reads at most max bytes (at least the reader's size, so that
// the read bypasses the reader's empty buffer) straight from the
// connection into the pooled buffer, and writes them to the client in one
// write. It flushes first: the read may wait. It returns what was read,
// and the read's error, or the write's (then c.downErr is set).
func (c *bodyCopy) readBig(max int) (int, error) {
	c.flush()
	if c.big == nil {
		c.big = bigBufs.Get().(*[bigRead]byte)
	}
	k, err := c.br.Read(c.big[:max])
	if k > 0 {
		if werr := c.write(c.big[:k]); werr != nil {
			return k, werr
		}
	}
	if k < c.br.Size() {
		c.trickle = true
		c.giveBack()
	}
	return k, err
}

// giveBack returns the large buffer to its pool, if the copy holds it.
func (c *bodyCopy) giveBack() {
	if c.big != nil {
		bigBufs.Put(c.big)
		c.big = nil
	}
}

// fixed copies exactly n bytes. An early EOF is an upstream error.
func (c *bodyCopy) fixed(n int64) error {
	defer c.giveBack()
	return c.copyN(n)
}

// copyN copies exactly n bytes: first what the reader holds, then, while
// at least a reader's worth is left and the sender is not trickling,
// large reads straight from the connection (readBig), which never take a
// byte beyond the body; the rest through the reader.
func (c *bodyCopy) copyN(n int64) error {
	for n > 0 {
		if c.br.Buffered() == 0 && !c.trickle && n >= int64(c.br.Size()) {
			k, err := c.readBig(int(min(n, bigRead)))
			n -= int64(k)
			if c.downErr != nil {
				return err
			}
			// An error with the body's last bytes (crypto/tls reports the
			// peer's close_notify with them) is no failure of this body.
			if err != nil && n > 0 {
				return unexpected(err)
			}
			continue
		}
		if err := c.fill(); err != nil {
			return unexpected(err)
		}
		k := min(n, int64(c.br.Buffered()))
		b, _ := c.br.Peek(int(k))
		if err := c.write(b); err != nil {
			return err
		}
		c.br.Discard(int(k))
		n -= k
	}
	return nil
}

// toEOF copies until the upstream closes the connection, which is how a
// body without length or chunking ends (RFC 9112 §6.3 rule 8).
// It reads through the reader until a read fills it, then in large
// reads (readBig) while they stay large.
func (c *bodyCopy) toEOF() error {
	defer c.giveBack()
	c.trickle = true
	for {
		if c.br.Buffered() == 0 && !c.trickle {
			if _, err := c.readBig(bigRead); err != nil {
				if err == io.EOF && c.downErr == nil {
					return nil
				}
				return err
			}
			continue
		}
		if err := c.fill(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		b, _ := c.br.Peek(c.br.Buffered())
		if err := c.write(b); err != nil {
			return err
		}
		c.br.Discard(len(b))
	}
}

// chunked decodes a chunked body (RFC 9112 §7.1) and parses its trailer
// section into trailers, which must be empty on entry.
// A chunk larger than the reader's buffer is read as a fixed body is.
func (c *bodyCopy) chunked(trailers *Head) error {
	defer c.giveBack()
	for {
		size, err := c.chunkSize()
		if err != nil {
			return err
		}
		if size == 0 {
			if err := c.fill(); err != nil {
				return unexpected(err)
			}
			return readFields(c.br, trailers)
		}
		if err := c.copyN(size); err != nil {
			return err
		}
		// The CRLF after the data may be still to come: what was
		// written goes out before the read that waits for it.
		if err := c.fill(); err != nil {
			return unexpected(err)
		}
		if err := chunkEnd(c.br); err != nil {
			return err
		}
		// A chunk boundary is where a stream's sender meant a piece to
		// end; send it on if nothing more has arrived.
		if c.br.Buffered() == 0 {
			c.flush()
		}
	}
}

// maxChunkLine bounds a chunk-size line with its extensions.
const maxChunkLine = 4096

func (c *bodyCopy) chunkSize() (int64, error) {
	if err := c.fill(); err != nil {
		return 0, unexpected(err)
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		if err == bufio.ErrBufferFull {
			return 0, protoErr("chunk-size line too long")
		}
		return 0, unexpected(err)
	}
	if len(line) > maxChunkLine {
		return 0, protoErr("chunk-size line too long")
	}
	return parseChunkSize(line)
}

// parseChunkSize reads the hex size at the start of a chunk-size line,
// ignoring chunk extensions (RFC 9112 §7.1.1).
func parseChunkSize(line []byte) (int64, error) {
	// The line must end in CRLF: a bare LF is refused, as net/http refuses
	// it, since peers that disagree on line ends disagree on the body.
	end := len(line)
	if end < 2 || line[end-2] != '\r' || line[end-1] != '\n' {
		return 0, protoErr("chunk-size line does not end in CRLF")
	}
	line = line[:end-2]
	var n int64
	digits := 0
	i := 0
	for ; i < len(line); i++ {
		d := line[i]
		var v byte
		switch {
		case d >= '0' && d <= '9':
			v = d - '0'
		case d >= 'a' && d <= 'f':
			v = d - 'a' + 10
		case d >= 'A' && d <= 'F':
			v = d - 'A' + 10
		default:
			goto done
		}
		if digits == 15 {
			return 0, protoErr("chunk size too large")
		}
		n = n<<4 | int64(v)
		digits++
	}
done:
	if digits == 0 {
		return 0, protoErr("bad chunk size")
	}
	rest := line[i:]
	for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
		rest = rest[1:]
	}
	if len(rest) > 0 && rest[0] != ';' {
		return 0, protoErr("bad chunk size")
	}
	return n, nil
}

// chunkEnd reads the CRLF that ends a chunk's data (RFC 9112 §7.1), for
// response and request bodies alike.
func chunkEnd(br *bufio.Reader) error {
	b, err := br.Peek(2)
	if err != nil {
		return unexpected(err)
	}
	if b[0] != '\r' || b[1] != '\n' {
		return protoErr("chunk data not followed by CRLF")
	}
	br.Discard(2)
	return nil
}

func (c *bodyCopy) write(b []byte) error {
	n, err := c.w.Write(b)
	c.n += int64(n)
	if err != nil {
		c.downErr = err
		return err
	}
	c.dirty = true
	return nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// discardBody reads and drops a response body so its connection can be
// reused (a retried attempt's answer). It gives up beyond limit bytes and
// reports false: closing is cheaper than draining a large body.
func discardBody(br *bufio.Reader, h *Head, method string, limit int64) bool {
	if !h.HasBody(method) {
		return true
	}
	c := bodyCopy{w: io.Discard, br: br}
	switch {
	case h.Chunked:
		t := GetHead()
		defer PutHead(t)
		return c.chunkedLimited(t, limit) == nil
	case h.ContentLength >= 0:
		return h.ContentLength <= limit && c.fixed(h.ContentLength) == nil
	}
	return false
}

func (c *bodyCopy) chunkedLimited(t *Head, limit int64) error {
	c.w = &limitedDiscard{left: limit}
	return c.chunked(t)
}

type limitedDiscard struct{ left int64 }

func (l *limitedDiscard) Write(b []byte) (int, error) {
	if int64(len(b)) > l.left {
		return 0, io.ErrShortWrite
	}
	l.left -= int64(len(b))
	return len(b), nil
}
