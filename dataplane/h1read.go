package dataplane

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
)

// Limits on an upstream response head. net/http's Transport allows 10 MB
// by default; a backend that sends more than this is broken or hostile.
const (
	maxHeadBytes  = 256 << 10
	maxHeadFields = 512
)

// respHead is a parsed response head (or chunked trailer section). Field
// names and values point into raw, which owns copies of the bytes: the
// connection's buffer is reused by the next read.
type respHead struct {
	status int
	minor  int // HTTP/1.minor
	raw    []byte
	fields []field

	contentLength int64 // -1 when not given
	chunked       bool  // Transfer-Encoding: chunked
	closeConn     bool  // the server will close after this response
	upgrade       bool  // Connection: upgrade was sent
}

type field struct {
	name, value span
}

type span struct{ start, end int32 }

func (h *respHead) bytes(s span) []byte { return h.raw[s.start:s.end] }

var respHeadPool = sync.Pool{New: func() any {
	return &respHead{raw: make([]byte, 0, 1024), fields: make([]field, 0, 16)}
}}

func getRespHead() *respHead { return respHeadPool.Get().(*respHead) }

func putRespHead(h *respHead) {
	if cap(h.raw) > 64<<10 {
		return
	}
	h.raw, h.fields = h.raw[:0], h.fields[:0]
	respHeadPool.Put(h)
}

// errMalformed is an HTTP/1.1 message the proxy refuses: a backend's
// response (RFC 9112 asks a proxy to answer 502 rather than pass on a
// malformed one) or, through the same parser, a client's request head.
type errMalformed struct{ msg string }

func (e *errMalformed) Error() string { return "malformed HTTP/1.1 message: " + e.msg }

// errHeadTooLarge is a head over maxHeadBytes or maxHeadFields.
var errHeadTooLarge = &errMalformed{"head larger than 256 KiB or 512 fields"}

func protoErr(format string, a ...any) error {
	return &errMalformed{fmt.Sprintf(format, a...)}
}

// readHead reads one response head. Informational (1xx) responses other
// than 101 are skipped: the client's server side has already answered its
// own 100-continue.
func readHead(br *bufio.Reader, h *respHead) error {
	for {
		h.raw, h.fields = h.raw[:0], h.fields[:0]
		line, err := readLine(br, h, true)
		if err != nil {
			return err
		}
		if err := h.parseStatus(line); err != nil {
			return err
		}
		if err := readFields(br, h); err != nil {
			return err
		}
		if h.status >= 200 || h.status == http.StatusSwitchingProtocols {
			return h.frame()
		}
	}
}

// readLine returns the next line without its CRLF (or LF), as a span of
// h.raw. first reports whether this is the status line, where an EOF
// before any byte is io.EOF rather than a protocol error.
func readLine(br *bufio.Reader, h *respHead, first bool) (span, error) {
	start := len(h.raw)
	for {
		frag, err := br.ReadSlice('\n')
		if len(h.raw)+len(frag) > maxHeadBytes {
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

func (h *respHead) parseStatus(s span) error {
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
	h.status = code
	return nil
}

func readFields(br *bufio.Reader, h *respHead) error {
	for {
		s, err := readLine(br, h, false)
		if err != nil {
			return err
		}
		line := h.bytes(s)
		if len(line) == 0 {
			return nil
		}
		if line[0] == ' ' || line[0] == '\t' {
			// RFC 9112 §5.2: obs-fold in a response gets a 502.
			return protoErr("obsolete line folding")
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return protoErr("field without a name: %q", truncate(line))
		}
		name := line[:colon]
		if !validFieldName(name) {
			// Includes whitespace before the colon, which RFC 9112 §5.1
			// forbids for the smuggling it enables.
			return protoErr("invalid field name %q", truncate(name))
		}
		value := bytes.Trim(line[colon+1:], " \t")
		if !validFieldValue(value) {
			return protoErr("invalid value in field %q", truncate(name))
		}
		if len(h.fields) >= maxHeadFields {
			return errHeadTooLarge
		}
		vstart := s.start + int32(colon+1) + int32(bytesIndexNonSpace(line[colon+1:]))
		h.fields = append(h.fields, field{
			name:  span{s.start, s.start + int32(colon)},
			value: span{vstart, vstart + int32(len(value))},
		})
	}
}

func bytesIndexNonSpace(b []byte) int {
	for i, c := range b {
		if c != ' ' && c != '\t' {
			return i
		}
	}
	return len(b)
}

// frame works out how the body is delimited (RFC 9112 §6.3) and whether
// the connection survives the response.
func (h *respHead) frame() error {
	h.contentLength, h.chunked, h.upgrade = -1, false, false
	h.closeConn = h.minor == 0
	sawTE := false
	for _, f := range h.fields {
		name, value := h.bytes(f.name), h.bytes(f.value)
		switch {
		case asciiEqualFold(name, "Content-Length"):
			n, err := parseContentLength(value)
			if err != nil {
				return err
			}
			if h.contentLength >= 0 && h.contentLength != n {
				return protoErr("conflicting Content-Length values")
			}
			h.contentLength = n
		case asciiEqualFold(name, "Transfer-Encoding"):
			// Only "chunked" alone, as net/http: other codings are unused
			// in practice and each extra case is a smuggling surface.
			if sawTE || !asciiEqualFold(value, "chunked") {
				return protoErr("unsupported Transfer-Encoding %q", truncate(value))
			}
			sawTE, h.chunked = true, true
		case asciiEqualFold(name, "Connection"):
			eachToken(value, func(tok []byte) {
				switch {
				case asciiEqualFold(tok, "close"):
					h.closeConn = true
				case asciiEqualFold(tok, "keep-alive") && h.minor == 0:
					h.closeConn = false
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
		if h.contentLength >= 0 {
			h.closeConn = true
		}
		h.contentLength = -1
		if h.minor == 0 {
			return protoErr("Transfer-Encoding in an HTTP/1.0 response")
		}
	}
	if !h.chunked && h.contentLength < 0 {
		h.closeConn = true // the body ends when the connection does
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

func eachToken(v []byte, f func([]byte)) {
	for len(v) > 0 {
		var tok []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			tok, v = v[:i], v[i+1:]
		} else {
			tok, v = v, nil
		}
		if tok = bytes.TrimSpace(tok); len(tok) > 0 {
			f(tok)
		}
	}
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if x == y {
			continue
		}
		if x|0x20 != y|0x20 || (x|0x20) < 'a' || (x|0x20) > 'z' {
			return false
		}
	}
	return true
}

func truncate(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// hasBody reports whether a response to method with this status carries
// a body at all (RFC 9112 §6.3 rules 1 and 2).
func (h *respHead) hasBody(method string) bool {
	return method != http.MethodHead && h.status >= 200 && h.status != http.StatusNoContent && h.status != http.StatusNotModified
}

// copyTo stores the head's end-to-end fields in dst, a response writer's
// header map. All values become substrings of one string and all value
// slices share one backing array, so a head costs two allocations plus
// any field name net/http does not already know.
func (h *respHead) copyTo(dst http.Header, prefix string) {
	if len(h.fields) == 0 {
		return
	}
	hasConn := false
	for _, f := range h.fields {
		if asciiEqualFold(h.bytes(f.name), "Connection") {
			hasConn = true
		}
	}
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
			if hopByHop(key) || (h.chunked && key == "Content-Length") {
				continue
			}
			if hasConn && h.listedInConnection(name) {
				continue
			}
		} else {
			key = prefix + key
		}
		if old, ok := dst[key]; ok {
			dst[key] = append(old, vals[i])
		} else {
			dst[key] = vals[i : i+1 : i+1]
		}
	}
}

// listedInConnection reports whether name appears in any Connection
// field of the head (RFC 9110 §7.6.1: such fields are hop-by-hop).
func (h *respHead) listedInConnection(name []byte) bool {
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

// commonKeys maps the spellings of frequent response fields to their
// canonical strings, so the usual names cost no allocation.
var commonKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"Accept-Ranges", "Access-Control-Allow-Credentials", "Access-Control-Allow-Headers",
		"Access-Control-Allow-Methods", "Access-Control-Allow-Origin", "Access-Control-Expose-Headers",
		"Access-Control-Max-Age", "Age", "Alt-Svc", "Cache-Control", "Connection", "Content-Disposition",
		"Content-Encoding", "Content-Language", "Content-Length", "Content-Location", "Content-Range",
		"Content-Security-Policy", "Content-Type", "Date", "Etag", "Expires", "Grpc-Encoding",
		"Grpc-Message", "Grpc-Status", "Grpc-Status-Details-Bin", "Keep-Alive", "Last-Modified", "Link",
		"Location", "Pragma", "Proxy-Authenticate", "Referrer-Policy", "Retry-After", "Server",
		"Set-Cookie", "Strict-Transport-Security", "Trailer", "Transfer-Encoding", "Upgrade", "Vary",
		"Via", "Www-Authenticate", "X-Content-Type-Options", "X-Frame-Options", "X-Request-Id",
		"X-Xss-Protection", "Sec-Websocket-Accept", "Sec-Websocket-Protocol", "Sec-Websocket-Extensions",
		// Request fields, for the origin listener's server.
		"Accept", "Accept-Encoding", "Accept-Language", "Authorization", "Cdn-Loop", "Cf-Connecting-Ip",
		"Cf-Ipcountry", "Cf-Ray", "Cf-Visitor", "Cf-Warp-Tag-Id", "Cookie", "Dnt", "Expect", "Forwarded",
		"Grpc-Timeout", "Host", "If-Match", "If-Modified-Since", "If-None-Match", "Origin", "Priority",
		"Range", "Referer", "Sec-Fetch-Dest", "Sec-Fetch-Mode", "Sec-Fetch-Site", "Sec-Fetch-User",
		"Sec-Websocket-Key", "Sec-Websocket-Version", "Te", "Traceparent", "Upgrade-Insecure-Requests",
		"User-Agent", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip",
		"X-Requested-With", "Access-Control-Request-Method", "Access-Control-Request-Headers",
	} {
		m[k] = k
		m[string(bytes.ToLower([]byte(k)))] = k
	}
	return m
}()

func canonicalKey(name []byte) string {
	if k, ok := commonKeys[string(name)]; ok {
		return k
	}
	return textproto.CanonicalMIMEHeaderKey(string(name))
}

var errNoResponse = errors.New("upstream closed the connection without a response")

// isToken reports whether s is an RFC 9110 token (1*tchar).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenChar[s[i]] {
			return false
		}
	}
	return true
}

// listElems yields the elements of a comma-separated header list (RFC
// 9110 §5.6.1), trimmed of spaces and tabs, skipping empty ones.
func listElems(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for s != "" {
			var elem string
			elem, s, _ = strings.Cut(s, ",")
			if elem = strings.Trim(elem, " \t"); elem != "" && !yield(elem) {
				return
			}
		}
	}
}

// validFieldName reports whether b is an RFC 9110 token.
func validFieldName(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !tokenChar[c] {
			return false
		}
	}
	return true
}

// validFieldValue rejects control characters other than HTAB (RFC 9110
// §5.5), which is what stops a backend from splitting the client's
// response; bytes from 0x80 up (obs-text) pass.
func validFieldValue(b []byte) bool {
	for _, c := range b {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

var tokenChar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-32] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()
