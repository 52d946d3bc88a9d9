// This file implements helpers for field bytes: tokens, case, canonical
// keys.

package http1

import (
	"bytes"
	"net/textproto"
)

// The grammar itself (tokens, field values, targets, hosts) is package
// httpsyntax, shared with the proxy's own checks; here are the parser's
// byte-level helpers.

// eachToken calls f with each element of a comma-separated field value.
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
		"Range", "Referer", "Sec-Ch-Ua", "Sec-Ch-Ua-Mobile", "Sec-Ch-Ua-Platform", "Sec-Fetch-Dest",
		"Sec-Fetch-Mode", "Sec-Fetch-Site", "Sec-Fetch-User",
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
