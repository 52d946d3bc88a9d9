package http1

import (
	"bytes"
	"iter"
	"net/textproto"
	"strings"
)

// The grammar of HTTP fields (RFC 9110 §5) and request lines (RFC 9112
// §3), shared by the server, the upstream client and the proxy's own
// checks, so that every side accepts exactly the same bytes.

// IsToken reports whether s is an RFC 9110 token (1*tchar): what a method
// and a field name must be.
func IsToken(s string) bool {
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

// ValidFieldValue rejects control characters other than HTAB (RFC 9110
// §5.5), which is what stops a value from splitting a message into two;
// bytes from 0x80 up (obs-text) pass.
func ValidFieldValue(b []byte) bool {
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

// ValidTarget reports whether a request target (path and query, as sent
// in a request line) holds no byte a request line cannot carry: nothing
// at or below space (0x20), and no DEL (0x7f). A target that passes cannot
// end the request line early or start a second one (RFC 9112 §3).
func ValidTarget(t string) bool {
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// ValidHost reports whether h may be a Host value or an :authority: the
// bytes of an RFC 3986 reg-name, IP literal and port, exactly those
// net/http's server accepts. Not '@': a Host names no userinfo (RFC 9110
// §7.2), and a backend may read "a@b" as host b.
func ValidHost(h string) bool { return validHost(h) }

func validHost[T string | []byte](h T) bool {
	for i := 0; i < len(h); i++ {
		if !hostByte[h[i]] {
			return false
		}
	}
	return true
}

var hostByte = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-32] = true, true
	}
	for _, c := range "-._~!$&'()*+,;=:[]%" {
		t[c] = true
	}
	return t
}()

// HopByHop reports whether a canonical header name is connection-specific
// (RFC 9110 §7.6.1) and so never forwarded as is.
func HopByHop(key string) bool {
	switch key {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer",
		"Transfer-Encoding", "Upgrade", "Proxy-Authenticate", "Proxy-Authorization":
		return true
	}
	return false
}

// TrailerAllowed reports whether a field (canonical name) may be passed
// on in a trailer section. RFC 9110 §6.5.1 forbids trailers that frame
// the message, route it, authenticate, control caching or describe the
// content, since a recipient acts on those before the body; these are the
// names net/http refuses as trailers, and the cookie fields, which set
// state a client must not learn after the fact.
func TrailerAllowed(key string) bool {
	switch key {
	case "Authorization", "Cache-Control", "Connection", "Content-Encoding", "Content-Length",
		"Content-Range", "Content-Type", "Cookie", "Expect", "Host", "Keep-Alive", "Max-Forwards",
		"Pragma", "Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection", "Range", "Realm",
		"Set-Cookie", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Www-Authenticate":
		return false
	}
	return true
}

// ListElems yields the elements of a comma-separated field value (RFC
// 9110 §5.6.1), trimmed of spaces and tabs, skipping empty ones.
func ListElems(s string) iter.Seq[string] {
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

// HasToken reports whether a comma-separated field holds tok, in any
// case. It also answers whether a field is named in Connection (RFC 9110
// §7.6.1: such fields are hop-by-hop).
func HasToken(vals []string, tok string) bool {
	for _, v := range vals {
		for elem := range ListElems(v) {
			if strings.EqualFold(elem, tok) {
				return true
			}
		}
	}
	return false
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

// commonKeys maps the spellings of frequent fields to their canonical
// strings, so the usual names cost no allocation.
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
		// Request fields, for the server.
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

func truncate(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}
