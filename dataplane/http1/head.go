// This file implements a message head and its limits.

package http1

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
)

// Limits on a message head, request or response. net/http's Transport
// allows 10 MB by default; a peer that sends more than this is broken or
// hostile.
const (
	maxHeadBytes  = 256 << 10
	maxHeadFields = 512
)

// Head is a parsed message head: a response's (or a chunked trailer
// section) for the upstream client, the fields of a request for the
// server. Field names and values point into raw, which owns copies of the
// bytes: the connection's buffer is reused by the next read.
type Head struct {
	// Status is a response's status code.
	Status int
	// ContentLength is the body length, -1 when not given.
	ContentLength int64
	// Chunked says the body is chunked (Transfer-Encoding: chunked).
	Chunked bool
	// Close says the connection ends after this response: the server
	// said so, the body ends at the close, or the framing was suspect.
	Close bool

	minor   int // HTTP/1.minor
	raw     []byte
	fields  []field
	lines   []span // a head read whole: its lines in raw (bufferedHead)
	upgrade bool   // Connection: upgrade was sent
	// spent is what the informational heads before this one took of
	// maxHeadBytes.
	spent int
}

type field struct {
	name, value span
}

type span struct{ start, end int32 }

func (h *Head) bytes(s span) []byte { return h.raw[s.start:s.end] }

var headPool = sync.Pool{New: func() any {
	return &Head{raw: make([]byte, 0, 1024), fields: make([]field, 0, 16)}
}}

// GetHead returns an empty head from a pool; PutHead gives it back.
func GetHead() *Head { return headPool.Get().(*Head) }

// PutHead returns h to the pool; h must not be used afterwards.
func PutHead(h *Head) {
	if cap(h.raw) > 64<<10 {
		return
	}
	h.raw, h.fields, h.spent = h.raw[:0], h.fields[:0], 0
	headPool.Put(h)
}

// keepHead is the most a head's buffers keep between uses: a usual head
// fits, a 256 KiB one is let go.
const keepHead = 8 << 10

// shrink drops the head's buffers if a large head grew them.
func (h *Head) shrink() {
	if cap(h.raw) > keepHead {
		h.raw = nil
	}
	if cap(h.fields) > 64 {
		h.fields = nil
	}
	if cap(h.lines) > 64 {
		h.lines = nil
	}
}

// ProtocolError is an HTTP/1.1 message refused: a backend's response (RFC
// 9112 asks a proxy to answer 502 rather than pass on a malformed one) or,
// through the same parser, a client's request head.
type ProtocolError struct{ msg string }

func (e *ProtocolError) Error() string { return "malformed HTTP/1.1 message: " + e.msg }

// errHeadTooLarge is a head over maxHeadBytes or maxHeadFields.
var errHeadTooLarge = &ProtocolError{"head larger than 256 KiB or 512 fields"}

func protoErr(format string, a ...any) error {
	return &ProtocolError{fmt.Sprintf(format, a...)}
}

// max1xx is the most informational responses read before a final one, as
// Go's HTTP/2 transport allows. Each is skipped, and all heads of one
// response together stay within maxHeadBytes, as net/http's Transport
// counts them: a backend cannot keep the proxy reading 1xx forever.
const max1xx = 5

// readHead reads one response head. Informational (1xx) responses other
// than 101 are skipped (at most max1xx of them): the client's server side
// has already answered its own 100-continue.
func readHead(br *bufio.Reader, h *Head) error {
	h.spent, h.raw = 0, h.raw[:0]
	for n1xx := 0; ; n1xx++ {
		if n1xx > max1xx {
			return protoErr("more than %d informational (1xx) responses", max1xx)
		}
		h.spent += len(h.raw)
		h.raw, h.fields = h.raw[:0], h.fields[:0]
		if err := h.readOne(br); err != nil {
			return err
		}
		if h.Status >= 200 || h.Status == http.StatusSwitchingProtocols {
			return h.frame()
		}
	}
}

// readOne reads one response head (a status line and its fields): whole,
// when br holds it (bufferedHead), else line by line.
func (h *Head) readOne(br *bufio.Reader) error {
	if br.Buffered() == 0 {
		// The first read, as readLine makes it; its error before any
		// byte is readLine's too.
		if _, err := br.Peek(1); err != nil {
			return err
		}
	}
	var ok bool
	if h.lines, ok = bufferedHead(br, h, h.lines, maxHeadBytes-h.spent); ok {
		if err := h.parseStatus(h.lines[0]); err != nil {
			return err
		}
		for _, s := range h.lines[1:] {
			if _, err := h.addField(s); err != nil {
				return err
			}
		}
		return nil
	}
	line, err := readLine(br, h, true)
	if err != nil {
		return err
	}
	if err := h.parseStatus(line); err != nil {
		return err
	}
	return readFields(br, h)
}

// readLine returns the next line without its CRLF (or LF), as a span of
// h.raw. first reports whether this is the status line, where an EOF
// before any byte is io.EOF rather than a protocol error.
func readLine(br *bufio.Reader, h *Head, first bool) (span, error) {
	start := len(h.raw)
	for {
		frag, err := br.ReadSlice('\n')
		if h.spent+len(h.raw)+len(frag) > maxHeadBytes {
			return span{}, errHeadTooLarge
		}
		h.raw = append(h.raw, frag...)
		if err == nil {
			break
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if first && len(h.raw) == start {
			return span{}, err
		}
		return span{}, protoErr("head ends early: %v", err)
	}
	end := len(h.raw) - 1
	if end > start && h.raw[end-1] == '\r' {
		end--
	}
	return span{int32(start), int32(end)}, nil
}

func (h *Head) parseStatus(s span) error {
	line := h.bytes(s)
	// HTTP-version SP status-code SP [reason-phrase] (RFC 9112 §4).
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
		return protoErr("bad status line %q", truncate(line))
	}
	switch line[7] {
	case '0':
		h.minor = 0
	case '1':
		h.minor = 1
	default:
		return protoErr("unsupported version %q", truncate(line[:8]))
	}
	code := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return protoErr("bad status code %q", truncate(line))
		}
		code = code*10 + int(c-'0')
	}
	if code < 100 {
		return protoErr("bad status code %d", code)
	}
	h.Status = code
	return nil
}

func readFields(br *bufio.Reader, h *Head) error {
	for {
		s, err := readLine(br, h, false)
		if err != nil {
			return err
		}
		if end, err := h.addField(s); end || err != nil {
			return err
		}
	}
}

// addField parses the field line s of h.raw into h.fields; end reports
// the empty line that ends the section.
func (h *Head) addField(s span) (end bool, err error) {
	line := h.bytes(s)
	if len(line) == 0 {
		return true, nil
	}
	if line[0] == ' ' || line[0] == '\t' {
		// RFC 9112 §5.2: obs-fold in a response gets a 502.
		return false, protoErr("obsolete line folding")
	}
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 {
		return false, protoErr("field without a name: %q", truncate(line))
	}
	name := line[:colon]
	if !httpsyntax.IsToken(name) {
		// Includes whitespace before the colon, which RFC 9112 §5.1
		// forbids for the smuggling it enables.
		return false, protoErr("invalid field name %q", truncate(name))
	}
	lead, value := trimOWS(line[colon+1:])
	if !httpsyntax.ValidFieldValue(value) {
		return false, protoErr("invalid value in field %q", truncate(name))
	}
	if len(h.fields) >= maxHeadFields {
		return false, errHeadTooLarge
	}
	vstart := s.start + int32(colon+1+lead)
	h.fields = append(h.fields, field{
		name:  span{s.start, s.start + int32(colon)},
		value: span{vstart, vstart + int32(len(value))},
	})
	return false, nil
}

// bufferedHead copies a head that br holds whole (the usual case: a peer
// sends a head in one piece) into h.raw in one copy and consumes it,
// returning the spans of its lines in h.raw, without their line ends (LF,
// or CR LF, as readLine cuts them), up to and including the empty line
// that ends it. ok is false, with nothing consumed, when br holds no
// whole head of at most limit bytes and maxHeadFields fields: the caller
// reads it line by line, which refuses one too large.
func bufferedHead(br *bufio.Reader, h *Head, lines []span, limit int) (_ []span, ok bool) {
	buf, _ := br.Peek(br.Buffered())
	lines = lines[:0]
	for at := 0; ; {
		nl := bytes.IndexByte(buf[at:], '\n')
		if nl < 0 || len(lines) > maxHeadFields+1 {
			return lines, false
		}
		end := at + nl
		s := span{int32(at), int32(end)}
		if end > at && buf[end-1] == '\r' {
			s.end--
		}
		lines = append(lines, s)
		at = end + 1
		if s.end == s.start && len(lines) > 1 {
			if at > limit {
				return lines, false
			}
			h.raw = append(h.raw[:0], buf[:at]...)
			br.Discard(at)
			return lines, true
		}
	}
}

// trimOWS returns b without the optional whitespace (SP and HTAB, RFC
// 9110 §5.6.3) around a field value, and how much was cut in front.
func trimOWS(b []byte) (lead int, value []byte) {
	for lead < len(b) && (b[lead] == ' ' || b[lead] == '\t') {
		lead++
	}
	end := len(b)
	for end > lead && (b[end-1] == ' ' || b[end-1] == '\t') {
		end--
	}
	return lead, b[lead:end]
}

// frame works out how the body is delimited (RFC 9112 §6.3) and whether
// the connection survives the response.
func (h *Head) frame() error {
	h.ContentLength, h.Chunked, h.upgrade = -1, false, false
	h.Close = h.minor == 0
	sawTE := false
	for _, f := range h.fields {
		name, value := h.bytes(f.name), h.bytes(f.value)
		switch {
		case asciiEqualFold(name, "Content-Length"):
			n, err := parseContentLength(value)
			if err != nil {
				return err
			}
			if h.ContentLength >= 0 && h.ContentLength != n {
				return protoErr("conflicting Content-Length values")
			}
			h.ContentLength = n
		case asciiEqualFold(name, "Transfer-Encoding"):
			// Only "chunked" alone, as net/http: other codings are unused
			// in practice and each extra case is a smuggling surface.
			if sawTE || !asciiEqualFold(value, "chunked") {
				return protoErr("unsupported Transfer-Encoding %q", truncate(value))
			}
			sawTE, h.Chunked = true, true
		case asciiEqualFold(name, "Connection"):
			eachToken(value, func(tok []byte) {
				switch {
				case asciiEqualFold(tok, "close"):
					h.Close = true
				case asciiEqualFold(tok, "keep-alive") && h.minor == 0:
					h.Close = false
				case asciiEqualFold(tok, "upgrade"):
					h.upgrade = true
				}
			})
		}
	}
	if sawTE {
		// Transfer-Encoding overrides Content-Length (RFC 9112 §6.3 rule 3);
		// a message with both may be a smuggling attempt, so the connection
		// is not reused either.
		if h.ContentLength >= 0 {
			h.Close = true
		}
		h.ContentLength = -1
		if h.minor == 0 {
			return protoErr("Transfer-Encoding in an HTTP/1.0 response")
		}
	}
	return nil
}

// parseContentLength reads a decimal length. A list ("42, 42"), which RFC
// 9110 §8.6 lets a recipient accept, is refused as net/http refuses it:
// the proxy and its clients must never disagree on where a body ends.
func parseContentLength(v []byte) (int64, error) {
	if len(v) == 0 || len(v) > 18 {
		return 0, protoErr("bad Content-Length %q", truncate(v))
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, protoErr("bad Content-Length %q", truncate(v))
		}
		n = n*10 + int64(c-'0')
	}
	return n, nil
}

// HasBody reports whether a response to method with this status carries
// a body at all (RFC 9112 §6.3 rules 1 and 2).
func (h *Head) HasBody(method string) bool {
	return method != http.MethodHead && h.Status >= 200 && h.Status != http.StatusNoContent && h.Status != http.StatusNotModified
}

// noContent reports whether a status never has content (1xx, 204, 304):
// a Content-Length beside one is not passed on. RFC 9110 §8.6 forbids it
// with 1xx and 204; with 304 it describes a representation not sent, and
// HTTP/2 clients (Go's among them) take it as a promise of a body.
func noContent(status int) bool {
	return status < 200 || status == http.StatusNoContent || status == http.StatusNotModified
}

// endsAtClose reports whether the body of this answer to method is
// delimited by the server closing the connection (RFC 9112 §6.3 rule 8).
func (h *Head) endsAtClose(method string) bool {
	return h.HasBody(method) && !h.Chunked && h.ContentLength < 0
}

// reusable reports whether the connection may carry another exchange
// after this answer to method, read whole.
func (h *Head) reusable(method string) bool {
	return !h.Close && !h.endsAtClose(method) && !h.skippedBody(method)
}

// skippedBody reports whether a response without a body (to HEAD, or
// 204, 304) announced one anyway, with a length or chunking. A server
// that gets HEAD wrong often sends the body as well, after the head: the
// connection then cannot be trusted for another exchange, since those
// bytes may arrive after any check for them.
func (h *Head) skippedBody(method string) bool {
	return !h.HasBody(method) && h.Status >= 200 && (h.Chunked || h.ContentLength > 0)
}

// CopyTo stores the head's end-to-end fields in dst, a response writer's
// header map: hop-by-hop fields, those named in Connection (RFC 9110
// §7.6.1), and a Content-Length beside chunking or on a status without
// content are left out.
func (h *Head) CopyTo(dst http.Header) { h.copyTo(dst, "") }

// WriteFields writes every field of the head as it came, for a 101
// Switching Protocols answer passed on whole (its Upgrade and Connection
// fields are the handshake itself).
func (h *Head) WriteFields(bw *bufio.Writer) {
	for _, f := range h.fields {
		bw.Write(h.bytes(f.name))
		bw.WriteString(": ")
		bw.Write(h.bytes(f.value))
		bw.WriteString("\r\n")
	}
}

// copyTo stores fields in dst under prefix + canonical name: end-to-end
// fields with no prefix, trailers with http.TrailerPrefix (those that
// TrailerAllowed). All values
// become substrings of one string and all value slices share one backing
// array, so a head costs two allocations plus any field name net/http
// does not already know.
func (h *Head) copyTo(dst http.Header, prefix string) {
	if len(h.fields) == 0 {
		return
	}
	hasConn := h.has("Connection")
	n, total := 0, 0
	for _, f := range h.fields {
		total += int(f.value.end - f.value.start)
		n++
	}
	var sb strings.Builder
	sb.Grow(total)
	for _, f := range h.fields {
		sb.Write(h.bytes(f.value))
	}
	all := sb.String()
	vals := make([]string, n)
	off := 0
	for i, f := range h.fields {
		l := int(f.value.end - f.value.start)
		vals[i] = all[off : off+l]
		off += l
		name := h.bytes(f.name)
		key := canonicalKey(name)
		if prefix == "" {
			if httpsyntax.HopByHop(key) || (key == "Content-Length" && (h.Chunked || noContent(h.Status))) {
				continue
			}
			if hasConn && h.listedInConnection(name) {
				continue
			}
		} else {
			if !httpsyntax.TrailerAllowed(key) {
				continue
			}
			key = prefix + key
		}
		if old, ok := dst[key]; ok {
			dst[key] = append(old, vals[i])
		} else {
			dst[key] = vals[i : i+1 : i+1]
		}
	}
}

// writeEndToEnd writes the fields CopyTo stores, for a response writer
// that writes the head without its header map (ResponseWriter.WriteHead):
// names in canonical form (made so in h.raw itself), values as they came,
// except the framing fields the writer writes itself (Content-Length,
// Transfer-Encoding, Connection) and all but the first Date, which it
// reports.
func (h *Head) writeEndToEnd(bw *bufio.Writer) (wroteDate bool) {
	hasConn := h.has("Connection")
	for _, f := range h.fields {
		name := h.bytes(f.name)
		canonicalize(name)
		if httpsyntax.HopByHop(string(name)) || hasConn && h.listedInConnection(name) {
			continue
		}
		switch string(name) {
		case "Content-Length", "Transfer-Encoding", "Connection":
			continue
		case "Date":
			if wroteDate {
				continue
			}
			wroteDate = true
		}
		writeField(bw, name, h.bytes(f.value))
	}
	return wroteDate
}

// has reports whether the head has a field of that name (any case).
func (h *Head) has(name string) bool {
	for _, f := range h.fields {
		if asciiEqualFold(h.bytes(f.name), name) {
			return true
		}
	}
	return false
}

// listedInConnection reports whether name appears in any Connection
// field of the head (RFC 9110 §7.6.1: such fields are hop-by-hop).
func (h *Head) listedInConnection(name []byte) bool {
	found := false
	for _, f := range h.fields {
		if asciiEqualFold(h.bytes(f.name), "Connection") {
			eachToken(h.bytes(f.value), func(tok []byte) {
				if bytes.EqualFold(tok, name) {
					found = true
				}
			})
		}
	}
	return found
}
