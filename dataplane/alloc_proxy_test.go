//go:build !race

package dataplane

import (
	"bufio"
	"net"
	"testing"
)

// proxyAllocBudget is the whole process's allocations for one proxied GET
// shaped like cloudflared's (benchRequest, ten header fields) through the
// origin listener's own server: the request's target and header values
// (one string and one slice array), and the response's header values
// (the same two). A RequestHeaderModifier adds none. Through net/http's
// server the same request costs 35; httputil.ReverseProxy makes 94.
const proxyAllocBudget = 4

func TestAllocsProxyGET(t *testing.T) {
	be := rawBackend(t)
	for _, headers := range []bool{false, true} {
		addr := serveOwn(t, tunnelgateHandler(t, be, headers))
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		br := bufio.NewReader(c)
		body := make([]byte, 100)
		get := func() {
			if _, err := c.Write(benchRequest); err != nil {
				t.Fatal(err)
			}
			if n, err := readResponse(br, body); err != nil || n != 100 {
				t.Fatalf("response: %d bytes, %v", n, err)
			}
		}
		for range 50 {
			get() // warm the pools
		}
		if n := testing.AllocsPerRun(500, get); n > proxyAllocBudget {
			t.Errorf("header filters %v: %.1f allocations per request, budget %d", headers, n, proxyAllocBudget)
		}
	}
}
