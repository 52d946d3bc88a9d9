// This file reads request bodies.

package http1

import (
	"bufio"
	"errors"
	"io"
	"net/http"
)

// requestBody is a request body read from the client connection: a fixed
// length, or chunked. One lives in each connection and is reset per
// request. Reading it first sends "100 Continue" when the client asked.
type requestBody struct {
	c         *conn
	br        *bufio.Reader
	remaining int64 // bytes left of a fixed body or of the current chunk
	chunked   bool
	done      bool // the body ended cleanly
	err       error
	continued bool // 100 Continue sent (or not needed)
}

func (b *requestBody) reset(c *conn, q *requestHead) {
	*b = requestBody{c: c, br: c.br, remaining: q.contentLength, chunked: q.chunked, continued: !q.expect100}
	if !q.chunked && q.contentLength == 0 {
		b.done = true
	}
}

// errBodyTooLarge ends a chunk-size line or trailer section that is too
// long; the connection is closed.
var errBodyTooLarge = errors.New("request body framing too large")

// Read reads the body. While it waits on the client the connection is in
// phaseBody, so the janitor can fail a read that gets nothing for the
// server's BodyTimeout (a timeout error, which the handler may answer with
// 408).
func (b *requestBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.done {
		return 0, io.EOF
	}
	prev := b.c.phase.Load()
	b.c.setPhase(phaseBody)
	n, err := b.read(p)
	b.c.setPhase(prev)
	return n, err
}

func (b *requestBody) read(p []byte) (int, error) {
	if !b.continued {
		b.continued = true
		b.c.sendContinue()
	}
	if b.chunked && b.remaining <= 0 {
		if err := b.nextChunk(); err != nil {
			b.err = err
			return 0, err
		}
		if b.done {
			return 0, io.EOF
		}
	}
	if int64(len(p)) > b.remaining {
		p = p[:b.remaining]
	}
	n, err := b.br.Read(p)
	b.remaining -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		b.err = err
		return n, err
	}
	if b.remaining == 0 {
		if !b.chunked {
			b.done = true
		} else if err := chunkEnd(b.br); err != nil {
			b.err = err
			return n, err
		}
	}
	return n, nil
}

// nextChunk reads a chunk-size line; a zero size ends the body after its
// trailer section, which is read and dropped.
func (b *requestBody) nextChunk() error {
	line, err := b.br.ReadSlice('\n')
	if err != nil {
		if err == bufio.ErrBufferFull {
			return errBodyTooLarge
		}
		return unexpected(err)
	}
	n, err := parseChunkSize(line)
	if err != nil {
		return err
	}
	if n > 0 {
		b.remaining = n
		return nil
	}
	for i := 0; ; i++ {
		line, err := b.br.ReadSlice('\n')
		if err != nil || i > 64 {
			if err == nil || err == bufio.ErrBufferFull {
				return errBodyTooLarge
			}
			return unexpected(err)
		}
		if len(line) <= 2 && (len(line) == 1 || line[0] == '\r') {
			b.done = true
			return nil
		}
	}
}

func (b *requestBody) Close() error { return nil }

// hijacked ends the body for a handler that took the connection over:
// its bytes are the handler's to read from the reader Hijack returned.
func (b *requestBody) hijacked() {
	b.err, b.br = http.ErrHijacked, nil
}

// drain reads what the handler left of the body, so the connection can
// serve the next request; it gives up (and the connection is closed)
// beyond limit bytes.
func (b *requestBody) drain(limit int64) bool {
	if b.done {
		return true
	}
	if b.err != nil || !b.continued {
		// A client waiting for 100 Continue has not sent the body.
		return false
	}
	n, _ := io.CopyN(io.Discard, b, limit+1)
	return b.done && n <= limit
}
