// This file implements the forwarding headers and the ones a client could
// forge.

package dataplane

import (
	"net/http"
	"strings"
)

// Forwarding headers.
//
// On the origin listener the peer is cloudflared, which passes on what
// Cloudflare's edge measured: the client address in Cf-Connecting-Ip and
// X-Forwarded-For, the client's scheme in X-Forwarded-Proto. Those are
// kept, and the peer's address is appended to X-Forwarded-For as every
// proxy does (the de facto convention; RFC 7239 describes Forwarded, which
// is not what backends read).
//
// On a direct listener the peer is the client itself, who could claim any
// address in those headers, so they are dropped and rebuilt from what the
// connection shows: X-Forwarded-For is the peer address, X-Forwarded-Proto
// the listener's scheme. Every header Cloudflare's edge vouches for goes
// too (see forgeable).

// forgeable reports whether an incoming header, on a listener that does
// not trust its peer, is one a client could use to pass for Cloudflare's
// edge or for another client: every Cf-* header (the edge sets them: the
// visitor's address and location, Cloudflare Access's identity and
// token, ...), the forwarding headers, and any name that becomes one of
// those once '_' is read as '-'. Backends do read it so: CGI, WSGI, PHP
// and nginx with underscores_in_headers fold both into '_', so that
// Cf_Connecting_Ip would arrive as HTTP_CF_CONNECTING_IP.
func forgeable(key string) bool {
	if len(key) >= 3 && lowerASCII(key[0]) == 'c' && lowerASCII(key[1]) == 'f' && (key[2] == '-' || key[2] == '_') {
		return true
	}
	for _, name := range forwardingHeaders {
		if sameFieldName(key, name) {
			return true
		}
	}
	return false
}

// forwardingHeaders are what proxies and CDNs set to say where a request
// came from. X-Forwarded-For and X-Forwarded-Proto are rebuilt by the
// proxy itself on every listener (see ownAlias).
var forwardingHeaders = [...]string{
	"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Port", "X-Forwarded-Proto",
	"X-Real-Ip", "True-Client-Ip", "Cdn-Loop",
}

// ownAlias reports whether key is a spelling of a header the proxy writes
// itself (X-Forwarded-For, X-Forwarded-Proto) with '_' for '-': dropped on
// every listener, or a backend folding '_' into '-' would see the
// client's value beside the proxy's. The exact names are replaced, not
// dropped (skipOutgoing).
func ownAlias(key string) bool {
	if len(key) != len("X-Forwarded-For") && len(key) != len("X-Forwarded-Proto") {
		return false
	}
	return key != "X-Forwarded-For" && key != "X-Forwarded-Proto" &&
		(sameFieldName(key, "X-Forwarded-For") || sameFieldName(key, "X-Forwarded-Proto"))
}

// sameFieldName reports whether key names the field name (canonical, with
// '-') when case is ignored and '_' is read as '-'.
func sameFieldName(key, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '_' {
			c = '-'
		}
		if lowerASCII(c) != lowerASCII(name[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// peerIP is the address part of r.RemoteAddr, without allocating.
func peerIP(remoteAddr string) string {
	i := strings.LastIndexByte(remoteAddr, ':')
	if i < 0 {
		return remoteAddr
	}
	h := remoteAddr[:i]
	if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
		h = h[1 : len(h)-1]
	}
	return h
}

// clientScheme is the scheme the client used: the listener's own, or on a
// trusted listener what X-Forwarded-Proto says (cloudflared sends the
// edge's "https").
func clientScheme(r *http.Request, trusted bool) string {
	if trusted {
		if v := r.Header["X-Forwarded-Proto"]; len(v) > 0 {
			switch v[0] {
			case "https":
				return "https"
			case "http":
				return "http"
			}
		}
	}
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// clientIP is the client's address: Cf-Connecting-Ip when the peer is
// trusted (cloudflared sets it to the visitor's address), else the peer.
func clientIP(r *http.Request, trusted bool) string {
	if trusted {
		if ip := firstValue(r.Header, "Cf-Connecting-Ip"); ip != "" {
			return ip
		}
	}
	return peerIP(r.RemoteAddr)
}
