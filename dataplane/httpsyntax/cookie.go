// This file implements the Cookie field's grammar.

package httpsyntax

import "strings"

// CookieValue is the value of the first non-empty cookie called name in
// the Cookie field values lines (RFC 6265 §5.4: "name=value" pairs split
// by ';', spaces and tabs around each trimmed, one pair of surrounding
// double quotes removed), or "" when there is none. It allocates nothing.
func CookieValue(lines []string, name string) string {
	for _, line := range lines {
		for line != "" {
			var part string
			part, line = nextPair(line)
			eq := strings.IndexByte(part, '=')
			if eq < 0 || TrimOWS(part[:eq]) != name {
				continue
			}
			v := TrimOWS(part[eq+1:])
			if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
				v = v[1 : len(v)-1]
			}
			if v != "" {
				return v
			}
		}
	}
	return ""
}

// TrimOWS trims spaces and tabs (RFC 9110 §5.6.3's OWS) at both ends.
func TrimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// HasCookie reports whether a cookie named name, ASCII case ignored, is
// among the Cookie field lines.
func HasCookie(lines []string, name string) bool {
	for _, line := range lines {
		for line != "" {
			var part string
			part, line = nextPair(line)
			if n, _, ok := strings.Cut(part, "="); ok && strings.EqualFold(TrimOWS(n), name) {
				return true
			}
		}
	}
	return false
}

// WithoutCookie returns the cookies of the Cookie field lines, as one
// field value (RFC 6265 §5.4: pairs joined with "; "), without those named
// name, ASCII case ignored. Pairs are kept as they came, empty ones
// dropped.
func WithoutCookie(lines []string, name string) string {
	var b strings.Builder
	for _, line := range lines {
		for line != "" {
			var part string
			part, line = nextPair(line)
			part = TrimOWS(part)
			if part == "" {
				continue
			}
			if n, _, ok := strings.Cut(part, "="); ok && strings.EqualFold(TrimOWS(n), name) {
				continue
			}
			if b.Len() > 0 {
				b.WriteString("; ")
			}
			b.WriteString(part)
		}
	}
	return b.String()
}

// nextPair splits a Cookie field value at its first ';': the pair before
// it, and the rest.
func nextPair(line string) (pair, rest string) {
	if i := strings.IndexByte(line, ';'); i >= 0 {
		return line[:i], line[i+1:]
	}
	return line, ""
}
