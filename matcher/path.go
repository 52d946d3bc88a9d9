// This file implements NormalizePath.

package matcher

import "strings"

// NormalizePath returns the canonical form of an escaped request path, the
// form Match expects and Compile gives to Exact and PathPrefix values:
//
//   - percent-encodings of unreserved characters are decoded and other
//     percent-encodings use upper-case hex (RFC 3986 §6.2.2.1–2), so
//     "/%7euser" and "/~user" are the same path;
//   - a byte that may not appear literally in a path is percent-encoded, and
//     a '%' that does not start an escape becomes "%25";
//   - repeated slashes are merged into one, so "//admin" is "/admin": RFC
//     3986 makes "//" an empty segment, but the file servers and frameworks
//     behind a proxy (lighttpd, nginx, Python's http.server, Go's
//     http.FileServer, Apache) merge them, and a router that kept them
//     would match another rule than the one the backend serves;
//   - "." and ".." segments are removed (RFC 3986 §5.2.4), including ones
//     spelt "%2E", so "/public/../admin" cannot slip past a rule on "/admin".
//     Slashes are merged first, as those servers do: "/a//../b" is "/b";
//   - "" becomes "/".
//
// Escaped slashes ("%2F") and backslashes ("%5C", which a literal '\'
// becomes) stay escaped: what they mean is the proxy's decision, per
// listener, before it routes. NormalizePath returns p itself, without
// allocating, when p is already canonical.
func NormalizePath(p string) string {
	if needsEscapeFix(p) {
		p = fixEscapes(p) // decodes "%2E" too, so dots are literal below
	}
	if strings.Contains(p, "//") {
		p = mergeSlashes(p)
	}
	if hasDotSegment(p) {
		p = removeDotSegments(p)
	}
	if p == "" {
		return "/"
	}
	return p
}

// pathLiteral reports which bytes stand for themselves in a canonical path:
// RFC 3986 pchar (unreserved, sub-delims, ':' and '@') plus '/'.
var pathLiteral = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/") {
		t[c] = true
	}
	return t
}()

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

const upperHex = "0123456789ABCDEF"

// needsEscapeFix reports whether fixEscapes would change p.
func needsEscapeFix(p string) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c != '%' {
			if !pathLiteral[c] {
				return true
			}
			continue
		}
		if i+2 >= len(p) {
			return true
		}
		hi, ok1 := unhex(p[i+1])
		lo, ok2 := unhex(p[i+2])
		if !ok1 || !ok2 || isUnreserved(hi<<4|lo) ||
			('a' <= p[i+1] && p[i+1] <= 'f') || ('a' <= p[i+2] && p[i+2] <= 'f') {
			return true
		}
		i += 2
	}
	return false
}

// fixEscapes applies the percent-encoding rules of NormalizePath.
func fixEscapes(p string) string {
	var b strings.Builder
	b.Grow(len(p) + 8)
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '%' && i+2 < len(p) {
			hi, ok1 := unhex(p[i+1])
			lo, ok2 := unhex(p[i+2])
			if ok1 && ok2 {
				if d := hi<<4 | lo; isUnreserved(d) {
					b.WriteByte(d)
				} else {
					b.WriteByte('%')
					b.WriteByte(upperHex[hi])
					b.WriteByte(upperHex[lo])
				}
				i += 2
				continue
			}
		}
		if c == '%' || !pathLiteral[c] {
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// mergeSlashes replaces every run of slashes in p with one.
func mergeSlashes(p string) string {
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && i > 0 && p[i-1] == '/' {
			continue
		}
		out = append(out, p[i])
	}
	return string(out)
}

// hasDotSegment reports whether p, with escapes already fixed, has a "."
// or ".." segment.
func hasDotSegment(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// removeDotSegments is RFC 3986 §5.2.4 on a path whose escapes are already
// canonical, so dots only appear literally.
func removeDotSegments(p string) string {
	in := p
	out := make([]byte, 0, len(p))
	for len(in) > 0 {
		switch {
		case strings.HasPrefix(in, "../"): // A
			in = in[3:]
		case strings.HasPrefix(in, "./"):
			in = in[2:]
		case strings.HasPrefix(in, "/./"): // B
			in = in[2:]
		case in == "/.":
			in = "/"
		case strings.HasPrefix(in, "/../"): // C
			in = in[3:]
			out = dropLastSegment(out)
		case in == "/..":
			in = "/"
			out = dropLastSegment(out)
		case in == "." || in == "..": // D
			in = ""
		default: // E: move the first segment, with its leading "/", to out.
			n := 0
			if in[0] == '/' {
				n = 1
			}
			if j := strings.IndexByte(in[n:], '/'); j >= 0 {
				n += j
			} else {
				n = len(in)
			}
			out = append(out, in[:n]...)
			in = in[n:]
		}
	}
	return string(out)
}

// dropLastSegment removes the last "/segment" (or bare segment) from out.
func dropLastSegment(out []byte) []byte {
	if i := lastSlash(out); i >= 0 {
		return out[:i]
	}
	return out[:0]
}

func lastSlash(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '/' {
			return i
		}
	}
	return -1
}
