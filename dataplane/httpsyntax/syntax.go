// Package httpsyntax is the grammar of HTTP fields (RFC 9110 §5) and
// request lines (RFC 9112 §3): what a token, a field value, a request
// target and a host may hold, which fields are hop-by-hop, how a
// comma-separated list splits, and whether Accept-Encoding takes gzip.
//
// It is shared by the HTTP/1.1 server and client (package http1), the
// compiled filters (package compiled), the proxy's own checks, and the
// servers that answer gzip (the proxy's metrics, the controller's config
// server), so that every side reads exactly the same bytes alike. It has no state and no
// dependency beyond the standard library.
package httpsyntax

import (
	"iter"
	"strings"
)

// IsToken reports whether s is an RFC 9110 token (1*tchar): what a method
// and a field name must be.
func IsToken[T string | []byte](s T) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenChar[s[i]] {
			return false
		}
	}
	return true
}

// ValidFieldValue rejects control characters other than HTAB (RFC 9110
// §5.5), which is what stops a value from splitting a message into two;
// bytes from 0x80 up (obs-text) pass.
//
// Eight bytes are looked at together while none of them is below a space
// or DEL (the word tests of "Bit Twiddling Hacks", hasless and haszero:
// exact, a word passes only if each of its bytes would); from the first
// word that holds such a byte on, bytes are looked at one by one, so a
// tab costs only the speed. A request's header values are most of its
// head, and every one is checked.
func ValidFieldValue[T string | []byte](b T) bool {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := uint64(b[i]) | uint64(b[i+1])<<8 | uint64(b[i+2])<<16 | uint64(b[i+3])<<24 |
			uint64(b[i+4])<<32 | uint64(b[i+5])<<40 | uint64(b[i+6])<<48 | uint64(b[i+7])<<56
		del := w ^ (ones8 * 0x7f) // a zero byte where w has DEL
		if (w-ones8*' ')&^w&highs8 != 0 || (del-ones8)&^del&highs8 != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		c := b[i]
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// ones8 and highs8 are the bytes 0x01 and 0x80 in each byte of a word.
const (
	ones8  = 0x0101010101010101
	highs8 = 0x8080808080808080
)

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
func ValidHost[T string | []byte](h T) bool {
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

// HostWithoutPort returns the host part of a Host header value: the port, if
// any, is cut off. A bracketed IPv6 literal keeps its brackets
// ("[::1]:8080" → "[::1]"); a bare IPv6 address (more than one ':') is
// returned whole, having no port to cut.
func HostWithoutPort(hostport string) string {
	if strings.HasPrefix(hostport, "[") {
		if i := strings.IndexByte(hostport, ']'); i >= 0 {
			return hostport[:i+1]
		}
		return hostport
	}
	i := strings.IndexByte(hostport, ':')
	if i < 0 || strings.IndexByte(hostport[i+1:], ':') >= 0 {
		return hostport
	}
	return hostport[:i]
}
