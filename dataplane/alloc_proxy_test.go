//go:build !race

package dataplane

import (
	"bufio"
	"net"
	"testing"
)

// proxyAllocBudget is the whole process's allocations for one proxied GET
// shaped like cloudflared's (benchRequest, ten header fields): 33 are
// net/http's server side (request, URL, context, the header map and a
// string and slice per field, the response writer and its header
// snapshot); 2 are the proxy's own (the response header values, as one
// string and one slice backing array). A RequestHeaderModifier adds none.
// httputil.ReverseProxy makes 94 for the same request.
const proxyAllocBudget = 35

func TestAllocsProxyGET(t *testing.T) {
	be := rawBackend(t)
	for _, headers := range []bool{false, true} {
		addr := serveHandler(t, tunnelgateHandler(t, be, headers))
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
		n := testing.AllocsPerRun(500, get)
		t.Logf("header filters %v: %.1f allocs", headers, n)
		if n > proxyAllocBudget {
			t.Errorf("header filters %v: %.1f allocations per request, budget %d", headers, n, proxyAllocBudget)
		}
	}
}
