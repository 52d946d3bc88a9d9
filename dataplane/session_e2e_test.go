package dataplane

import (
	"encoding/binary"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// End-to-end tests of session persistence: a rule pins a client to one
// endpoint by a signed cookie or header, through real listeners and
// backends that say who they are.

// sessPool starts n HTTP/1.1 (or h2c) backends "be0".."be<n-1>" and
// returns the cluster and each backend's name by address.
func sessPool(t *testing.T, name, proto string, n int) (proxycfg.Cluster, map[string]string) {
	t.Helper()
	c := cluster(name)
	c.Protocol = proto
	names := map[string]string{}
	for i := range n {
		be := name + "-be" + strconv.Itoa(i)
		var addr string
		if proto == proxycfg.ProtoH2C {
			addr = h2cBackend(t, echo(be))
		} else {
			addr = startBackend(t, echo(be))
		}
		c.Endpoints = append(c.Endpoints, proxycfg.Endpoint{Address: addr})
		names[addr] = be
	}
	return c, names
}

// sessEnv serves one rule with sp over the clusters; the rule sends to
// each cluster with weight 1.
func sessEnv(t *testing.T, sp proxycfg.SessionPersistence, clusters ...proxycfg.Cluster) *testEnv {
	t.Helper()
	ru := proxycfg.Rule{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}, SessionPersistence: &sp}
	for _, c := range clusters {
		ru.Backends = append(ru.Backends, proxycfg.BackendRef{Cluster: c.Name, Weight: 1})
	}
	return ptEnv(t, config([]proxycfg.Route{route("sticky", ru)}, clusters...))
}

// sessAnswer is what one request showed.
type sessAnswer struct {
	backend   string
	token     string // the token the response set, or ""
	setCookie string // the raw Set-Cookie carrying it, for a cookie session
}

// sessGet sends a request carrying tok (when not "") the way sp says and
// reports which backend answered and what token came back.
func sessGet(t *testing.T, e *testEnv, sp proxycfg.SessionPersistence, tok string, hdr ...string) sessAnswer {
	t.Helper()
	if tok != "" {
		if sp.Type == proxycfg.SessionHeader {
			hdr = append(hdr, sp.Name, tok)
		} else {
			hdr = append(hdr, "Cookie", "theme=dark; "+sp.Name+"="+tok+"; lang=en")
		}
	}
	res, body := e.get("shop.example.com", "/cart", hdr...)
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %q", res.StatusCode, body)
	}
	a := sessAnswer{backend: echoed(body, "backend")}
	if a.backend == "" {
		t.Fatalf("no backend in %q", body)
	}
	if sp.Type == proxycfg.SessionHeader {
		a.token = res.Header.Get(sp.Name)
		if sc := res.Header["Set-Cookie"]; len(sc) > 0 {
			t.Errorf("a header session set a cookie: %q", sc)
		}
		return a
	}
	for _, sc := range res.Header["Set-Cookie"] {
		if strings.HasPrefix(sc, sp.Name+"=") {
			if a.token != "" {
				t.Errorf("two %s cookies set: %q", sp.Name, res.Header["Set-Cookie"])
			}
			a.setCookie = sc
			a.token, _, _ = strings.Cut(strings.TrimPrefix(sc, sp.Name+"="), ";")
		}
	}
	return a
}

// sessStart is the start time a token carries.
func sessStart(t *testing.T, tok string) time.Time {
	t.Helper()
	st, ok := sessionTokenStart(tok)
	if !ok {
		t.Fatalf("token %q does not carry a start time", tok)
	}
	return st
}

// sessSticky sends n requests with tok and checks they all reach want,
// and, without an idle timeout to refresh it, that none sets a new token.
func sessSticky(t *testing.T, e *testEnv, sp proxycfg.SessionPersistence, tok, want string, n int) {
	t.Helper()
	for i := range n {
		a := sessGet(t, e, sp, tok)
		if a.backend != want {
			t.Fatalf("request %d with the session of %s went to %s", i, want, a.backend)
		}
		if a.token != "" && sp.IdleTimeout == 0 {
			t.Fatalf("request %d with a valid session got a new token", i)
		}
	}
}

// sessSpread sends n requests without a session and returns a token per
// backend reached; each response must start a session.
func sessSpread(t *testing.T, e *testEnv, sp proxycfg.SessionPersistence, n int) map[string]string {
	t.Helper()
	seen := map[string]string{}
	for i := range n {
		a := sessGet(t, e, sp, "")
		if a.token == "" {
			t.Fatalf("request %d without a session did not start one", i)
		}
		seen[a.backend] = a.token
	}
	return seen
}

func TestSessionE2ECookie(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{proxycfg.ProtoHTTP1, proxycfg.ProtoH2C} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			sp := proxycfg.SessionPersistence{Lifetime: proxycfg.LifetimeSession, Name: "tg-session", Type: proxycfg.SessionCookie}
			pool, _ := sessPool(t, "pool", proto, 3)
			e := sessEnv(t, sp, pool)

			first := sessGet(t, e, sp, "")
			if first.token == "" {
				t.Fatal("the first response set no tg-session cookie")
			}
			res := http.Response{Header: http.Header{"Set-Cookie": {first.setCookie}}}
			ck := res.Cookies()
			if len(ck) != 1 || ck[0].Path != "/" || !ck[0].HttpOnly || ck[0].MaxAge != 0 || !ck[0].Expires.IsZero() || ck[0].Secure {
				t.Errorf("Set-Cookie %q: want Path=/, HttpOnly, a session cookie (no Max-Age, no Expires), not Secure over http", first.setCookie)
			}
			sessSticky(t, e, sp, first.token, first.backend, 30)

			seen := sessSpread(t, e, sp, 60)
			if len(seen) < 2 {
				t.Fatalf("60 requests without a session all went to %v", seen)
			}
			// Each session sticks to its own backend.
			for be, tok := range seen {
				sessSticky(t, e, sp, tok, be, 5)
			}
		})
	}
}

func TestSessionE2EHeader(t *testing.T) {
	t.Parallel()
	sp := proxycfg.SessionPersistence{Lifetime: proxycfg.LifetimeSession, Name: "X-Session", Type: proxycfg.SessionHeader}
	pool, _ := sessPool(t, "pool", proxycfg.ProtoHTTP1, 3)
	e := sessEnv(t, sp, pool)
	first := sessGet(t, e, sp, "")
	if first.token == "" {
		t.Fatal("the first response set no X-Session header")
	}
	sessSticky(t, e, sp, first.token, first.backend, 30)
	seen := sessSpread(t, e, sp, 60)
	if len(seen) < 2 {
		t.Fatalf("60 requests without a session all went to %v", seen)
	}
	for be, tok := range seen {
		sessSticky(t, e, sp, tok, be, 5)
	}
	// A header session ignores a cookie of the same name.
	if a := sessGet(t, e, sp, "", "Cookie", "X-Session="+first.token); a.token == "" {
		t.Error("a cookie was taken for a header session")
	}
}

// TestSessionE2ETwoClusters pins across the rule's backend refs: the token
// names the cluster as well as the endpoint.
func TestSessionE2ETwoClusters(t *testing.T) {
	t.Parallel()
	sp := proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "tg-session"}
	blue, _ := sessPool(t, "blue", proxycfg.ProtoHTTP1, 2)
	green, _ := sessPool(t, "green", proxycfg.ProtoH2C, 2)
	e := sessEnv(t, sp, blue, green)
	seen := sessSpread(t, e, sp, 60)
	if len(seen) < 3 {
		t.Fatalf("60 requests reached only %d of 4 backends", len(seen))
	}
	for be, tok := range seen {
		sessSticky(t, e, sp, tok, be, 10)
	}
}

func TestSessionE2ETamperedCookie(t *testing.T) {
	t.Parallel()
	sp := proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "tg-session"}
	pool, _ := sessPool(t, "pool", proxycfg.ProtoHTTP1, 3)
	e := sessEnv(t, sp, pool)
	first := sessGet(t, e, sp, "")
	tampered := []byte(first.token)
	i := len(tampered) / 2
	if tampered[i] == 'A' {
		tampered[i] = 'B'
	} else {
		tampered[i] = 'A'
	}
	for _, bad := range []string{string(tampered), first.token[:len(first.token)-4], "not-a-token", first.token + "AAAA"} {
		a := sessGet(t, e, sp, bad)
		if a.token == "" || a.token == bad {
			t.Fatalf("a tampered cookie %q was honoured: no new session", bad)
		}
		// The new session works.
		sessSticky(t, e, sp, a.token, a.backend, 5)
	}
	// The proxy's own tokens are still honoured.
	sessSticky(t, e, sp, first.token, first.backend, 3)
}

// TestSessionE2EEndpointRemoved checks that a session pinned to an
// endpoint that left the cluster moves to another and is re-issued.
func TestSessionE2EEndpointRemoved(t *testing.T) {
	t.Parallel()
	sp := proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "tg-session"}
	pool, names := sessPool(t, "pool", proxycfg.ProtoHTTP1, 3)
	e := sessEnv(t, sp, pool)
	first := sessGet(t, e, sp, "")
	sessSticky(t, e, sp, first.token, first.backend, 5)

	kept := cluster(pool.Name)
	for _, ep := range pool.Endpoints {
		if names[ep.Address] != first.backend {
			kept.Endpoints = append(kept.Endpoints, ep)
		}
	}
	if len(kept.Endpoints) != 2 {
		t.Fatalf("pinned backend %s not among %v", first.backend, names)
	}
	if err := churn(e.p, kept); err != nil {
		t.Fatal(err)
	}
	a := sessGet(t, e, sp, first.token)
	if a.backend == first.backend {
		t.Fatalf("the request went to the removed backend %s", a.backend)
	}
	if a.token == "" || a.token == first.token {
		t.Fatal("no new session was issued after the pinned endpoint left")
	}
	sessSticky(t, e, sp, a.token, a.backend, 10)
}

// TestSessionE2EIdleRefresh checks that with an IdleTimeout every
// response refreshes the token, so a client that keeps using its session
// keeps it: requests 100 ms apart with a 1 s idle timeout, for over two
// seconds, stay in one session.
func TestSessionE2EIdleRefresh(t *testing.T) {
	t.Parallel()
	sp := proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "tg-session", IdleTimeout: proxycfg.Duration(time.Second)}
	pool, _ := sessPool(t, "pool", proxycfg.ProtoHTTP1, 3)
	e := sessEnv(t, sp, pool)
	first := sessGet(t, e, sp, "")
	lastDone := time.Now() // the token's last use is no later than this
	start := sessStart(t, first.token)
	tok := first.token
	end := time.Now().Add(2300 * time.Millisecond) // crosses two second boundaries
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; time.Now().Before(end); i++ {
		<-tick.C
		sent := time.Now()
		a := sessGet(t, e, sp, tok)
		if a.token == "" {
			t.Fatalf("request %d: the token was not refreshed (IdleTimeout is set)", i)
		}
		gap := sent.Sub(lastDone)
		lastDone = time.Now()
		if gap > time.Second { // a busy machine: the session may rightly be over
			t.Logf("request %d sent %v after the last answer; not checked", i, gap)
			start, first.backend, tok = sessStart(t, a.token), a.backend, a.token
			continue
		}
		if st := sessStart(t, a.token); !st.Equal(start) || a.backend != first.backend {
			t.Fatalf("request %d at %s, 100 ms after the last use, started a new session (start %s, was %s; backend %s, was %s): "+
				"token times have 1 s resolution and the idle check does not allow for it, so a session expires at the second after its last use",
				i, sent.Format("15:04:05.000"), st.Format("15:04:05"), start.Format("15:04:05"), a.backend, first.backend)
		}
		tok = a.token
	}
}

// TestSessionE2EIdleExpiry checks that a session unused for longer than
// its IdleTimeout is replaced.
func TestSessionE2EIdleExpiry(t *testing.T) {
	t.Parallel()
	const idle = time.Second
	sp := proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "tg-session", IdleTimeout: proxycfg.Duration(idle)}
	pool, _ := sessPool(t, "pool", proxycfg.ProtoHTTP1, 3)
	e := sessEnv(t, sp, pool)
	first := sessGet(t, e, sp, "")
	lastUse := time.Now() // the token's last use is no later than this
	// The token keeps whole seconds: by lastUse+idle+1s the session is
	// over however the proxy rounds.
	time.Sleep(time.Until(lastUse.Add(idle + time.Second + 100*time.Millisecond)))
	a := sessGet(t, e, sp, first.token)
	if a.token == "" {
		t.Fatal("a request after the idle timeout got no token")
	}
	if st := sessStart(t, a.token); !st.After(sessStart(t, first.token)) {
		t.Fatalf("the idle session was kept: start %s", st)
	}
}

// TestSessionE2EAbsoluteTimeout checks that a session ends AbsoluteTimeout
// after it began, however much it is used.
func TestSessionE2EAbsoluteTimeout(t *testing.T) {
	t.Parallel()
	const absolute = 2 * time.Second
	sp := proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "tg-session", AbsoluteTimeout: proxycfg.Duration(absolute)}
	pool, _ := sessPool(t, "pool", proxycfg.ProtoHTTP1, 3)
	e := sessEnv(t, sp, pool)
	before := time.Now()
	first := sessGet(t, e, sp, "")
	began := time.Now() // the session began between before and began
	// Poll with the first token until the proxy replaces it. The token
	// keeps whole seconds, so the end lies between before+absolute-1s and
	// began+absolute+1s (allowing the proxy either rounding): a request
	// sent after that must be answered with a new session.
	deadline := began.Add(absolute + time.Second + 100*time.Millisecond)
	var renewed sessAnswer
	var at time.Duration
	for {
		sent := time.Now()
		a := sessGet(t, e, sp, first.token)
		if a.token != "" {
			renewed, at = a, time.Since(before)
			break
		}
		if sent.After(deadline) {
			t.Fatalf("the session was still honoured %v after it began (absolute timeout %v)", sent.Sub(before), absolute)
		}
		if a.backend != first.backend {
			t.Fatalf("within the session a request went to %s, not %s", a.backend, first.backend)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if at < absolute-time.Second-50*time.Millisecond {
		t.Errorf("the session ended %v after it began, before the %v absolute timeout allows", at, absolute)
	}
	if !sessStart(t, renewed.token).After(sessStart(t, first.token)) {
		t.Errorf("the new token has the old start time")
	}
	sessSticky(t, e, sp, renewed.token, renewed.backend, 3)
}

func TestSessionE2EPermanentCookie(t *testing.T) {
	t.Parallel()
	sp := proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Name: "tg-session", Lifetime: proxycfg.LifetimePermanent, AbsoluteTimeout: proxycfg.Duration(time.Hour)}
	pool, _ := sessPool(t, "pool", proxycfg.ProtoHTTP1, 3)
	e := sessEnv(t, sp, pool)
	a := sessGet(t, e, sp, "")
	res := http.Response{Header: http.Header{"Set-Cookie": {a.setCookie}}}
	ck := res.Cookies()
	if len(ck) != 1 {
		t.Fatalf("Set-Cookie %q does not parse", a.setCookie)
	}
	if ck[0].MaxAge < 3598 || ck[0].MaxAge > 3600 {
		t.Errorf("Set-Cookie %q: Max-Age %d, want about 3600", a.setCookie, ck[0].MaxAge)
	}
	sessSticky(t, e, sp, a.token, a.backend, 5)
}

// TestSessionE2ESecureCookie checks the Secure attribute follows the
// client's scheme: TLS to the proxy, or https as cloudflared reports it.
func TestSessionE2ESecureCookie(t *testing.T) {
	t.Parallel()
	sp := proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession, Name: "tg-session"}
	pool, _ := sessPool(t, "pool", proxycfg.ProtoHTTP1, 2)
	e := sessEnv(t, sp, pool)
	a := sessGet(t, e, sp, "", "X-Forwarded-Proto", "https")
	if !strings.Contains(a.setCookie, "; Secure") {
		t.Errorf("behind cloudflared with https: Set-Cookie %q is not Secure", a.setCookie)
	}
	req, _ := http.NewRequest("GET", "https://"+e.bound.OriginTLS+"/cart", nil)
	res, _ := e.do(e.h2, req)
	if sc := res.Header.Get("Set-Cookie"); !strings.HasPrefix(sc, "tg-session=") || !strings.Contains(sc, "; Secure") {
		t.Errorf("over TLS: Set-Cookie %q is not Secure", sc)
	}
}

// sessionTokenStart reads the start time out of a token without checking
// its MAC.
func sessionTokenStart(token string) (time.Time, bool) {
	raw, err := sessionB64.DecodeString(token)
	if err != nil || len(raw) < sessionHeaderLen || raw[0] != sessionTokenVersion {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(binary.BigEndian.Uint64(raw[1+sessionKeyIDLen:]))).UTC(), true
}
