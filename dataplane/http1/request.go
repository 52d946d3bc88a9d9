// This file reads request heads.

package http1

import (
	"bufio"
	"bytes"
	"net/http"
	"net/url"
	"strings"

	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
)

// The Server parses requests itself (see doc.go for why). This file turns
// a request head into the fields of an *http.Request the handler reads,
// refusing what RFC 9112 says a server must refuse, and what would let a
// client and the proxy disagree about where a request ends (request
// smuggling).

// errBadRequest is a request head the server answers 400 (or the status
// given) and then closes the connection on.
type errBadRequest struct {
	status int
	msg    string
}

func (e *errBadRequest) Error() string { return e.msg }

func badRequest(msg string) error { return &errBadRequest{http.StatusBadRequest, msg} }

// requestHead is a parsed request line and header section, with the
// framing of its body.
type requestHead struct {
	h      Head   // the line and field spans; h.raw owns the bytes
	list   Fields // the request's fields in order, made by fill
	method string
	target span // in h.raw
	minor  int
	host   span // in h.raw; empty when absent
	// url is the parsed target when it is not origin-form (absolute form,
	// "*"), parsed once as net/http parses it; nil for the usual path.
	url *url.URL
	// contentLength is the body length; -1 with chunked.
	contentLength int64
	chunked       bool
	closeConn     bool // Connection: close, or HTTP/1.0 without keep-alive
	expect100     bool // Expect: 100-continue
}

// readRequestHead reads one request head. io.EOF means the client closed
// the connection between requests.
func readRequestHead(br *bufio.Reader, q *requestHead) error {
	h := &q.h
	h.raw, h.fields = h.raw[:0], h.fields[:0]
	var ok bool
	if h.lines, ok = bufferedHead(br, h, h.lines, maxHeadBytes); ok {
		return q.parseLines()
	}
	line, err := readLine(br, h, true)
	if err == errHeadTooLarge {
		return &errBadRequest{http.StatusRequestURITooLong, "request line too long"}
	}
	if err != nil {
		return err
	}
	if err := q.parseRequestLine(h.bytes(line), line.start); err != nil {
		return err
	}
	if err := readFields(br, h); err != nil {
		return fieldsError(err)
	}
	return q.frame()
}

// fieldsError is the answer to a header section refused.
func fieldsError(err error) error {
	if err == errHeadTooLarge {
		return &errBadRequest{http.StatusRequestHeaderFieldsTooLarge, "request head larger than 256 KiB or 512 fields"}
	}
	if pe, ok := err.(*ProtocolError); ok {
		return badRequest(pe.msg)
	}
	return err
}

// parseLines parses a head that bufferedHead copied whole, as
// readRequestHead parses one read line by line.
func (q *requestHead) parseLines() error {
	h := &q.h
	if err := q.parseRequestLine(h.bytes(h.lines[0]), h.lines[0].start); err != nil {
		return err
	}
	for _, s := range h.lines[1:] {
		if _, err := h.addField(s); err != nil {
			return fieldsError(err)
		}
	}
	return q.frame()
}

func (q *requestHead) parseRequestLine(line []byte, at int32) error {
	// method SP request-target SP HTTP-version (RFC 9112 §3).
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 {
		return badRequest("malformed request line")
	}
	rest := line[sp1+1:]
	sp2 := bytes.IndexByte(rest, ' ')
	if sp2 <= 0 {
		return badRequest("malformed request line")
	}
	method, target, version := line[:sp1], rest[:sp2], rest[sp2+1:]
	if !httpsyntax.IsToken(method) {
		return badRequest("malformed method")
	}
	switch string(version) {
	case "HTTP/1.1":
		q.minor = 1
	case "HTTP/1.0":
		q.minor = 0
	default:
		return &errBadRequest{http.StatusHTTPVersionNotSupported, "unsupported HTTP version"}
	}
	for _, c := range target {
		if c <= ' ' || c == 0x7f {
			return badRequest("malformed request target")
		}
	}
	q.url = nil
	if len(target) > 0 && target[0] == '/' {
		if !validPath(target) {
			return badRequest("malformed request target")
		}
	} else {
		u, err := parseTarget(internMethod(method), string(target))
		if err != nil {
			return badRequest("malformed request target")
		}
		if u.User != nil {
			// RFC 9110 §4.2.4: userinfo from an untrusted source is an
			// error; a backend may take "a@b" for host a or for b.
			return badRequest("userinfo in the request target")
		}
		q.url = u
	}
	q.method = internMethod(method)
	q.target = span{at + int32(sp1+1), at + int32(sp1+1+sp2)}
	return nil
}

// rest lets go of what the request served holds (conn.rest): the field
// list's string, and the buffers a large head grew.
func (q *requestHead) rest() {
	q.h.shrink()
	q.list = Fields{spans: q.list.spans[:0]}
	if cap(q.list.spans) > 64 {
		q.list.spans = nil
	}
}

// internMethod returns the usual methods without allocating.
func internMethod(b []byte) string {
	for _, m := range [...]string{"GET", "POST", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"} {
		if string(b) == m {
			return m
		}
	}
	return string(b)
}

// frame applies RFC 9112 §6.3 to a request, more strictly than a
// response: a request with both Transfer-Encoding and Content-Length, with
// a coding other than chunked, or with several lengths is refused, since
// those are the shapes smuggling takes.
func (q *requestHead) frame() error {
	h := &q.h
	q.contentLength, q.chunked, q.expect100, q.host = 0, false, false, span{}
	q.closeConn = q.minor == 0
	hosts, lengths, codings := 0, 0, 0
	for _, f := range h.fields {
		name, value := h.bytes(f.name), h.bytes(f.value)
		switch {
		case asciiEqualFold(name, "Host"):
			hosts++
			q.host = f.value
			if !httpsyntax.ValidHost(value) {
				return badRequest("malformed Host header")
			}
		case asciiEqualFold(name, "Content-Length"):
			n, err := parseContentLength(value)
			if err != nil {
				return badRequest("bad Content-Length")
			}
			lengths++
			q.contentLength = n
		case asciiEqualFold(name, "Transfer-Encoding"):
			codings++
			if !asciiEqualFold(value, "chunked") {
				return &errBadRequest{http.StatusNotImplemented, "unsupported Transfer-Encoding"}
			}
			q.chunked = true
		case asciiEqualFold(name, "Connection"):
			eachToken(value, func(tok []byte) {
				switch {
				case asciiEqualFold(tok, "close"):
					q.closeConn = true
				case asciiEqualFold(tok, "keep-alive") && q.minor == 0:
					q.closeConn = false
				}
			})
		case asciiEqualFold(name, "Expect"):
			if asciiEqualFold(value, "100-continue") {
				q.expect100 = true
			} else {
				return &errBadRequest{http.StatusExpectationFailed, "unsupported Expect"}
			}
		}
	}
	switch {
	case lengths > 1 || codings > 1:
		return badRequest("repeated framing header")
	case lengths > 0 && codings > 0:
		return badRequest("both Content-Length and Transfer-Encoding")
	case codings > 0 && q.minor == 0:
		return badRequest("Transfer-Encoding in an HTTP/1.0 request")
	case hosts > 1:
		return badRequest("several Host headers")
	case hosts == 0 && q.minor == 1:
		return badRequest("missing Host header") // RFC 9112 §3.2
	}
	if q.chunked {
		q.contentLength = -1
	}
	if q.minor == 0 {
		q.expect100 = false
	}
	return nil
}

// ReadRequest reads one request head from br as the Server reads it, into
// a new *http.Request (the Server reuses one per connection); the body is
// left unread. It is for tests and fuzzers that compare what is done with
// a request on each server.
func ReadRequest(br *bufio.Reader) (*http.Request, error) {
	r, _, err := ReadRequestFields(br)
	return r, err
}

// ReadRequestFields is ReadRequest, with the request's fields in order as
// the Server's ResponseWriter gives them (RequestFields).
func ReadRequestFields(br *bufio.Reader) (*http.Request, *Fields, error) {
	var q requestHead
	if err := readRequestHead(br, &q); err != nil {
		return nil, nil, err
	}
	r := &http.Request{Header: http.Header{}, ProtoMajor: 1, Body: http.NoBody}
	q.fill(r)
	return r, &q.list, nil
}

// fill sets r's fields from q, reusing r and its header map. r.URL is
// set only for a target that is not origin-form. The target, names and
// values become substrings of one string, and header values share one
// slice array (two allocations per request).
func (q *requestHead) fill(r *http.Request) {
	clear(r.Header)
	all, hostAt := q.h.copyRequestHeader(r.Header, &q.list, q.target, q.host)
	r.Method = q.method
	r.RequestURI = all[:q.target.end-q.target.start]
	r.Host = ""
	if hostAt >= 0 {
		r.Host = all[hostAt : hostAt+int(q.host.end-q.host.start)]
	}
	// Origin form needs no URL: RequestURI says it all, at no cost. Other
	// forms (rare) carry the URL net/http would parse, and an absolute
	// form's authority is the host (RFC 9112 §3.2.2).
	r.URL = q.url
	if q.url != nil && q.url.Host != "" {
		r.Host = q.url.Host
	}
	r.ProtoMinor = q.minor
	r.Proto = "HTTP/1.1"
	if q.minor == 0 {
		r.Proto = "HTTP/1.0"
	}
	r.ContentLength = q.contentLength
	r.Close = q.closeConn
}

// Fields is a request's header section as the server read it, in the
// order it came, Host aside (it is Request.Host): names in canonical form
// (textproto.CanonicalMIMEHeaderKey's) and values, the strings of the
// request's header map. A proxy writes the request on from it in the
// client's order, without walking the map.
type Fields struct {
	all   string
	spans []field // in all
}

// Len is the number of fields.
func (f *Fields) Len() int { return len(f.spans) }

// At returns the i'th field's name and value.
func (f *Fields) At(i int) (name, value string) {
	s := f.spans[i]
	return f.all[s.name.start:s.name.end], f.all[s.value.start:s.value.end]
}

// copyRequestHeader stores every field in dst under its canonical name,
// except Host, which is Request.Host, as net/http does, and lists them in
// the order they came in list. The target, every canonical name and
// every value are copied into one string, returned, which starts with the
// target; hostAt is where the host value is in it (-1 for none). The
// names are made canonical in h.raw itself.
func (h *Head) copyRequestHeader(dst http.Header, list *Fields, target, host span) (all string, hostAt int) {
	total := int(target.end - target.start)
	for _, f := range h.fields {
		total += int(f.name.end-f.name.start) + int(f.value.end-f.value.start)
		canonicalize(h.bytes(f.name))
	}
	var sb strings.Builder
	sb.Grow(total)
	sb.Write(h.bytes(target))
	hostAt = -1
	for _, f := range h.fields {
		sb.Write(h.bytes(f.name))
		if f.value == host && host.end > host.start {
			hostAt = sb.Len()
		}
		sb.Write(h.bytes(f.value))
	}
	all = sb.String()
	list.all, list.spans = all, list.spans[:0]
	if len(h.fields) == 0 {
		return all, hostAt
	}
	vals := make([]string, len(h.fields))
	// seen has a bit for each name a field before had, by a small hash:
	// a name whose bit is clear is not in dst yet, and is stored without
	// looking for it first.
	var seen [4]uint64
	off := int32(target.end - target.start)
	for i, f := range h.fields {
		nl, vl := f.name.end-f.name.start, f.value.end-f.value.start
		at := field{name: span{off, off + nl}, value: span{off + nl, off + nl + vl}}
		off += nl + vl
		key := all[at.name.start:at.name.end]
		vals[i] = all[at.value.start:at.value.end]
		if key == "Host" {
			continue
		}
		list.spans = append(list.spans, at)
		bit := (uint(nl)*31 + uint(key[0])*7 + uint(key[nl-1])) & 255
		if seen[bit>>6]&(1<<(bit&63)) != 0 {
			if old, ok := dst[key]; ok {
				dst[key] = append(old, vals[i])
				continue
			}
		}
		seen[bit>>6] |= 1 << (bit & 63)
		dst[key] = vals[i : i+1 : i+1]
	}
	return all, hostAt
}

// canonicalize rewrites a field name (a token) in canonical form, as
// textproto.CanonicalMIMEHeaderKey spells it: a letter upper case at the
// start and after each '-', lower case elsewhere.
func canonicalize(name []byte) {
	upper := true
	for i, c := range name {
		if upper && 'a' <= c && c <= 'z' {
			name[i] = c - ('a' - 'A')
		} else if !upper && 'A' <= c && c <= 'Z' {
			name[i] = c + ('a' - 'A')
		}
		upper = c == '-'
	}
}

// parseTarget parses a target that is not origin-form as net/http's
// server does: CONNECT's authority form as a host alone (RFC 9112
// §3.2.3), anything else as a request URI (absolute form, "*").
func parseTarget(method, target string) (*url.URL, error) {
	if method != http.MethodConnect {
		return url.ParseRequestURI(target)
	}
	u, err := url.ParseRequestURI("http://" + target)
	if err != nil {
		return nil, err
	}
	u.Scheme = ""
	return u, nil
}

// validPath accepts the origin-form targets net/http's server accepts, so
// that the server and the backends' servers agree: a path whose
// percent-escapes are well formed (the query is not checked).
func validPath(t []byte) bool {
	path := t
	if i := bytes.IndexByte(t, '?'); i >= 0 {
		path = t[:i]
	}
	for i := 0; i < len(path); i++ {
		if path[i] == '%' {
			if i+2 >= len(path) || !isHex(path[i+1]) || !isHex(path[i+2]) {
				return false
			}
			i += 2
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
