// This file signs and checks session tokens.

package dataplane

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"sync"
	"time"
)

// Session persistence tokens.
//
// A token pins a client to one endpoint of one cluster. It travels as a
// cookie value or a header value, so it is URL-safe base64 without padding
// (every character is an RFC 6265 cookie-octet and an RFC 9110 tchar). The
// decoded bytes are
//
//	version (1 byte, sessionTokenVersion)
//	key     (4 bytes: the signing key's ID, sessionKeyID)
//	start   (8 bytes, big-endian unix milliseconds, two's complement)
//	lastUse (8 bytes, big-endian unix milliseconds, two's complement)
//	endpoint (the rest but the MAC, 1..maxSessionEndpointLen bytes)
//	MAC     (16 bytes: HMAC-SHA256 truncated)
//
// The MAC covers a fixed label, the length-prefixed scope and every byte
// before it, so a token signed for one scope (route rule and session name)
// never validates for another, and no two (scope, payload) pairs hash the
// same input. The token is signed, not encrypted: a client can read the
// endpoint address it is pinned to (as with Envoy's stateful-session
// cookie). It cannot choose one: any change breaks the MAC.
//
// A codec holds a key set (Config.SessionKeys): the first key signs, and
// a token signed by any key of the set is accepted, found by the key ID
// it carries. So keys rotate without dropping sessions: a new key goes
// first, and the old one stays in the set while tokens it signed may
// still be in use. A token re-encoded on a response is signed by the
// first key, so an active session moves to the new key by itself.

const (
	// maxSessionTokenLen is the longest token Decode looks at.
	maxSessionTokenLen = 512
	// maxSessionEndpointLen is the longest endpoint a token can carry:
	// with it the token is exactly maxSessionTokenLen characters.
	maxSessionEndpointLen = maxSessionTokenLen*3/4 - sessionFixedLen

	sessionTokenVersion = 2
	sessionKeyIDLen     = 4
	sessionMACLen       = 16
	sessionHeaderLen    = 1 + sessionKeyIDLen + 8 + 8
	sessionFixedLen     = sessionHeaderLen + sessionMACLen
	// sessionMinKeyLen is the shortest key used as is.
	sessionMinKeyLen = 16
	// sessionMACLabel separates these MACs from any other use of the key.
	sessionMACLabel = "tunnelgate/session/v2\x00"
	// sessionPoolBufMax is the largest scratch buffer kept for reuse.
	sessionPoolBufMax = 4096
)

// sessionCodec signs and checks session tokens under a key set. It is
// safe for concurrent use.
type sessionCodec struct {
	keys []sessionKey // keys[0] signs
	pool sync.Pool    // *sessionScratch
}

// sessionKey is one key of a codec: the HMAC key, and the ID tokens
// name it by.
type sessionKey struct {
	id  [sessionKeyIDLen]byte
	key []byte
}

// sessionScratch is the per-call state: a keyed HMAC per key of the codec
// and buffers, reused through the codec's pool so Encode and Decode do not
// allocate.
type sessionScratch struct {
	macs []hash.Hash // macs[i] is keyed with keys[i]
	msg  []byte      // label | scope length | scope | payload
	src  []byte      // Decode: the token's characters, as bytes
	sum  [sha256.Size]byte
}

// newSessionCodec returns a codec whose first key signs and whose every
// key is accepted. A key should be at least 16 random bytes
// (Config.SessionKeys; 32 is better) and is used as the HMAC key as given.
// A shorter key, including an empty one, is accepted rather than refused,
// because a proxy must keep serving: the HMAC key is then SHA-256 over a
// label and the key, which gives a well-formed 32-byte key but adds no
// secrecy, so such tokens can be forged by anyone who guesses the short
// key. No key at all is one empty key. The codec keeps its own copies.
func newSessionCodec(keys ...[]byte) *sessionCodec {
	if len(keys) == 0 {
		keys = [][]byte{nil}
	}
	c := &sessionCodec{keys: make([]sessionKey, len(keys))}
	for i, key := range keys {
		c.keys[i] = newSessionKey(key)
	}
	c.pool.New = func() any {
		s := &sessionScratch{macs: make([]hash.Hash, len(c.keys))}
		for i := range c.keys {
			s.macs[i] = hmac.New(sha256.New, c.keys[i].key)
		}
		return s
	}
	return c
}

// newSessionKey makes the HMAC key of key, and its ID: four bytes of a
// hash of the HMAC key under a label of its own, which names the key
// without telling anything of it.
func newSessionKey(key []byte) sessionKey {
	var k []byte
	if len(key) >= sessionMinKeyLen {
		k = append([]byte(nil), key...)
	} else {
		h := sha256.New()
		h.Write([]byte("tunnelgate/session/short-key\x00"))
		h.Write(key)
		k = h.Sum(nil)
	}
	h := sha256.New()
	h.Write([]byte("tunnelgate/session/key-id\x00"))
	h.Write(k)
	sk := sessionKey{key: k}
	copy(sk.id[:], h.Sum(nil))
	return sk
}

func (c *sessionCodec) get() *sessionScratch {
	return c.pool.Get().(*sessionScratch)
}

func (c *sessionCodec) put(s *sessionScratch) {
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

// mac is the MAC of msg under key i.
func (s *sessionScratch) mac(i int, msg []byte) []byte {
	h := s.macs[i]
	h.Reset()
	h.Write(msg)
	return h.Sum(s.sum[:0])[:sessionMACLen]
}

// Encode appends to dst the token pinning endpoint for scope, with the
// session's start and last use (kept to the millisecond), signed by the
// first key. An endpoint that is empty or longer than
// maxSessionEndpointLen cannot be carried: Encode then returns dst
// unchanged, which the caller sees as no token. The result is at most
// maxSessionTokenLen characters.
func (c *sessionCodec) Encode(dst []byte, scope, endpoint string, start, lastUse time.Time) []byte {
	if len(endpoint) == 0 || len(endpoint) > maxSessionEndpointLen {
		return dst
	}
	s := c.get()
	p := s.prefix(scope)
	m := append(s.msg, sessionTokenVersion)
	m = append(m, c.keys[0].id[:]...)
	m = binary.BigEndian.AppendUint64(m, uint64(start.UnixMilli()))
	m = binary.BigEndian.AppendUint64(m, uint64(lastUse.UnixMilli()))
	m = append(m, endpoint...)
	m = append(m, s.mac(0, m)...)
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
// with ok false, a token that is empty, longer than maxSessionTokenLen, has
// a character outside the URL-safe base64 alphabet (padding, spaces and
// line breaks included), is not the canonical encoding, has another version
// or a bad length, or whose MAC (compared in constant time) is not that of
// the key it names, if the codec has it, and scope. It never panics. A valid token costs one allocation:
// the endpoint string. Whether the session is still live is the policy's
// question (sessionPolicy.valid), not the codec's.
func (c *sessionCodec) Decode(token, scope string) (endpoint string, start, lastUse time.Time, ok bool) {
	n := len(token)
	if n > maxSessionTokenLen || n%4 == 1 {
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
	if !c.verify(s, s.msg[:p+raw-sessionMACLen], buf[1:1+sessionKeyIDLen], buf[raw-sessionMACLen:]) {
		return "", time.Time{}, time.Time{}, false
	}
	if buf[0] != sessionTokenVersion {
		return "", time.Time{}, time.Time{}, false
	}
	t := buf[1+sessionKeyIDLen:]
	st := int64(binary.BigEndian.Uint64(t[0:8]))
	lu := int64(binary.BigEndian.Uint64(t[8:16]))
	ep := buf[sessionHeaderLen : raw-sessionMACLen]
	return string(ep), time.UnixMilli(st).UTC(), time.UnixMilli(lu).UTC(), true
}

// sessionB64Char reports whether b is in the URL-safe base64 alphabet.
func sessionB64Char(b byte) bool {
	return 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-' || b == '_'
}

// verify reports whether mac is body's MAC under a key of the codec whose
// ID is id. IDs are short, so two keys may share one: each is tried.
func (c *sessionCodec) verify(s *sessionScratch, body, id, mac []byte) bool {
	for i := range c.keys {
		if string(c.keys[i].id[:]) == string(id) && hmac.Equal(s.mac(i, body), mac) {
			return true
		}
	}
	return false
}
