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
// the listener's scheme.

// forgeable lists the request headers dropped on an untrusted listener.
func forgeable(key string) bool {
	switch key {
	case "Forwarded", "X-Forwarded-Host", "X-Forwarded-Port", "X-Real-Ip", "True-Client-Ip",
		"Cf-Connecting-Ip", "Cf-Connecting-Ipv6", "Cf-Ipcountry", "Cf-Ray", "Cf-Visitor", "Cf-Warp-Tag-Id",
		"Cf-Worker", "Cdn-Loop":
		return true
	}
	return false
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
