// This file implements encoded slashes and the path checks.

package dataplane

import (
	"strings"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/matcher"
)

// The request path: one spelling for the router and the backend.
//
// A rule protects what its backend serves only if the backend reads a
// path as the router did. Backends decode, merge and resolve paths each
// their own way, so the proxy routes on one canonical form and forwards
// exactly that form; whatever the backend does to it then, it does to
// what the router matched. Every listener, protocol and mode (the proxy,
// standalone) takes the same steps, before a route is chosen:
//
//  1. matcher.NormalizePath: unreserved characters decoded and hex digits
//     upper-cased (RFC 3986 §6.2.2), repeated slashes merged, dot
//     segments removed (§5.2.4), "" read as "/";
//  2. refused with 400, on every listener, what no backend agrees on
//     (pathRefusal): an encoded NUL, a dot segment with parameters
//     ("..;x", which servlet containers read as ".."), and an overlong
//     UTF-8 sequence (a '/' or '.' in disguise to a lax decoder);
//  3. encoded slashes and backslashes ("%2F", "%5C"; a '\' as sent is
//     "%5C" after step 1), which RFC 3986 leaves to the application:
//     refused by default, read as '/' or kept, as the listener says
//     (proxycfg.Listener.EncodedSlashes, else the proxy's default).
//
// Rewrites, redirects, mirrors and the access log all start from the
// result.

// slashMode is a listener's EncodedSlashes, ordered from the most lenient
// to the strictest, so that listeners merged into one vhost take the
// largest; slashesUnset is a listener that says nothing.
type slashMode uint8

const (
	slashesUnset slashMode = iota
	slashesKeep
	slashesDecode
	slashesReject
)

// parseSlashMode reads a listener's (or the proxy's) setting; ok is false
// for a value that is none of them.
func parseSlashMode(s string) (m slashMode, ok bool) {
	switch s {
	case "":
		return slashesUnset, true
	case proxycfg.SlashesReject:
		return slashesReject, true
	case proxycfg.SlashesDecode:
		return slashesDecode, true
	case proxycfg.SlashesKeep:
		return slashesKeep, true
	}
	return slashesUnset, false
}

// validSlashMode reports whether s is a listener's EncodedSlashes value,
// or empty.
func validSlashMode(s string) bool {
	_, ok := parseSlashMode(s)
	return ok
}

// pathRefusal says why a normalised path is refused on every listener,
// or "" when it is not. It looks further only at paths holding '%' or ';'.
func pathRefusal(p string) string {
	if strings.IndexByte(p, '%') >= 0 {
		if strings.Contains(p, "%00") {
			return "the request path holds an encoded NUL (%00)"
		}
		if overlongUTF8(p) {
			return "the request path holds an overlong UTF-8 sequence"
		}
	}
	if strings.IndexByte(p, ';') >= 0 && dotSegmentWithParams(p) {
		return `the request path holds a dot segment with parameters (such as "..;x")`
	}
	return ""
}

// overlongUTF8 reports whether the normalised path p (every byte above
// 0x7F percent-encoded, in upper-case hex) holds the start of an overlong
// UTF-8 sequence: a lead byte C0 or C1, E0 followed by 80-9F, or F0
// followed by 80-8F (RFC 3629 §3). No valid text is spelt so; old
// decoders read "%C0%AF" as '/'.
func overlongUTF8(p string) bool {
	for i := 0; i+2 < len(p); i++ {
		if p[i] != '%' {
			continue
		}
		lead := p[i+1 : i+3]
		switch lead {
		case "C0", "C1":
			return true
		case "E0", "F0":
			if i+5 < len(p) && p[i+3] == '%' {
				if c := p[i+4]; lead == "E0" && (c == '8' || c == '9') || lead == "F0" && c == '8' {
					return true
				}
			}
		}
		i += 2
	}
	return false
}

// dotSegmentWithParams reports whether a segment of p is "." or ".."
// followed by ';' and parameters: servlet containers (Tomcat, Jetty)
// drop a segment's parameters and then read it as a dot segment, so
// "/public/..;/admin" is "/admin" to them.
func dotSegmentWithParams(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if name, _, ok := strings.Cut(seg, ";"); ok && (name == "." || name == "..") {
			return true
		}
	}
	return false
}

// hasEncodedSlash reports whether the normalised path p holds "%2F" or
// "%5C" (NormalizePath upper-cases the hex and escapes a literal '\').
func hasEncodedSlash(p string) bool {
	if strings.IndexByte(p, '%') < 0 {
		return false
	}
	return strings.Contains(p, "%2F") || strings.Contains(p, "%5C")
}

// decodeSlashes reads the normalised path p's encoded slashes and
// backslashes as '/', and normalises the result again: "/a%2F..%2Fb" is
// "/b".
func decodeSlashes(p string) string {
	p = strings.ReplaceAll(p, "%2F", "/")
	p = strings.ReplaceAll(p, "%5C", "/")
	return matcher.NormalizePath(p)
}
