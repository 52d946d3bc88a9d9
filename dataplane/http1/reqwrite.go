// This file writes requests to an upstream.

package http1

import (
	"bufio"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
)

// Writing a request to an upstream. The caller composes the head from
// these pieces (the proxy decides which fields go, and writes them as it
// filters, without a header map of its own); Conn.Send sends the body.

// ErrRequestLine refuses to write a request line whose method is not a
// token, whose target holds a space or control byte or is not in origin
// form ("/path?query", or "*" for OPTIONS), or whose host holds bytes a
// host cannot: written as they are, they would end the line early or
// name another host, and change the request the backend reads (RFC 9112
// §3, §3.2.2).
var ErrRequestLine = errors.New("method, target or host cannot be written in a request line")

// WriteRequestLine writes the request line and the Host field, which
// RFC 9112 §3.2 asks to come first, after checking them: nothing reaches
// a request line unchecked, whatever protocol the request came in.
func WriteRequestLine(bw *bufio.Writer, method, target, host string) error {
	if !httpsyntax.IsToken(method) || !httpsyntax.ValidTarget(target) || !httpsyntax.ValidHost(host) || !originForm(method, target) {
		return ErrRequestLine
	}
	const mid = " HTTP/1.1\r\nHost: "
	if n := len(method) + 1 + len(target) + len(mid) + len(host) + 2; n <= bw.Available() {
		// One copy into the buffer, as writeField does.
		b := append(bw.AvailableBuffer(), method...)
		b = append(append(append(b, ' '), target...), mid...)
		bw.Write(append(append(b, host...), '\r', '\n'))
		return nil
	}
	bw.WriteString(method)
	bw.WriteByte(' ')
	bw.WriteString(target)
	bw.WriteString(mid)
	bw.WriteString(host)
	bw.WriteString("\r\n")
	return nil
}

// originForm reports whether target is what a request to an origin
// server carries (RFC 9112 §3.2.1, §3.2.4): a path, or "*" for OPTIONS.
// An absolute-form target would name a host the Host field does not.
func originForm(method, target string) bool {
	return target[0] == '/' || (target == "*" && method == "OPTIONS")
}

// WriteField writes one field line.
func WriteField(bw *bufio.Writer, k, v string) { writeField(bw, k, v) }

// writeField writes the field line "k: v" in one copy into bw's buffer
// where it fits, not four writes.
func writeField[T string | []byte](bw *bufio.Writer, k, v T) {
	if n := len(k) + len(v) + 4; n <= bw.Available() {
		b := bw.AvailableBuffer()[:n]
		i := copy(b, k)
		b[i], b[i+1] = ':', ' '
		i += 2 + copy(b[i+2:], v)
		b[i], b[i+1] = '\r', '\n'
		bw.Write(b)
		return
	}
	writeAll(bw, k)
	bw.WriteString(": ")
	writeAll(bw, v)
	bw.WriteString("\r\n")
}

// writeAll writes s through bw, in pieces as the buffer frees up; after a
// failed write it stops (bw keeps the error for its next Flush).
func writeAll[T string | []byte](bw *bufio.Writer, s T) {
	for len(s) > 0 {
		if bw.Available() == 0 && bw.Flush() != nil {
			return
		}
		b := bw.AvailableBuffer()[:bw.Available()]
		n := copy(b, s)
		bw.Write(b[:n])
		s = s[n:]
	}
}

// EndHead writes the framing of a body of n bytes (0 for none, -1 for an
// unknown length, sent chunked) and the blank line that ends the head.
// The framing is always the writer's own: a body is re-framed, never
// passed on with the length or coding it arrived with.
func EndHead(bw *bufio.Writer, n int64) {
	switch {
	case n > 0:
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), n, 10))
		bw.WriteString("\r\n")
	case n < 0:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	bw.WriteString("\r\n")
}

// copyBufPool holds buffers for bodies too large for the connection's
// own buffers.
var copyBufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// writeBody sends a request body with the framing EndHead announced.
// It returns the number of body bytes sent.
func writeBody(bw *bufio.Writer, body io.Reader, contentLength int64) (int64, error) {
	bp := copyBufPool.Get().(*[]byte)
	defer copyBufPool.Put(bp)
	buf := *bp
	var sent int64
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if contentLength < 0 {
				bw.Write(strconv.AppendUint(bw.AvailableBuffer(), uint64(n), 16))
				bw.WriteString("\r\n")
			} else if sent+int64(n) > contentLength {
				return sent, errBodyLength
			}
			if _, err := bw.Write(buf[:n]); err != nil {
				return sent, err
			}
			if contentLength < 0 {
				bw.WriteString("\r\n")
			}
			sent += int64(n)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return sent, &ClientBodyError{rerr}
		}
	}
	if contentLength < 0 {
		bw.WriteString("0\r\n\r\n")
	} else if sent != contentLength {
		return sent, errBodyLength
	}
	return sent, bw.Flush()
}

// ClientBodyError is a failure to read the request body from the client:
// the client's fault (or gone), not the upstream's.
type ClientBodyError struct{ Err error }

func (e *ClientBodyError) Error() string { return "reading request body: " + e.Err.Error() }
func (e *ClientBodyError) Unwrap() error { return e.Err }

var errBodyLength = &ClientBodyError{io.ErrUnexpectedEOF}
