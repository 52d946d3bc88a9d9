//go:build !race

package dataplane

import (
	"bufio"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// proxyAllocBudget is the whole process's allocations for one proxied GET
// shaped like cloudflared's (benchRequest, ten header fields) through the
// origin listener's own server: the request's target, names and values
// (one string) and its header map's value slices (one array). The answer
// costs none: with no response filter its head goes on from the backend's
// without a header map (ResponseWriter.WriteHead). A RequestHeaderModifier
// adds none. Through net/http's server the same request costs 35;
// httputil.ReverseProxy makes 94.
const proxyAllocBudget = 2

// streamedAllocBudget is proxyAllocBudget for an answer too large to read
// whole before it is sent: its head goes through the header map (one
// string and one array more), as the body streams after it.
const streamedAllocBudget = proxyAllocBudget + 2

func TestAllocsProxyGET(t *testing.T) {
	be := rawBackend(t)
	for _, headers := range []bool{false, true} {
		get := getOn(t, serveOwn(t, tunnelgateHandler(t, be, headers)), benchRequest)
		for range 50 {
			get() // warm the pools
		}
		if n := testing.AllocsPerRun(500, get); n > proxyAllocBudget {
			t.Errorf("header filters %v: %.1f allocations per request, budget %d", headers, n, proxyAllocBudget)
		}
	}
}

// A protected rule's request with a token the proxy verified before costs
// no allocation more than the same request on an open rule: the token is
// found in the cache without allocating, and the identity headers are
// written straight to the backend connection. (The token's header field
// itself, an eleventh, costs the request one.)
func TestAllocsProxyGETWithAccess(t *testing.T) {
	be := rawBackend(t)
	key := accessTeamKey(t)
	req := withHeader(benchRequest, "Cf-Access-Jwt-Assertion", accessJWT(t, key, accessClaims()))
	allocs := map[bool]float64{}
	for _, protected := range []bool{false, true} {
		var access *proxycfg.Access
		if protected {
			access = &proxycfg.Access{Team: e2eTeam, Audiences: []string{e2eAud}, EmailHeader: "X-Auth-Email", GroupsHeader: "X-Auth-Groups"}
		}
		p := accessProxy(t, be, &key.PublicKey, access)
		get := getOn(t, serveOwn(t, p.Handler(0, true)), req)
		for range 50 {
			get()
		}
		if passed := p.stats.Access[cfaccess.ReasonNone].Load(); protected && passed != 50 {
			t.Fatalf("%d requests let through by Access of 50", passed)
		}
		allocs[protected] = testing.AllocsPerRun(500, get)
	}
	if allocs[true] > allocs[false] || allocs[false] > proxyAllocBudget+1 {
		t.Errorf("%.1f allocations per request on a protected rule, %.1f on an open one (budget %d+1)", allocs[true], allocs[false], proxyAllocBudget)
	}
}

// A large answer costs no allocation more than a small one but its head's:
// a 64 KiB one is read whole into a pooled buffer, a 1 MiB one streams
// through a pooled 64 KiB one (its head through the header map), and the
// head goes out with the body's first piece in a vectored write that
// allocates nothing.
func TestAllocsProxyLargeAnswer(t *testing.T) {
	for _, size := range []int{64 << 10, 1 << 20} {
		get := getSizedOn(t, serveOwn(t, tunnelgateHandler(t, bodyBackend(t, size), false)), benchRequest, size)
		for range 50 {
			get()
		}
		budget := proxyAllocBudget
		if size > responseBuffer {
			budget = streamedAllocBudget
		}
		if n := testing.AllocsPerRun(200, get); n > float64(budget) {
			t.Errorf("%d-byte answer: %.1f allocations per request, budget %d", size, n, budget)
		}
	}
}

// getOn returns a function sending req on one connection to addr and
// reading its 100-byte answer; the connection closes when the test ends.
func getOn(t *testing.T, addr string, req []byte) func() {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	br := bufio.NewReader(c)
	body := make([]byte, 100)
	return func() {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		if n, err := readResponse(br, body); err != nil || n != 100 {
			t.Fatalf("response: %d bytes, %v", n, err)
		}
	}
}

// An access log line costs no allocation of its own for a path the
// router matched as the client spelt it: the routed path and the client's
// spelling (client_path) are built only when they differ.
func TestAllocsAccessLogLine(t *testing.T) {
	r := httptest.NewRequest("GET", "/cart/x?id=7", nil)
	rec := reqRecord{path: "/cart/x", query: "id=7"}
	var ln observe.Line
	if n := testing.AllocsPerRun(100, func() { ln = accessLogLine(&rec, r, false, 200, 0, time.Time{}) }); n != 0 {
		t.Errorf("%.1f allocations per line, want 0", n)
	}
	if ln.Path != "/cart/x?id=7" || ln.ClientPath != "" {
		t.Errorf("path %q client_path %q", ln.Path, ln.ClientPath)
	}
	r = httptest.NewRequest("GET", "//cart/./x?id=7", nil)
	if ln = accessLogLine(&rec, r, false, 200, 0, time.Time{}); ln.Path != "/cart/x?id=7" || ln.ClientPath != "//cart/./x?id=7" {
		t.Errorf("respelt: path %q client_path %q", ln.Path, ln.ClientPath)
	}
}
