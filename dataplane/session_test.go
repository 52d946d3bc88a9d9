package dataplane

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

var (
	sessTestKey   = []byte("0123456789abcdef0123456789abcdef")
	sessTestScope = "ns/route/rule0|session-a"
	sessT0        = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
)

func sessEncode(t *testing.T, c *SessionCodec, scope, ep string, start, last time.Time) string {
	t.Helper()
	tok := string(c.Encode(nil, scope, ep, start, last))
	if tok == "" {
		t.Fatalf("Encode(%q) made no token", ep)
	}
	return tok
}

func TestSessionRoundTrip(t *testing.T) {
	c := NewSessionCodec(sessTestKey)
	cases := []struct {
		ep          string
		start, last time.Time
	}{
		{"10.0.0.7:8080", sessT0, sessT0.Add(90 * time.Second)},
		{"[fd00::1]:443", sessT0, sessT0},
		{"a", time.Unix(0, 0), time.Unix(1, 0)},
		{"backend.ns.svc.cluster.local:9000", time.Time{}, time.Unix(-5, 0)},
		{strings.Repeat("x", MaxSessionEndpointLen), sessT0, sessT0},
		{"\x00\xff not utf-8 \xfe", sessT0.Add(-time.Hour), sessT0},
	}
	for _, tc := range cases {
		tok := sessEncode(t, c, sessTestScope, tc.ep, tc.start, tc.last)
		if len(tok) > MaxSessionTokenLen {
			t.Errorf("token for %d-byte endpoint is %d characters", len(tc.ep), len(tok))
		}
		for i := 0; i < len(tok); i++ {
			if !sessionB64Char(tok[i]) || !http1.IsToken(tok[i:i+1]) {
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
	c := NewSessionCodec(sessTestKey)
	for _, ep := range []string{"", strings.Repeat("x", MaxSessionEndpointLen+1)} {
		if out := c.Encode([]byte("keep"), sessTestScope, ep, sessT0, sessT0); string(out) != "keep" {
			t.Errorf("Encode of %d-byte endpoint = %q, want dst unchanged", len(ep), out)
		}
	}
}

func TestSessionTamper(t *testing.T) {
	c := NewSessionCodec(sessTestKey)
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
		strings.Repeat("A", MaxSessionTokenLen+4), "\"" + tok + "\"",
	}
	for _, b := range bad {
		if _, _, _, ok := c.Decode(b, sessTestScope); ok {
			t.Errorf("accepted %q", b)
		}
	}
}

func TestSessionScopeAndKey(t *testing.T) {
	c := NewSessionCodec(sessTestKey)
	tok := sessEncode(t, c, sessTestScope, "10.0.0.7:8080", sessT0, sessT0)
	for _, scope := range []string{"", sessTestScope + "x", sessTestScope[:len(sessTestScope)-1], "ns/route/rule1|session-a"} {
		if _, _, _, ok := c.Decode(tok, scope); ok {
			t.Errorf("token for %q accepted for scope %q", sessTestScope, scope)
		}
	}
	other := NewSessionCodec([]byte("fedcba9876543210fedcba9876543210"))
	if _, _, _, ok := other.Decode(tok, sessTestScope); ok {
		t.Error("token accepted under another key")
	}
	// The scope is length-prefixed: moving bytes between scope and
	// endpoint does not keep the MAC.
	a := sessEncode(t, c, "ab", "c:1", sessT0, sessT0)
	if _, _, _, ok := c.Decode(a, "a"); ok {
		t.Error("scope boundary is ambiguous")
	}
	// Mutating the caller's key after NewSessionCodec changes nothing.
	key := append([]byte(nil), sessTestKey...)
	c2 := NewSessionCodec(key)
	key[0] ^= 0xff
	if _, _, _, ok := c2.Decode(tok, sessTestScope); !ok {
		t.Error("codec did not copy its key")
	}
}

func TestSessionShortKey(t *testing.T) {
	// Short keys still work (derived), and differ from each other.
	for _, k := range [][]byte{nil, []byte("short")} {
		c := NewSessionCodec(k)
		tok := sessEncode(t, c, sessTestScope, "e:1", sessT0, sessT0)
		if _, _, _, ok := c.Decode(tok, sessTestScope); !ok {
			t.Errorf("key %q: round trip failed", k)
		}
	}
	a := sessEncode(t, NewSessionCodec(nil), sessTestScope, "e:1", sessT0, sessT0)
	if _, _, _, ok := NewSessionCodec([]byte("short")).Decode(a, sessTestScope); ok {
		t.Error("different short keys accept each other's tokens")
	}
	// A key under 16 bytes is replaced by a derived 32-byte one; a key of
	// 16 bytes or more is used as given.
	if got := NewSessionCodec([]byte("0123456789abcde")).key; len(got) != 32 {
		t.Errorf("15-byte key: HMAC key is %d bytes, want the derived 32", len(got))
	}
	if got := NewSessionCodec([]byte("0123456789abcdef")).key; string(got) != "0123456789abcdef" {
		t.Errorf("16-byte key: HMAC key is %q, want it as given", got)
	}
}

func TestSessionConcurrent(t *testing.T) {
	c := NewSessionCodec(sessTestKey)
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

func mustCompileSession(t *testing.T, sp *proxycfg.SessionPersistence) *sessionPolicy {
	t.Helper()
	p, err := compileSession(sp)
	if err != nil {
		t.Fatalf("compileSession(%+v): %v", sp, err)
	}
	return p
}

func TestCompileSession(t *testing.T) {
	if p, err := compileSession(nil); p != nil || err != nil {
		t.Errorf("nil: %v, %v", p, err)
	}
	p := mustCompileSession(t, &proxycfg.SessionPersistence{Name: "sess"})
	if p.header || p.permanent {
		t.Errorf("defaults: %+v", p)
	}
	p = mustCompileSession(t, &proxycfg.SessionPersistence{Name: "x-session-id", Type: proxycfg.SessionHeader})
	if !p.header || p.headerKey != "X-Session-Id" {
		t.Errorf("header: %+v", p)
	}
	p = mustCompileSession(t, &proxycfg.SessionPersistence{Name: "s", Lifetime: proxycfg.LifetimePermanent, AbsoluteTimeout: proxycfg.Duration(time.Hour)})
	if !p.permanent || p.absolute != time.Hour {
		t.Errorf("permanent: %+v", p)
	}
	mustCompileSession(t, &proxycfg.SessionPersistence{Name: "s", Type: proxycfg.SessionHeader, Lifetime: proxycfg.LifetimeSession})
	mustCompileSession(t, &proxycfg.SessionPersistence{Name: "!#$%&'*+-.^_`|~09azAZ"})
	mustCompileSession(t, &proxycfg.SessionPersistence{Name: strings.Repeat("n", 128)})

	bad := []struct {
		sp   proxycfg.SessionPersistence
		want string
	}{
		{proxycfg.SessionPersistence{}, "empty"},
		{proxycfg.SessionPersistence{Name: "a b"}, "character"},
		{proxycfg.SessionPersistence{Name: "a=b"}, "character"},
		{proxycfg.SessionPersistence{Name: "a;b"}, "character"},
		{proxycfg.SessionPersistence{Name: "sess\"id"}, "character"},
		{proxycfg.SessionPersistence{Name: "sé"}, "character"},
		{proxycfg.SessionPersistence{Name: "a:b", Type: proxycfg.SessionHeader}, "character"},
		{proxycfg.SessionPersistence{Name: strings.Repeat("n", 129)}, "more than 128"},
		{proxycfg.SessionPersistence{Name: "s", Type: "Query"}, "type"},
		{proxycfg.SessionPersistence{Name: "s", Lifetime: "Forever"}, "lifetime"},
		{proxycfg.SessionPersistence{Name: "s", Lifetime: proxycfg.LifetimePermanent}, "absoluteTimeout"},
		{proxycfg.SessionPersistence{Name: "s", Type: proxycfg.SessionHeader, Lifetime: proxycfg.LifetimePermanent, AbsoluteTimeout: proxycfg.Duration(time.Hour)}, "cookies only"},
		{proxycfg.SessionPersistence{Name: "cookie", Type: proxycfg.SessionHeader}, "reserved"},
		{proxycfg.SessionPersistence{Name: "host", Type: proxycfg.SessionHeader}, "reserved"},
		{proxycfg.SessionPersistence{Name: "s", IdleTimeout: proxycfg.Duration(-time.Second)}, "negative"},
	}
	for _, b := range bad {
		_, err := compileSession(&b.sp)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("compileSession(%+v) = %v, want error containing %q", b.sp, err, b.want)
		}
	}
}

func TestSessionValid(t *testing.T) {
	p := mustCompileSession(t, &proxycfg.SessionPersistence{Name: "s", AbsoluteTimeout: proxycfg.Duration(time.Hour), IdleTimeout: proxycfg.Duration(10 * time.Minute)})
	s := sessT0
	cases := []struct {
		name             string
		start, last, now time.Time
		want             bool
	}{
		{"fresh", s, s, s, true},
		{"idle just under", s, s, s.Add(10*time.Minute - time.Second), true},
		{"idle reached", s, s, s.Add(10 * time.Minute), false},
		{"kept alive", s, s.Add(55 * time.Minute), s.Add(59 * time.Minute), true},
		{"absolute reached though active", s, s.Add(59 * time.Minute), s.Add(time.Hour), false},
		{"last use before start", s, s.Add(-time.Second), s, false},
		{"times ahead within the skew", s.Add(30 * time.Second), s.Add(30 * time.Second), s, true},
		{"times ahead beyond the skew", s.Add(2 * time.Minute), s.Add(2 * time.Minute), s, false},
	}
	for _, c := range cases {
		if got := p.valid(c.start, c.last, c.now); got != c.want {
			t.Errorf("%s: valid = %v, want %v", c.name, got, c.want)
		}
	}
	// No timeouts: only the sanity checks apply.
	q := mustCompileSession(t, &proxycfg.SessionPersistence{Name: "s"})
	if !q.valid(s, s, s.Add(10*365*24*time.Hour)) {
		t.Error("session without timeouts expired")
	}
	if q.valid(s, s.Add(time.Hour), s) {
		t.Error("last use an hour in the future accepted")
	}
}

func TestSessionSetCookie(t *testing.T) {
	c := NewSessionCodec(sessTestKey)
	tok := sessEncode(t, c, sessTestScope, "10.0.0.7:8080", sessT0, sessT0)

	p := mustCompileSession(t, &proxycfg.SessionPersistence{Name: "tg-sess", AbsoluteTimeout: proxycfg.Duration(time.Hour)})
	got := p.setCookie(tok, sessT0, false)
	want := "tg-sess=" + tok + "; Path=/; HttpOnly; SameSite=Lax"
	if got != want {
		t.Errorf("session cookie:\n got %s\nwant %s", got, want)
	}
	if got := p.setCookie(tok, sessT0, true); got != want+"; Secure" {
		t.Errorf("secure cookie: %s", got)
	}

	perm := mustCompileSession(t, &proxycfg.SessionPersistence{Name: "tg-sess", Lifetime: proxycfg.LifetimePermanent, AbsoluteTimeout: proxycfg.Duration(time.Hour)})
	for _, tc := range []struct {
		now  time.Time
		want string
	}{
		{sessT0, "3600"},
		{sessT0.Add(20*time.Minute + 500*time.Millisecond), "2399"},
		{sessT0.Add(2 * time.Hour), "0"},
	} {
		got := perm.setCookie(tok, tc.now, true)
		want := "tg-sess=" + tok + "; Path=/; Max-Age=" + tc.want + "; HttpOnly; SameSite=Lax; Secure"
		if got != want {
			t.Errorf("permanent cookie at %v:\n got %s\nwant %s", tc.now, got, want)
		}
	}
	// Unreadable token: the whole absolute timeout.
	if got := perm.setCookie("zz", sessT0, false); !strings.Contains(got, "Max-Age=3600;") {
		t.Errorf("unreadable token: %s", got)
	}

	// net/http reads it back as one cookie with these attributes.
	resp := http.Response{Header: http.Header{"Set-Cookie": {perm.setCookie(tok, sessT0, true)}}}
	cs := resp.Cookies()
	if len(cs) != 1 {
		t.Fatalf("parsed %d cookies", len(cs))
	}
	ck := cs[0]
	if ck.Name != "tg-sess" || ck.Value != tok || ck.Path != "/" || !ck.HttpOnly || !ck.Secure || ck.SameSite != http.SameSiteLaxMode || ck.MaxAge != 3600 {
		t.Errorf("net/http parsed %+v", ck)
	}
}

func TestSessionTokenFromRequest(t *testing.T) {
	p := mustCompileSession(t, &proxycfg.SessionPersistence{Name: "tg"})
	cases := []struct {
		cookies []string
		want    string
	}{
		{nil, ""},
		{[]string{"tg=abc"}, "abc"},
		{[]string{"a=1; tg=abc; b=2"}, "abc"},
		{[]string{"a=1;tg=abc;b=2"}, "abc"},
		{[]string{"  a=1 ;\t tg =  abc  ; b=2"}, "abc"},
		{[]string{"a=1", "b=2; tg=xyz"}, "xyz"},
		{[]string{"tgx=no; xtg=no; TG=no"}, ""},
		{[]string{"tg=\"quoted\""}, "quoted"},
		{[]string{"tg=; tg=second"}, "second"},
		{[]string{"tg=first; tg=second"}, "first"},
		{[]string{"novalue; tg=v"}, "v"},
		{[]string{";;; tg=v;;"}, "v"},
		{[]string{"a=b=c; tg=d=e"}, "d=e"},
		{[]string{""}, ""},
		{[]string{"tg"}, ""},
	}
	for _, c := range cases {
		h := http.Header{}
		for _, v := range c.cookies {
			h.Add("Cookie", v)
		}
		if got := p.token(h); got != c.want {
			t.Errorf("Cookie %q: token = %q, want %q", c.cookies, got, c.want)
		}
	}
	// A token cookie alongside a header of the same name is ignored.
	h := http.Header{"Tg": {"hdr"}}
	if got := p.token(h); got != "" {
		t.Errorf("cookie policy read a header: %q", got)
	}

	hp := mustCompileSession(t, &proxycfg.SessionPersistence{Name: "x-tg-session", Type: proxycfg.SessionHeader})
	for _, c := range []struct {
		vals []string
		want string
	}{
		{nil, ""},
		{[]string{"tok"}, "tok"},
		{[]string{"  tok\t"}, "tok"},
		{[]string{"", " ", "second"}, "second"},
	} {
		h := http.Header{}
		for _, v := range c.vals {
			h.Add("X-Tg-Session", v)
		}
		h.Add("Cookie", "x-tg-session=cookie")
		if got := hp.token(h); got != c.want {
			t.Errorf("header %q: token = %q, want %q", c.vals, got, c.want)
		}
	}
}

// TestSessionEndToEnd runs the pieces as the proxy will: make a token, set
// it as a cookie, read it back from the next request, check it.
func TestSessionEndToEnd(t *testing.T) {
	c := NewSessionCodec(sessTestKey)
	p := mustCompileSession(t, &proxycfg.SessionPersistence{Name: "tg", Lifetime: proxycfg.LifetimePermanent, AbsoluteTimeout: proxycfg.Duration(time.Hour), IdleTimeout: proxycfg.Duration(5 * time.Minute)})
	tok := string(c.Encode(nil, sessTestScope, "10.1.2.3:80", sessT0, sessT0))
	resp := http.Response{Header: http.Header{"Set-Cookie": {p.setCookie(tok, sessT0, false)}}}
	req, _ := http.NewRequest("GET", "http://example.com/", nil)
	for _, ck := range resp.Cookies() {
		req.AddCookie(ck)
	}
	req.AddCookie(&http.Cookie{Name: "other", Value: "x"})
	got := p.token(req.Header)
	ep, st, lu, ok := c.Decode(got, sessTestScope)
	if !ok || ep != "10.1.2.3:80" {
		t.Fatalf("decode: %q %v", ep, ok)
	}
	if !p.valid(st, lu, sessT0.Add(4*time.Minute)) || p.valid(st, lu, sessT0.Add(6*time.Minute)) {
		t.Error("idle timeout not applied to the decoded token")
	}
}
