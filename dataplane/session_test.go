package dataplane

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

var (
	sessTestKey   = []byte("0123456789abcdef0123456789abcdef")
	sessTestScope = "ns/route/rule0|session-a"
	sessT0        = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
)

func sessEncode(t *testing.T, c *sessionCodec, scope, ep string, start, last time.Time) string {
	t.Helper()
	tok := string(c.Encode(nil, scope, ep, start, last))
	if tok == "" {
		t.Fatalf("Encode(%q) made no token", ep)
	}
	return tok
}

func TestSessionRoundTrip(t *testing.T) {
	c := newSessionCodec(sessTestKey)
	cases := []struct {
		ep          string
		start, last time.Time
	}{
		{"10.0.0.7:8080", sessT0, sessT0.Add(90 * time.Second)},
		{"[fd00::1]:443", sessT0, sessT0},
		{"a", time.Unix(0, 0), time.Unix(1, 0)},
		{"backend.ns.svc.cluster.local:9000", time.Time{}, time.Unix(-5, 0)},
		{strings.Repeat("x", maxSessionEndpointLen), sessT0, sessT0},
		{"\x00\xff not utf-8 \xfe", sessT0.Add(-time.Hour), sessT0},
	}
	for _, tc := range cases {
		tok := sessEncode(t, c, sessTestScope, tc.ep, tc.start, tc.last)
		if len(tok) > maxSessionTokenLen {
			t.Errorf("token for %d-byte endpoint is %d characters", len(tc.ep), len(tok))
		}
		for i := 0; i < len(tok); i++ {
			if !sessionB64Char(tok[i]) || !httpsyntax.IsToken(tok[i:i+1]) {
				t.Fatalf("token %q has character %q, not a cookie-octet/tchar", tok, tok[i])
			}
		}
		ep, st, lu, ok := c.Decode(tok, sessTestScope)
		if !ok || ep != tc.ep || st.Unix() != tc.start.Unix() || lu.Unix() != tc.last.Unix() {
			t.Errorf("Decode(Encode(%q, %v, %v)) = %q, %v, %v, %v", tc.ep, tc.start, tc.last, ep, st, lu, ok)
		}
	}
	// Encode appends.
	dst := []byte("prefix=")
	out := c.Encode(dst, sessTestScope, "1.2.3.4:5", sessT0, sessT0)
	if !strings.HasPrefix(string(out), "prefix=") {
		t.Errorf("Encode did not append: %q", out)
	}
	if ep, _, _, ok := c.Decode(string(out[len("prefix="):]), sessTestScope); !ok || ep != "1.2.3.4:5" {
		t.Errorf("appended token does not decode")
	}
	// Times keep milliseconds (an idle timeout of a second must not lose up
	// to a second to rounding); finer precision is dropped, not rounded up.
	tok := sessEncode(t, c, sessTestScope, "e:1", sessT0.Add(999*time.Millisecond+999*time.Microsecond), sessT0.Add(1500*time.Millisecond))
	if _, st, lu, _ := c.Decode(tok, sessTestScope); !st.Equal(sessT0.Add(999*time.Millisecond)) || !lu.Equal(sessT0.Add(1500*time.Millisecond)) {
		t.Errorf("times: %v %v", st, lu)
	}
}

func TestSessionEncodeRefusesBadEndpoint(t *testing.T) {
	c := newSessionCodec(sessTestKey)
	for _, ep := range []string{"", strings.Repeat("x", maxSessionEndpointLen+1)} {
		if out := c.Encode([]byte("keep"), sessTestScope, ep, sessT0, sessT0); string(out) != "keep" {
			t.Errorf("Encode of %d-byte endpoint = %q, want dst unchanged", len(ep), out)
		}
	}
}

func TestSessionTamper(t *testing.T) {
	c := newSessionCodec(sessTestKey)
	tok := sessEncode(t, c, sessTestScope, "10.0.0.7:8080", sessT0, sessT0)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	// Every character replaced by every other one.
	for i := 0; i < len(tok); i++ {
		for j := 0; j < len(alphabet); j++ {
			if alphabet[j] == tok[i] {
				continue
			}
			bad := tok[:i] + string(alphabet[j]) + tok[i+1:]
			if _, _, _, ok := c.Decode(bad, sessTestScope); ok {
				t.Fatalf("accepted token with character %d changed to %q", i, alphabet[j])
			}
		}
	}
	// Every bit of every decoded byte flipped, re-encoded.
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		for bit := 0; bit < 8; bit++ {
			b := append([]byte(nil), raw...)
			b[i] ^= 1 << bit
			if _, _, _, ok := c.Decode(base64.RawURLEncoding.EncodeToString(b), sessTestScope); ok {
				t.Fatalf("accepted token with byte %d bit %d flipped", i, bit)
			}
		}
	}
	// Truncated, extended, padded, wrapped, spaced.
	bad := []string{
		"", tok[:len(tok)-1], tok[:len(tok)-4], tok + "A", tok + "AAAA", tok + "=",
		tok[:10] + "\n" + tok[10:], tok[:10] + "\r\n" + tok[10:], " " + tok, tok + " ",
		strings.Repeat("A", maxSessionTokenLen+4), "\"" + tok + "\"",
	}
	for _, b := range bad {
		if _, _, _, ok := c.Decode(b, sessTestScope); ok {
			t.Errorf("accepted %q", b)
		}
	}
}

func TestSessionScopeAndKey(t *testing.T) {
	c := newSessionCodec(sessTestKey)
	tok := sessEncode(t, c, sessTestScope, "10.0.0.7:8080", sessT0, sessT0)
	for _, scope := range []string{"", sessTestScope + "x", sessTestScope[:len(sessTestScope)-1], "ns/route/rule1|session-a"} {
		if _, _, _, ok := c.Decode(tok, scope); ok {
			t.Errorf("token for %q accepted for scope %q", sessTestScope, scope)
		}
	}
	other := newSessionCodec([]byte("fedcba9876543210fedcba9876543210"))
	if _, _, _, ok := other.Decode(tok, sessTestScope); ok {
		t.Error("token accepted under another key")
	}
	// The scope is length-prefixed: moving bytes between scope and
	// endpoint does not keep the MAC.
	a := sessEncode(t, c, "ab", "c:1", sessT0, sessT0)
	if _, _, _, ok := c.Decode(a, "a"); ok {
		t.Error("scope boundary is ambiguous")
	}
	// Mutating the caller's key after newSessionCodec changes nothing.
	key := append([]byte(nil), sessTestKey...)
	c2 := newSessionCodec(key)
	key[0] ^= 0xff
	if _, _, _, ok := c2.Decode(tok, sessTestScope); !ok {
		t.Error("codec did not copy its key")
	}
}

func TestSessionShortKey(t *testing.T) {
	// Short keys still work (derived), and differ from each other.
	for _, k := range [][]byte{nil, []byte("short")} {
		c := newSessionCodec(k)
		tok := sessEncode(t, c, sessTestScope, "e:1", sessT0, sessT0)
		if _, _, _, ok := c.Decode(tok, sessTestScope); !ok {
			t.Errorf("key %q: round trip failed", k)
		}
	}
	a := sessEncode(t, newSessionCodec(nil), sessTestScope, "e:1", sessT0, sessT0)
	if _, _, _, ok := newSessionCodec([]byte("short")).Decode(a, sessTestScope); ok {
		t.Error("different short keys accept each other's tokens")
	}
	// A key under 16 bytes is replaced by a derived 32-byte one; a key of
	// 16 bytes or more is used as given.
	if got := newSessionCodec([]byte("0123456789abcde")).keys[0].key; len(got) != 32 {
		t.Errorf("15-byte key: HMAC key is %d bytes, want the derived 32", len(got))
	}
	if got := newSessionCodec([]byte("0123456789abcdef")).keys[0].key; string(got) != "0123456789abcdef" {
		t.Errorf("16-byte key: HMAC key is %q, want it as given", got)
	}
}

// A key set signs with its first key and accepts tokens of every key it
// holds, found by the key ID the token carries: keys rotate without
// dropping sessions, and a key taken out of the set ends its tokens.
func TestSessionKeyRotation(t *testing.T) {
	oldKey, newKey := []byte("old key 0123456789abcdef"), []byte("new key 0123456789abcdef")
	before := newSessionCodec(oldKey)
	during := newSessionCodec(newKey, oldKey)
	after := newSessionCodec(newKey)

	old := sessEncode(t, before, sessTestScope, "10.0.0.7:8080", sessT0, sessT0)
	if ep, _, _, ok := during.Decode(old, sessTestScope); !ok || ep != "10.0.0.7:8080" {
		t.Errorf("the old key's token during the overlap: %q %v; want it accepted", ep, ok)
	}
	if _, _, _, ok := after.Decode(old, sessTestScope); ok {
		t.Error("the old key's token accepted once the old key left the set")
	}
	fresh := sessEncode(t, during, sessTestScope, "10.0.0.7:8080", sessT0, sessT0)
	for name, c := range map[string]*sessionCodec{"during": during, "after": after} {
		if _, _, _, ok := c.Decode(fresh, sessTestScope); !ok {
			t.Errorf("%s: a token signed during the overlap (by the new key) is refused", name)
		}
	}
	if _, _, _, ok := before.Decode(fresh, sessTestScope); ok {
		t.Error("a proxy without the new key accepted its token")
	}
	// The token names its key: the same token under a codec whose keys
	// are in the other order still finds the right one.
	if _, _, _, ok := newSessionCodec(oldKey, newKey).Decode(fresh, sessTestScope); !ok {
		t.Error("the new key's token refused when that key is second in the set")
	}
	// A token whose key ID is changed is refused, though the key that
	// signed it is in the set.
	raw, _ := base64.RawURLEncoding.DecodeString(fresh)
	raw[1] ^= 0x01
	if _, _, _, ok := during.Decode(base64.RawURLEncoding.EncodeToString(raw), sessTestScope); ok {
		t.Error("a token naming another key ID accepted")
	}
}

func TestSessionConcurrent(t *testing.T) {
	c := newSessionCodec(sessTestKey)
	done := make(chan bool)
	for g := 0; g < 8; g++ {
		go func() {
			ok := true
			for i := 0; i < 500; i++ {
				ep := strings.Repeat("e", 1+(i+g)%100)
				scope := strings.Repeat("s", (i*7+g)%300)
				tok := c.Encode(nil, scope, ep, sessT0, sessT0)
				got, _, _, ok2 := c.Decode(string(tok), scope)
				ok = ok && ok2 && got == ep
			}
			done <- ok
		}()
	}
	for g := 0; g < 8; g++ {
		if !<-done {
			t.Error("concurrent round trip failed")
		}
	}
}

// TestSessionEndToEnd runs the pieces as the proxy will: make a token, set
// it as a cookie, read it back from the next request, check it.
func TestSessionEndToEnd(t *testing.T) {
	c := newSessionCodec(sessTestKey)
	p := mustCompileSession(t, &proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Name: "tg", Lifetime: proxycfg.LifetimePermanent, AbsoluteTimeout: proxycfg.Duration(time.Hour), IdleTimeout: proxycfg.Duration(5 * time.Minute)})
	tok := string(c.Encode(nil, sessTestScope, "10.1.2.3:80", sessT0, sessT0))
	resp := http.Response{Header: http.Header{"Set-Cookie": {p.SetCookie(tok, sessT0, sessT0, false)}}}
	req, _ := http.NewRequest("GET", "http://example.com/", nil)
	for _, ck := range resp.Cookies() {
		req.AddCookie(ck)
	}
	req.AddCookie(&http.Cookie{Name: "other", Value: "x"})
	got := p.Token(req.Header)
	ep, st, lu, ok := c.Decode(got, sessTestScope)
	if !ok || ep != "10.1.2.3:80" {
		t.Fatalf("decode: %q %v", ep, ok)
	}
	if !p.Valid(st, lu, sessT0.Add(4*time.Minute)) || p.Valid(st, lu, sessT0.Add(6*time.Minute)) {
		t.Error("idle timeout not applied to the decoded token")
	}
}

// mustCompileSession compiles sp as the only setting of a rule.
func mustCompileSession(t *testing.T, sp *proxycfg.SessionPersistence) *compiled.SessionPolicy {
	t.Helper()
	r := &proxycfg.Route{Kind: proxycfg.KindHTTP, Namespace: "ns", Name: "r", Rules: []proxycfg.Rule{{
		Matches:            []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}},
		SessionPersistence: sp,
		Backends:           []proxycfg.BackendRef{{Status: 500, Weight: 1}},
	}}}
	ru, _, err := compiled.CompileRule(r, 0, 0, func(string) (int, bool) { return 0, true })
	if err != nil {
		t.Fatalf("session %+v: %v", sp, err)
	}
	return ru.Session
}
