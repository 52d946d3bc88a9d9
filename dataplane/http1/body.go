// This file copies response bodies.

package http1

import (
	"bufio"
	"io"
	"net/http"
)

// bodyCopy moves a response body from an upstream connection's reader to
// the client without an intermediate buffer: bytes are written straight
// out of the reader's buffer.
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
	if c.dirty && c.fl != nil {
		c.fl.Flush()
		c.dirty = false
	}
	_, err := c.br.Peek(1)
	return err
}

// fixed copies exactly n bytes. An early EOF is an upstream error.
func (c *bodyCopy) fixed(n int64) error {
	for n > 0 {
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
func (c *bodyCopy) toEOF() error {
	for {
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
func (c *bodyCopy) chunked(trailers *Head) error {
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
		if err := c.fixed(size); err != nil {
			return err
		}
		if err := chunkEnd(c.br); err != nil {
			return err
		}
		// A chunk boundary is where a stream's sender meant a piece to
		// end; send it on if nothing more has arrived.
		if c.br.Buffered() == 0 && c.dirty && c.fl != nil {
			c.fl.Flush()
			c.dirty = false
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
