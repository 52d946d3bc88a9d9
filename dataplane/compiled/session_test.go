package compiled

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

var sessT0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func mustCompileSession(t *testing.T, sp *proxycfg.SessionPersistence) *SessionPolicy {
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
	p := mustCompileSession(t, &proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "sess"})
	if p.header || p.permanent {
		t.Errorf("defaults: %+v", p)
	}
	p = mustCompileSession(t, &proxycfg.SessionPersistence{Lifetime: proxycfg.LifetimeSession, Name: "x-session-id", Type: proxycfg.SessionHeader})
	if !p.header || p.headerKey != "X-Session-Id" {
		t.Errorf("header: %+v", p)
	}
	p = mustCompileSession(t, &proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Name: "s", Lifetime: proxycfg.LifetimePermanent, AbsoluteTimeout: proxycfg.Duration(time.Hour)})
	if !p.permanent || p.absolute != time.Hour {
		t.Errorf("permanent: %+v", p)
	}
	mustCompileSession(t, &proxycfg.SessionPersistence{Name: "s", Type: proxycfg.SessionHeader, Lifetime: proxycfg.LifetimeSession})
	mustCompileSession(t, &proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "!#$%&'*+-.^_`|~09azAZ"})
	mustCompileSession(t, &proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: strings.Repeat("n", 256)})
	p = mustCompileSession(t, &proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "s", Path: "/app/x%20y"})
	if p.path != "/app/x%20y" {
		t.Errorf("cookie path: %+v", p)
	}
	if p = mustCompileSession(t, &proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "s"}); p.path != "/" {
		t.Errorf("default cookie path %q, want /", p.path)
	}

	bad := []struct {
		sp   proxycfg.SessionPersistence
		want string
	}{
		{proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession}, "empty"},
		{proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "a b"}, "character"},
		{proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "a=b"}, "character"},
		{proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "a;b"}, "character"},
		{proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "sess\"id"}, "character"},
		{proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "sé"}, "character"},
		{proxycfg.SessionPersistence{Lifetime: proxycfg.LifetimeSession, Name: "a:b", Type: proxycfg.SessionHeader}, "character"},
		{proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: strings.Repeat("n", 257)}, "more than 256"},
		{proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "s", Path: "app"}, "begin with"},
		{proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "s", Path: "/a;b"}, "character"},
		{proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "s", Path: "/a\nb"}, "character"},
		{proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "s", Path: "/" + strings.Repeat("p", 1024)}, "more than 1024"},
		{proxycfg.SessionPersistence{Lifetime: proxycfg.LifetimeSession, Name: "s", Type: proxycfg.SessionHeader, Path: "/app"}, "cookies only"},
		{proxycfg.SessionPersistence{Lifetime: proxycfg.LifetimeSession, Name: "s", Type: "Query"}, "type"},
		{proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Name: "s", Lifetime: "Forever"}, "lifetime"},
		{proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Name: "s", Lifetime: proxycfg.LifetimePermanent}, "absoluteTimeout"},
		{proxycfg.SessionPersistence{Name: "s", Type: proxycfg.SessionHeader, Lifetime: proxycfg.LifetimePermanent, AbsoluteTimeout: proxycfg.Duration(time.Hour)}, "cookies only"},
		{proxycfg.SessionPersistence{Lifetime: proxycfg.LifetimeSession, Name: "cookie", Type: proxycfg.SessionHeader}, "reserved"},
		{proxycfg.SessionPersistence{Lifetime: proxycfg.LifetimeSession, Name: "host", Type: proxycfg.SessionHeader}, "reserved"},
		{proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "s", IdleTimeout: proxycfg.Duration(-time.Second)}, "negative"},
	}
	for _, b := range bad {
		_, err := compileSession(&b.sp)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("compileSession(%+v) = %v, want error containing %q", b.sp, err, b.want)
		}
	}
}

func TestSessionValid(t *testing.T) {
	p := mustCompileSession(t, &proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "s", AbsoluteTimeout: proxycfg.Duration(time.Hour), IdleTimeout: proxycfg.Duration(10 * time.Minute)})
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
		if got := p.Valid(c.start, c.last, c.now); got != c.want {
			t.Errorf("%s: valid = %v, want %v", c.name, got, c.want)
		}
	}
	// No timeouts: only the sanity checks apply.
	q := mustCompileSession(t, &proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "s"})
	if !q.Valid(s, s, s.Add(10*365*24*time.Hour)) {
		t.Error("session without timeouts expired")
	}
	if q.Valid(s, s.Add(time.Hour), s) {
		t.Error("last use an hour in the future accepted")
	}
}

func TestSessionSetCookie(t *testing.T) {
	tok := "AbC-_09tok"

	p := mustCompileSession(t, &proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "tg-sess", AbsoluteTimeout: proxycfg.Duration(time.Hour)})
	got := p.SetCookie(tok, sessT0, sessT0, false)
	want := "tg-sess=" + tok + "; Path=/; HttpOnly; SameSite=Lax"
	if got != want {
		t.Errorf("session cookie:\n got %s\nwant %s", got, want)
	}
	if got := p.SetCookie(tok, sessT0, sessT0, true); got != want+"; Secure" {
		t.Errorf("secure cookie: %s", got)
	}

	// cookie.path (Gateway API v1.7) replaces the default "/".
	app := mustCompileSession(t, &proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "tg-sess", Path: "/app"})
	if got, want := app.SetCookie(tok, sessT0, sessT0, false), "tg-sess="+tok+"; Path=/app; HttpOnly; SameSite=Lax"; got != want {
		t.Errorf("cookie with a path:\n got %s\nwant %s", got, want)
	}

	perm := mustCompileSession(t, &proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Name: "tg-sess", Lifetime: proxycfg.LifetimePermanent, AbsoluteTimeout: proxycfg.Duration(time.Hour)})
	for _, tc := range []struct {
		now  time.Time
		want string
	}{
		{sessT0, "3600"},
		{sessT0.Add(20*time.Minute + 500*time.Millisecond), "2399"},
		{sessT0.Add(2 * time.Hour), "0"},
	} {
		got := perm.SetCookie(tok, sessT0, tc.now, true)
		want := "tg-sess=" + tok + "; Path=/; Max-Age=" + tc.want + "; HttpOnly; SameSite=Lax; Secure"
		if got != want {
			t.Errorf("permanent cookie at %v:\n got %s\nwant %s", tc.now, got, want)
		}
	}

	// net/http reads it back as one cookie with these attributes.
	resp := http.Response{Header: http.Header{"Set-Cookie": {perm.SetCookie(tok, sessT0, sessT0, true)}}}
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
	p := mustCompileSession(t, &proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "tg"})
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
		if got := p.Token(h); got != c.want {
			t.Errorf("Cookie %q: token = %q, want %q", c.cookies, got, c.want)
		}
	}
	// A token cookie alongside a header of the same name is ignored.
	h := http.Header{"Tg": {"hdr"}}
	if got := p.Token(h); got != "" {
		t.Errorf("cookie policy read a header: %q", got)
	}

	hp := mustCompileSession(t, &proxycfg.SessionPersistence{Lifetime: proxycfg.LifetimeSession, Name: "x-tg-session", Type: proxycfg.SessionHeader})
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
		if got := hp.Token(h); got != c.want {
			t.Errorf("header %q: token = %q, want %q", c.vals, got, c.want)
		}
	}
}
