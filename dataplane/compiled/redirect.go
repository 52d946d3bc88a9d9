// This file compiles the RequestRedirect filter.

package compiled

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// redirectLocation builds the absolute URL of a Location header from its
// parts:
//
//   - scheme is written as given; "" means "http".
//   - host is a DNS name or an IP address without port. An IPv6 address
//     (a host with ':' that is not already in brackets) is bracketed.
//   - port is left out when it is 0 or less, or the scheme's default (80
//     for http, 443 for https, compared case-insensitively), as the
//     Gateway API asks; any other port is written.
//   - path is the escaped path; "" becomes "/" and a path without its
//     leading "/" gets one, so the host never runs into the path.
//   - rawQuery, when not empty, follows a "?" as given (already escaped).
//
// It allocates the result once.
func redirectLocation(scheme, host string, port int, path, rawQuery string) string {
	if scheme == "" {
		scheme = "http"
	}
	if port > 0 && port == defaultPortOf(scheme) {
		port = 0
	}
	var portBuf [20]byte
	var portStr []byte
	if port > 0 {
		portStr = strconv.AppendInt(portBuf[:0], int64(port), 10)
	}
	bracket := strings.IndexByte(host, ':') >= 0 && !strings.HasPrefix(host, "[")
	slash := path == "" || path[0] != '/'

	n := len(scheme) + len("://") + len(host) + len(path)
	if bracket {
		n += 2
	}
	if portStr != nil {
		n += 1 + len(portStr)
	}
	if slash {
		n++
	}
	if rawQuery != "" {
		n += 1 + len(rawQuery)
	}

	var b strings.Builder
	b.Grow(n)
	b.WriteString(scheme)
	b.WriteString("://")
	if bracket {
		b.WriteByte('[')
	}
	b.WriteString(host)
	if bracket {
		b.WriteByte(']')
	}
	if portStr != nil {
		b.WriteByte(':')
		b.Write(portStr)
	}
	if slash {
		b.WriteByte('/')
	}
	b.WriteString(path)
	if rawQuery != "" {
		b.WriteByte('?')
		b.WriteString(rawQuery)
	}
	return b.String()
}

// defaultPortOf returns the well-known port of http (80) and https (443),
// matching the scheme case-insensitively, or 0 for another scheme.
func defaultPortOf(scheme string) int {
	switch {
	case strings.EqualFold(scheme, "http"):
		return 80
	case strings.EqualFold(scheme, "https"):
		return 443
	}
	return 0
}

// Redirect is a compiled RequestRedirect filter for one route match.
type Redirect struct {
	path   pathEdit
	scheme string // "http", "https" or "" for the request's scheme
	host   string // "" for the request's host
	port   int    // 0 when unset
	status int    // 301, 302, 303, 307 or 308
}

// compileRedirect validates r and compiles it for the match whose
// PathPrefix value is matchedPrefix ("" when the match is not a PathPrefix
// match; that is an error only for ReplacePrefixMatch). The status
// defaults to 302; the scheme must be http or https (any case; it is
// stored lower-case), the port 1–65535, the hostname a DNS name without
// port.
func compileRedirect(r *proxycfg.Redirect, matchedPrefix string) (*Redirect, error) {
	if r == nil {
		return nil, errors.New("requestRedirect: missing filter body")
	}
	rd := &Redirect{status: r.StatusCode, port: r.Port, host: r.Hostname}
	switch rd.status {
	case 301, 302, 303, 307, 308:
	default:
		return nil, fmt.Errorf("requestRedirect: unsupported statusCode %d (want 301, 302, 303, 307 or 308)", r.StatusCode)
	}
	switch {
	case r.Scheme == "":
	case strings.EqualFold(r.Scheme, "http"):
		rd.scheme = "http"
	case strings.EqualFold(r.Scheme, "https"):
		rd.scheme = "https"
	default:
		return nil, fmt.Errorf("requestRedirect: unsupported scheme %q (want http or https)", r.Scheme)
	}
	if r.Port < 0 || r.Port > 65535 {
		return nil, fmt.Errorf("requestRedirect: port %d is out of range 1-65535", r.Port)
	}
	if r.Hostname != "" && !isPreciseHostname(r.Hostname) {
		return nil, fmt.Errorf("requestRedirect: hostname %q is not a DNS name (no port, no wildcard)", r.Hostname)
	}
	pe, err := compilePathEdit(r.Path, matchedPrefix)
	if err != nil {
		return nil, fmt.Errorf("requestRedirect: %w", err)
	}
	rd.path = pe
	return rd, nil
}

// Location returns the Location header value and the status to answer.
//
// reqScheme is the scheme the client used ("http" or "https"; the caller
// works it out, trusting X-Forwarded-Proto only from cloudflared), reqHost
// the request's Host (a port in it is dropped), listenerPort the Gateway
// listener's port, path the normalised escaped request path and rawQuery
// the escaped query, kept as it is.
//
// The scheme is the filter's, else the request's. The port follows the
// Gateway API exactly: the filter's port when set; else, when the filter
// sets a scheme, that scheme's well-known port (http 80, https 443); else
// the listener's port. redirectLocation then leaves the port out when it
// is the final scheme's default. The host is the filter's hostname, else
// the request's host. The path is edited by the filter's path modifier,
// if any.
func (rd *Redirect) Location(reqScheme, reqHost string, listenerPort int, path, rawQuery string) (loc string, status int) {
	scheme := rd.scheme
	if scheme == "" {
		switch {
		case reqScheme == "" || strings.EqualFold(reqScheme, "http"):
			scheme = "http"
		case strings.EqualFold(reqScheme, "https"):
			scheme = "https"
		default:
			scheme = reqScheme
		}
	}
	port := rd.port
	if port == 0 {
		if rd.scheme != "" {
			port = defaultPortOf(rd.scheme)
		} else {
			port = listenerPort
		}
	}
	host := rd.host
	if host == "" {
		host = httpsyntax.HostWithoutPort(reqHost)
	}
	return redirectLocation(scheme, host, port, rd.path.apply(path), rawQuery), rd.status
}
