package dataplane

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Session persistence tokens.
//
// A token pins a client to one endpoint of one cluster. It travels as a
// cookie value or a header value, so it is URL-safe base64 without padding
// (every character is an RFC 6265 cookie-octet and an RFC 9110 tchar). The
// decoded bytes are
//
//	version (1 byte, sessionTokenVersion)
//	start   (8 bytes, big-endian unix milliseconds, two's complement)
//	lastUse (8 bytes, big-endian unix milliseconds, two's complement)
//	endpoint (the rest but the MAC, 1..MaxSessionEndpointLen bytes)
//	MAC     (16 bytes: HMAC-SHA256 truncated)
//
// The MAC covers a fixed label, the length-prefixed scope and every byte
// before it, so a token signed for one scope (route rule and session name)
// never validates for another, and no two (scope, payload) pairs hash the
// same input. The token is signed, not encrypted: a client can read the
// endpoint address it is pinned to (as with Envoy's stateful-session
// cookie). It cannot choose one: any change breaks the MAC.

const (
	// MaxSessionTokenLen is the longest token Decode looks at.
	MaxSessionTokenLen = 512
	// MaxSessionEndpointLen is the longest endpoint a token can carry:
	// with it the token is exactly MaxSessionTokenLen characters.
	MaxSessionEndpointLen = MaxSessionTokenLen*3/4 - sessionFixedLen

	sessionTokenVersion = 1
	sessionMACLen       = 16
	sessionHeaderLen    = 1 + 8 + 8
	sessionFixedLen     = sessionHeaderLen + sessionMACLen
	// sessionMinKeyLen is the shortest key used as is.
	sessionMinKeyLen = 16
	// sessionMACLabel separates these MACs from any other use of the key.
	sessionMACLabel = "tunnelgate/session/v1\x00"
	// sessionPoolBufMax is the largest scratch buffer kept for reuse.
	sessionPoolBufMax = 4096
)

// SessionCodec signs and checks session tokens under one key. It is safe
// for concurrent use.
type SessionCodec struct {
	key  []byte
	pool sync.Pool // *sessionScratch
}

// sessionScratch is the per-call state: a keyed HMAC and buffers, reused
// through the codec's pool so Encode and Decode do not allocate.
type sessionScratch struct {
	mac hash.Hash
	msg []byte // label | scope length | scope | payload
	src []byte // Decode: the token's characters, as bytes
	sum [sha256.Size]byte
}

// NewSessionCodec returns a codec signing with key. The key should be at
// least 16 random bytes (Config.SessionSecret; 32 is better) and is used as
// the HMAC key as given. A shorter key, including an empty one, is accepted
// rather than refused, because a proxy must keep serving: the HMAC key is
// then SHA-256 over a label and the key, which gives a well-formed 32-byte
// key but adds no secrecy, so such tokens can be forged by anyone who
// guesses the short key. The caller should warn about short secrets. The
// codec keeps its own copy of key.
func NewSessionCodec(key []byte) *SessionCodec {
	var k []byte
	if len(key) >= sessionMinKeyLen {
		k = append([]byte(nil), key...)
	} else {
		h := sha256.New()
		h.Write([]byte("tunnelgate/session/short-key\x00"))
		h.Write(key)
		k = h.Sum(nil)
	}
	c := &SessionCodec{key: k}
	c.pool.New = func() any {
		return &sessionScratch{mac: hmac.New(sha256.New, c.key)}
	}
	return c
}

func (c *SessionCodec) get() *sessionScratch {
	s := c.pool.Get().(*sessionScratch)
	s.mac.Reset()
	return s
}

func (c *SessionCodec) put(s *sessionScratch) {
	if cap(s.msg) > sessionPoolBufMax || cap(s.src) > sessionPoolBufMax {
		return
	}
	c.pool.Put(s)
}

// prefix starts s.msg with the label and the length-prefixed scope and
// returns its length, where the payload begins.
func (s *sessionScratch) prefix(scope string) int {
	m := append(s.msg[:0], sessionMACLabel...)
	m = binary.AppendUvarint(m, uint64(len(scope)))
	m = append(m, scope...)
	s.msg = m
	return len(m)
}

// Encode appends to dst the token pinning endpoint for scope, with the
// session's start and last use (kept to the millisecond). An endpoint that is
// empty or longer than MaxSessionEndpointLen cannot be carried: Encode then
// returns dst unchanged, which the caller sees as no token. The result is
// at most MaxSessionTokenLen characters.
func (c *SessionCodec) Encode(dst []byte, scope, endpoint string, start, lastUse time.Time) []byte {
	if len(endpoint) == 0 || len(endpoint) > MaxSessionEndpointLen {
		return dst
	}
	s := c.get()
	p := s.prefix(scope)
	m := append(s.msg, sessionTokenVersion)
	m = binary.BigEndian.AppendUint64(m, uint64(start.UnixMilli()))
	m = binary.BigEndian.AppendUint64(m, uint64(lastUse.UnixMilli()))
	m = append(m, endpoint...)
	s.mac.Write(m)
	sum := s.mac.Sum(s.sum[:0])
	m = append(m, sum[:sessionMACLen]...)
	s.msg = m
	dst = base64.RawURLEncoding.AppendEncode(dst, m[p:])
	c.put(s)
	return dst
}

// sessionB64 rejects the encodings that RawURLEncoding would otherwise
// accept for one payload (non-zero trailing bits), so a token has exactly
// one spelling.
var sessionB64 = base64.RawURLEncoding.Strict()

// Decode checks token against scope and returns what it pins. It refuses,
// with ok false, a token that is empty, longer than MaxSessionTokenLen, has
// a character outside the URL-safe base64 alphabet (padding, spaces and
// line breaks included), is not the canonical encoding, has another version
// or a bad length, or whose MAC (compared in constant time) is not that of
// this key and scope. It never panics. A valid token costs one allocation:
// the endpoint string. Whether the session is still live is the policy's
// question (sessionPolicy.valid), not the codec's.
func (c *SessionCodec) Decode(token, scope string) (endpoint string, start, lastUse time.Time, ok bool) {
	n := len(token)
	if n > MaxSessionTokenLen || n%4 == 1 {
		return "", time.Time{}, time.Time{}, false
	}
	raw := n / 4 * 3
	if r := n % 4; r > 0 {
		raw += r - 1
	}
	if raw < sessionFixedLen+1 {
		return "", time.Time{}, time.Time{}, false
	}
	for i := 0; i < n; i++ {
		if !sessionB64Char(token[i]) {
			return "", time.Time{}, time.Time{}, false
		}
	}
	s := c.get()
	defer c.put(s)
	p := s.prefix(scope)
	s.src = append(s.src[:0], token...)
	if cap(s.msg)-p < raw {
		m := make([]byte, p, p+raw)
		copy(m, s.msg)
		s.msg = m
	}
	buf := s.msg[p : p+raw]
	if k, err := sessionB64.Decode(buf, s.src); err != nil || k != raw {
		return "", time.Time{}, time.Time{}, false
	}
	body := s.msg[:p+raw-sessionMACLen]
	s.mac.Write(body)
	sum := s.mac.Sum(s.sum[:0])
	if !hmac.Equal(sum[:sessionMACLen], buf[raw-sessionMACLen:]) {
		return "", time.Time{}, time.Time{}, false
	}
	if buf[0] != sessionTokenVersion {
		return "", time.Time{}, time.Time{}, false
	}
	st := int64(binary.BigEndian.Uint64(buf[1:9]))
	lu := int64(binary.BigEndian.Uint64(buf[9:17]))
	ep := buf[sessionHeaderLen : raw-sessionMACLen]
	return string(ep), time.UnixMilli(st).UTC(), time.UnixMilli(lu).UTC(), true
}

// sessionB64Char reports whether b is in the URL-safe base64 alphabet.
func sessionB64Char(b byte) bool {
	return 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-' || b == '_'
}

// sessionTokenStart reads the start time out of a token without checking
// its MAC; setCookie uses it on tokens Encode has just made.
func sessionTokenStart(token string) (time.Time, bool) {
	// 12 characters are exactly the version and start bytes.
	if len(token) < 12 {
		return time.Time{}, false
	}
	var in [12]byte
	var out [9]byte
	copy(in[:], token)
	if _, err := sessionB64.Decode(out[:], in[:]); err != nil || out[0] != sessionTokenVersion {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(binary.BigEndian.Uint64(out[1:]))).UTC(), true
}

// sessionClockSkew is how far in the future a token's times may lie: the
// proxies of one Gateway share the key but not a perfect clock.
const sessionClockSkew = time.Minute

// sessionMaxNameLen is the Gateway API's limit on sessionName.
const sessionMaxNameLen = 128

// sessionReservedHeaders are names a Header-type session may not use: the
// HTTP machinery owns them, and carrying a token in them would break
// framing, routing or cookies.
var sessionReservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true,
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true,
	"Upgrade": true, "Te": true, "Trailer": true,
	"Cookie": true, "Set-Cookie": true,
}

// sessionPolicy is a rule's SessionPersistence, checked and ready to use.
type sessionPolicy struct {
	name      string // cookie name, or header name as configured
	header    bool   // Header type; else Cookie
	headerKey string // canonical form of name, for http.Header lookups
	permanent bool   // Permanent cookie lifetime: Max-Age is set
	absolute  time.Duration
	idle      time.Duration
}

// compileSession checks sp and compiles it. A nil sp is no persistence:
// (nil, nil). Name must be set (translate fills the default) and be an
// RFC 9110 token of at most 128 characters, which makes it a valid cookie
// name and header name. Type is Cookie (the default) or Header; Lifetime is
// Session (the default) or Permanent. As the Gateway API's validation
// says, Permanent needs an AbsoluteTimeout (it becomes the cookie's
// Max-Age), and a cookie lifetime applies to Cookie sessions only, so
// Permanent with Header is refused. A Header session may not use a name
// the HTTP machinery owns (Host, Cookie, Connection and the like).
func compileSession(sp *proxycfg.SessionPersistence) (*sessionPolicy, error) {
	if sp == nil {
		return nil, nil
	}
	p := &sessionPolicy{name: sp.Name, absolute: time.Duration(sp.AbsoluteTimeout), idle: time.Duration(sp.IdleTimeout)}
	switch sp.Type {
	case "", proxycfg.SessionCookie:
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
			return nil, fmt.Errorf("session persistence: header name %q is reserved by HTTP; choose another sessionName", sp.Name)
		}
	}
	switch sp.Lifetime {
	case "", proxycfg.LifetimeSession:
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
		return errors.New("empty; set sessionName")
	}
	if len(name) > sessionMaxNameLen {
		return fmt.Errorf("%d characters, more than %d", len(name), sessionMaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		if !http1.IsToken(name[i : i+1]) {
			return fmt.Errorf("%q has character %q at %d; use letters, digits and !#$%%&'*+-.^_`|~", name, name[i], i)
		}
	}
	return nil
}

// valid reports whether a session that began at start and was last used at
// lastUse may still be honoured at now: less than AbsoluteTimeout since it
// began and less than IdleTimeout since its last use (a zero timeout is no
// limit). Times further than a minute ahead of now, and a last use before
// the start, are refused.
func (p *sessionPolicy) valid(start, lastUse, now time.Time) bool {
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

// setCookie returns the Set-Cookie header value carrying token: Path=/,
// HttpOnly, SameSite=Lax, Secure when secure (the client reached us over
// TLS). A Permanent cookie also gets Max-Age: the whole seconds left until
// the session's absolute timeout, counted from the start time inside the
// token (the token is one Encode just made, so its start is read without a
// MAC check), or the whole AbsoluteTimeout if the token cannot be read. A
// Session cookie has no Max-Age and ends with the browser session. For a
// Header session the caller sets p.name itself.
func (p *sessionPolicy) setCookie(token string, now time.Time, secure bool) string {
	var b strings.Builder
	b.Grow(len(p.name) + len(token) + 64)
	b.WriteString(p.name)
	b.WriteByte('=')
	b.WriteString(token)
	b.WriteString("; Path=/")
	if p.permanent {
		left := p.absolute
		if start, ok := sessionTokenStart(token); ok {
			left = start.Add(p.absolute).Sub(now)
		}
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

// token returns the session token the request carries, or "". For a
// Header session it is the first non-empty value of the header, trimmed of
// spaces and tabs; for a Cookie session, the value of the first cookie named
// p.name (case-sensitive, as cookies are) with a non-empty value, across
// every Cookie header, with optional whitespace around names and values and
// optional double quotes around the value. It does not allocate: the result
// is a substring of a header value.
func (p *sessionPolicy) token(h http.Header) string {
	if p.header {
		for _, v := range h[p.headerKey] {
			if v = sessionTrimOWS(v); v != "" {
				return v
			}
		}
		return ""
	}
	for _, line := range h["Cookie"] {
		for line != "" {
			var part string
			if i := strings.IndexByte(line, ';'); i >= 0 {
				part, line = line[:i], line[i+1:]
			} else {
				part, line = line, ""
			}
			eq := strings.IndexByte(part, '=')
			if eq < 0 {
				continue
			}
			if sessionTrimOWS(part[:eq]) != p.name {
				continue
			}
			v := sessionTrimOWS(part[eq+1:])
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

// sessionTrimOWS trims spaces and tabs at both ends of s.
func sessionTrimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
