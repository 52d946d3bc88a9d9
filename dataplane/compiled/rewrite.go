// This file compiles the URLRewrite filter and path edits.

package compiled

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// This file holds the path and hostname edits shared by the URLRewrite and
// RequestRedirect filters (HTTPPathModifier, PreciseHostname) and the
// compiled URLRewrite filter itself.

// replacePrefix computes the Gateway API's ReplacePrefixMatch path: the part
// of path matched by the PathPrefix value matchedPrefix is replaced by
// replacement. path is the normalised request path (it begins with "/");
// the caller has already matched it against matchedPrefix. replacement is
// empty or begins with "/" (compileRewrite and compileRedirect check it);
// another replacement is used as given.
//
// The rules, in the order they are applied:
//
//  1. Trailing slashes of matchedPrefix are ignored, as PathPrefix matching
//     ignores them: "/foo/" and "/foo" both match "/foo", "/foo/" and
//     "/foo/bar", and "/" (which trims to "") matches every path.
//  2. The prefix matches whole path elements: path must equal the trimmed
//     prefix or continue it with "/". A path it does not match ("/foobar"
//     for "/foo") is returned unchanged; that is a caller bug, not a
//     request error, and leaving the path alone is the safe answer.
//  3. The rest of the path after the prefix is kept as it is: "" (the path
//     was the prefix), "/" (the path was the prefix and a slash) or
//     "/bar...". Repeated slashes in the rest are the request's own and stay.
//  4. Trailing slashes of replacement are ignored too, so "/xyz" and "/xyz/"
//     replace alike and "/" acts as the empty replacement. Because the
//     trimmed replacement never ends in "/" and the rest is empty or begins
//     with "/", the join never makes "//".
//  5. The result is the trimmed replacement followed by the rest; when both
//     are empty (the whole path was stripped) it is "/", never "".
//
// So for prefix "/foo" and replacement "/xyz": "/foo/bar" → "/xyz/bar",
// "/foo" → "/xyz", "/foo/" → "/xyz/"; and for replacement "/" (or ""):
// "/foo/bar" → "/bar", "/foo/" → "/", "/foo" → "/".
//
// replacePrefix does not allocate when the result is path, replacement (or
// a part of one of them) or "/"; otherwise it allocates the result once.
func replacePrefix(path, matchedPrefix, replacement string) string {
	return replaceTrimmedPrefix(path, trimPathSlashes(matchedPrefix), trimPathSlashes(replacement))
}

// trimPathSlashes removes every trailing "/" ("/" itself becomes "").
func trimPathSlashes(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

// replaceTrimmedPrefix is replacePrefix on a prefix and replacement already
// stripped of trailing slashes (rules 2–5 of replacePrefix).
func replaceTrimmedPrefix(path, prefix, repl string) string {
	if len(path) < len(prefix) || path[:len(prefix)] != prefix {
		return path
	}
	rest := path[len(prefix):]
	if rest != "" && rest[0] != '/' {
		return path // "/foobar" is not under "/foo"
	}
	switch {
	case rest == "" && repl == "":
		return "/"
	case repl == prefix:
		return path
	case rest == "":
		return repl
	case repl == "":
		return rest
	}
	return repl + rest
}

// Path edit kinds.
const (
	pathKeep    uint8 = iota // no path modifier
	pathFull                 // ReplaceFullPath
	pathReplace              // ReplacePrefixMatch
)

// pathEdit is a compiled HTTPPathModifier. Both filters that modify paths
// use it; it is compiled once per route match because the prefix it
// replaces is that match's PathPrefix value.
type pathEdit struct {
	kind uint8
	// value is the full path (pathFull) or the replacement with trailing
	// slashes trimmed (pathReplace).
	value string
	// prefix is the matched PathPrefix value with trailing slashes trimmed.
	prefix string
}

// compilePathEdit validates pm and precomputes its values. pm may be nil
// (no path change). matchedPrefix is the PathPrefix value of the match the
// filter serves; it is required for ReplacePrefixMatch, which the Gateway
// API allows only with PathPrefix matches.
//
// Values are made safe for a request target: a byte that may not appear in
// a URL path (space, '?', '#', control and non-ASCII bytes, a '%' that does
// not start an escape) is percent-encoded, so a replacement can never turn
// part of the path into a query or fragment.
func compilePathEdit(pm *proxycfg.PathModifier, matchedPrefix string) (pathEdit, error) {
	if pm == nil {
		return pathEdit{}, nil
	}
	switch pm.Type {
	case proxycfg.ReplaceFullPath:
		if pm.ReplacePrefixMatch != "" {
			return pathEdit{}, errors.New("path modifier: replacePrefixMatch is set but type is ReplaceFullPath")
		}
		if !strings.HasPrefix(pm.ReplaceFullPath, "/") {
			return pathEdit{}, fmt.Errorf("path modifier: replaceFullPath %q must begin with \"/\"", pm.ReplaceFullPath)
		}
		return pathEdit{kind: pathFull, value: escapePathValue(pm.ReplaceFullPath)}, nil
	case proxycfg.ReplacePrefixPath:
		if pm.ReplaceFullPath != "" {
			return pathEdit{}, errors.New("path modifier: replaceFullPath is set but type is ReplacePrefixMatch")
		}
		if matchedPrefix == "" {
			return pathEdit{}, errors.New("path modifier: ReplacePrefixMatch needs a PathPrefix match")
		}
		if !strings.HasPrefix(matchedPrefix, "/") {
			return pathEdit{}, fmt.Errorf("path modifier: matched prefix %q must begin with \"/\"", matchedPrefix)
		}
		r := pm.ReplacePrefixMatch
		if r != "" && r[0] != '/' {
			return pathEdit{}, fmt.Errorf("path modifier: replacePrefixMatch %q must be empty or begin with \"/\"", r)
		}
		return pathEdit{
			kind:   pathReplace,
			value:  trimPathSlashes(escapePathValue(r)),
			prefix: trimPathSlashes(matchedPrefix),
		}, nil
	case "":
		return pathEdit{}, errors.New("path modifier: type is required")
	default:
		return pathEdit{}, fmt.Errorf("path modifier: unsupported type %q", pm.Type)
	}
}

// apply returns the edited path.
func (pe *pathEdit) apply(path string) string {
	switch pe.kind {
	case pathFull:
		return pe.value
	case pathReplace:
		return replaceTrimmedPrefix(path, pe.prefix, pe.value)
	}
	return path
}

// pathByteOK reports whether b may appear literally in an escaped URL path:
// RFC 3986 pchar (unreserved, sub-delims, ':' and '@') and '/'.
func pathByteOK(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	switch b {
	case '-', '.', '_', '~', // unreserved
		'!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', // sub-delims
		':', '@', '/':
		return true
	}
	return false
}

func pathHexDigit(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
}

// escapePathValue percent-encodes the bytes of s that may not appear in an
// escaped path, keeping existing %XX escapes. It returns s itself when
// nothing needs encoding.
func escapePathValue(s string) string {
	ok := func(i int) bool {
		b := s[i]
		if b == '%' {
			return i+2 < len(s) && pathHexDigit(s[i+1]) && pathHexDigit(s[i+2])
		}
		return pathByteOK(b)
	}
	i := 0
	for i < len(s) && ok(i) {
		i++
	}
	if i == len(s) {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		if ok(i) {
			b.WriteByte(s[i])
			continue
		}
		c := s[i]
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// isPreciseHostname reports whether s is a Gateway API PreciseHostname: a
// DNS name of dot-separated labels of letters, digits and '-', each 1–63
// bytes that begin and end with a letter or digit, 253 bytes at most. There
// is no port, no trailing dot and no wildcard. Upper-case letters are
// accepted (hostnames compare case-insensitively).
func isPreciseHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
			continue
		}
		label := s[start:i]
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		start = i + 1
	}
	return true
}

// Rewrite is a compiled URLRewrite filter for one route match.
type Rewrite struct {
	path pathEdit
	host string // "" keeps the request's Host
}

// compileRewrite validates r and compiles it for the match whose PathPrefix
// value is matchedPrefix ("" when the match is not a PathPrefix match; that
// is an error only for ReplacePrefixMatch).
func compileRewrite(r *proxycfg.Rewrite, matchedPrefix string) (*Rewrite, error) {
	if r == nil {
		return nil, errors.New("urlRewrite: missing filter body")
	}
	if r.Hostname != "" && !isPreciseHostname(r.Hostname) {
		return nil, fmt.Errorf("urlRewrite: hostname %q is not a DNS name (no port, no wildcard)", r.Hostname)
	}
	pe, err := compilePathEdit(r.Path, matchedPrefix)
	if err != nil {
		return nil, fmt.Errorf("urlRewrite: %w", err)
	}
	return &Rewrite{path: pe, host: r.Hostname}, nil
}

// Apply returns the path and Host header to forward. The query is not part
// of path and is kept by the caller.
func (rw *Rewrite) Apply(path, host string) (newPath, newHost string) {
	newPath = rw.path.apply(path)
	newHost = host
	if rw.host != "" {
		newHost = rw.host
	}
	return newPath, newHost
}
