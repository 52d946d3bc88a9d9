// This file compiles session persistence.

package compiled

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// sessionClockSkew is how far in the future a token's times may lie: the
// proxies of one Gateway share the key but not a perfect clock.
const sessionClockSkew = time.Minute

// sessionMaxNameLen is the Gateway API's limit on a cookie or header name
// (CookieName and HeaderName).
const sessionMaxNameLen = 256

// sessionMaxPathLen is the Gateway API's limit on cookie.path.
const sessionMaxPathLen = 1024

// sessionReservedHeaders are names a Header-type session may not use: the
// HTTP machinery owns them, and carrying a token in them would break
// framing, routing or cookies.
var sessionReservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true,
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true,
	"Upgrade": true, "Te": true, "Trailer": true,
	"Cookie": true, "Set-Cookie": true,
}

// SessionPolicy is a rule's SessionPersistence, checked and ready to use.
type SessionPolicy struct {
	name      string // cookie name, or header name as configured
	path      string // cookie Path attribute
	header    bool   // Header type; else Cookie
	headerKey string // canonical form of name, for http.Header lookups
	permanent bool   // Permanent cookie lifetime: Max-Age is set
	absolute  time.Duration
	idle      time.Duration
}

// compileSession checks sp and compiles it. A nil sp is no persistence:
// (nil, nil). Name must be set and be an
// RFC 9110 token of at most 256 characters, which makes it a valid cookie
// name and header name. A cookie's Path, "/" when empty, must begin with
// "/" (a browser ignores any other) and hold no control character or
// ";", at most 1024 bytes; a Header session has none. Type is Cookie or Header; Lifetime is Session or
// Permanent (translate writes the Gateway API's defaults, Cookie and
// Session). As the Gateway API's validation
// says, Permanent needs an AbsoluteTimeout (it becomes the cookie's
// Max-Age), and a cookie lifetime applies to Cookie sessions only, so
// Permanent with Header is refused. A Header session may not use a name
// the HTTP machinery owns (Host, Cookie, Connection and the like).
func compileSession(sp *proxycfg.SessionPersistence) (*SessionPolicy, error) {
	if sp == nil {
		return nil, nil
	}
	p := &SessionPolicy{name: sp.Name, path: "/", absolute: time.Duration(sp.AbsoluteTimeout), idle: time.Duration(sp.IdleTimeout)}
	switch sp.Type {
	case proxycfg.SessionCookie:
	case proxycfg.SessionHeader:
		p.header = true
	default:
		return nil, fmt.Errorf("session persistence: type %q is not %q or %q", sp.Type, proxycfg.SessionCookie, proxycfg.SessionHeader)
	}
	kind := "cookie"
	if p.header {
		kind = "header"
	}
	if err := sessionCheckName(sp.Name); err != nil {
		return nil, fmt.Errorf("session persistence: %s name: %w", kind, err)
	}
	if p.header {
		p.headerKey = http.CanonicalHeaderKey(sp.Name)
		if sessionReservedHeaders[p.headerKey] {
			return nil, fmt.Errorf("session persistence: header name %q is reserved by HTTP; choose another header.name", sp.Name)
		}
		if sp.Path != "" {
			return nil, fmt.Errorf("session persistence: a path applies to cookies only; remove it or use type %q", proxycfg.SessionCookie)
		}
	} else if sp.Path != "" {
		if err := sessionCheckPath(sp.Path); err != nil {
			return nil, fmt.Errorf("session persistence: cookie path: %w", err)
		}
		p.path = sp.Path
	}
	switch sp.Lifetime {
	case proxycfg.LifetimeSession:
	case proxycfg.LifetimePermanent:
		if p.header {
			return nil, fmt.Errorf("session persistence: lifetime %q applies to cookies only; remove it or use type %q", proxycfg.LifetimePermanent, proxycfg.SessionCookie)
		}
		if p.absolute <= 0 {
			return nil, fmt.Errorf("session persistence: lifetime %q needs an absoluteTimeout (it becomes the cookie's Max-Age)", proxycfg.LifetimePermanent)
		}
		p.permanent = true
	default:
		return nil, fmt.Errorf("session persistence: lifetime %q is not %q or %q", sp.Lifetime, proxycfg.LifetimeSession, proxycfg.LifetimePermanent)
	}
	if p.absolute < 0 || p.idle < 0 {
		return nil, errors.New("session persistence: timeouts must not be negative")
	}
	return p, nil
}

// sessionCheckName checks that name is a non-empty RFC 9110 token of at
// most sessionMaxNameLen bytes.
func sessionCheckName(name string) error {
	if name == "" {
		return errors.New("empty; set cookie.name or header.name")
	}
	if len(name) > sessionMaxNameLen {
		return fmt.Errorf("%d characters, more than %d", len(name), sessionMaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		if !httpsyntax.IsToken(name[i : i+1]) {
			return fmt.Errorf("%q has character %q at %d; use letters, digits and !#$%%&'*+-.^_`|~", name, name[i], i)
		}
	}
	return nil
}

// sessionCheckPath checks a cookie Path attribute value: it begins with
// "/" and has no control character or ";" (RFC 6265's path-value), at
// most sessionMaxPathLen bytes.
func sessionCheckPath(path string) error {
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("%q does not begin with \"/\"", path)
	}
	if len(path) > sessionMaxPathLen {
		return fmt.Errorf("%d bytes, more than %d", len(path), sessionMaxPathLen)
	}
	for i := 0; i < len(path); i++ {
		if c := path[i]; c < 0x20 || c == 0x7f || c == ';' {
			return fmt.Errorf("%q has character %q at %d", path, c, i)
		}
	}
	return nil
}

// Valid reports whether a session that began at start and was last used at
// lastUse may still be honoured at now: less than AbsoluteTimeout since it
// began and less than IdleTimeout since its last use (a zero timeout is no
// limit). Times further than a minute ahead of now, and a last use before
// the start, are refused.
func (p *SessionPolicy) Valid(start, lastUse, now time.Time) bool {
	if lastUse.Before(start) {
		return false
	}
	if lastUse.After(now.Add(sessionClockSkew)) {
		return false
	}
	if p.absolute > 0 && !now.Before(start.Add(p.absolute)) {
		return false
	}
	if p.idle > 0 && !now.Before(lastUse.Add(p.idle)) {
		return false
	}
	return true
}

// Refreshed reports whether every response carries a new token (with a
// new last-use time), so that an active client's session does not lapse:
// the policy has an idle timeout.
func (p *SessionPolicy) Refreshed() bool { return p.idle > 0 }

// Carry puts token on a response's header: in the policy's header, or as
// the Set-Cookie value SetCookie makes.
func (p *SessionPolicy) Carry(hdr http.Header, token string, start, now time.Time, secure bool) {
	if p.header {
		hdr[p.headerKey] = []string{token}
		return
	}
	hdr["Set-Cookie"] = append(hdr["Set-Cookie"], p.SetCookie(token, start, now, secure))
}

// SetCookie returns the Set-Cookie header value carrying token: the
// policy's Path ("/" unless cookie.path says otherwise), HttpOnly, SameSite=Lax, Secure when secure (the client reached us over
// TLS). A Permanent cookie also gets Max-Age: the whole seconds left until
// the session's absolute timeout, counted from start, when the session
// began. A Session cookie has no Max-Age and ends with the browser
// session.
func (p *SessionPolicy) SetCookie(token string, start, now time.Time, secure bool) string {
	var b strings.Builder
	b.Grow(len(p.name) + len(token) + len(p.path) + 64)
	b.WriteString(p.name)
	b.WriteByte('=')
	b.WriteString(token)
	b.WriteString("; Path=")
	b.WriteString(p.path)
	if p.permanent {
		left := start.Add(p.absolute).Sub(now)
		secs := int64(left / time.Second)
		if secs < 0 {
			secs = 0
		}
		b.WriteString("; Max-Age=")
		b.WriteString(strconv.FormatInt(secs, 10))
	}
	b.WriteString("; HttpOnly; SameSite=Lax")
	if secure {
		b.WriteString("; Secure")
	}
	return b.String()
}

// Token returns the session Token the request carries, or "". For a
// Header session it is the first non-empty value of the header, trimmed of
// spaces and tabs; for a Cookie session, the value of the first cookie named
// p.name (case-sensitive, as cookies are) with a non-empty value, across
// every Cookie header, with optional whitespace around names and values and
// optional double quotes around the value. It does not allocate: the result
// is a substring of a header value.
func (p *SessionPolicy) Token(h http.Header) string {
	if p.header {
		for _, v := range h[p.headerKey] {
			if v = httpsyntax.TrimOWS(v); v != "" {
				return v
			}
		}
		return ""
	}
	return httpsyntax.CookieValue(h["Cookie"], p.name)
}
