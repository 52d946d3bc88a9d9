package hostile

// Broken request bodies. A client that sends a malformed chunked body, or
// ends an HTTP/2 stream before the content-length it declared, is at
// fault: it must get 400, and the proxy's upstream error counters, which
// operators alert on, must not move. Today a body too big to be written
// inline (over 64 KiB, or chunked, which is always streamed) is written
// upstream by a goroutine; when reading the client fails, that goroutine
// closes the upstream connection, the handler's read of the response head
// fails, and the proxy blames the backend: 502, UpstreamErrors and
// tunnelgate_upstream_requests_total{result="error"} go up.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// chunks is a well-formed run of chunks carrying n bytes (no last chunk).
func chunks(n int) string {
	var b strings.Builder
	for n > 0 {
		k := min(n, 16<<10)
		fmt.Fprintf(&b, "%x\r\n%s\r\n", k, strings.Repeat("a", k))
		n -= k
	}
	return b.String()
}

// brokenChunked are chunked request bodies that go wrong after what is
// well-formed; "large" ones pass 64 KiB first.
var brokenChunked = []struct{ name, body string }{
	{"bad chunk size/small", chunks(10) + "zz\r\n"},
	{"bad chunk size/large", chunks(80<<10) + "zz\r\n"},
	{"no CRLF after chunk data/small", "5\r\nhelloXX"},
	{"no CRLF after chunk data/large", chunks(80<<10) + "5\r\nhelloXX"},
}

// shortStreams are HTTP/2 requests whose DATA ends (END_STREAM) before
// the content-length they declare.
var shortStreams = []struct {
	name     string
	declared int
}{
	{"small", 1000},
	{"large", 100_000},
}

func TestBrokenClientBody(t *testing.T) {
	be := newBackend(t)
	e := newEnv(t, be.addr)

	// clean runs send and checks the upstream metrics did not move.
	clean := func(t *testing.T, p path, send func()) {
		t.Helper()
		stats := e.proxy(p).Stats()
		errs, metric := stats.UpstreamErrors.Load(), upstreamErrorsMetric(t, e.adminOf(p))
		send()
		if n := stats.UpstreamErrors.Load(); n != errs {
			t.Errorf("Stats().UpstreamErrors went from %d to %d", errs, n)
		}
		if m := upstreamErrorsMetric(t, e.adminOf(p)); m != metric {
			t.Errorf(`tunnelgate_upstream_requests_total{cluster="backend",result="error"} went from %v to %v`, metric, m)
		}
	}

	e.each(func(t *testing.T, p path) {
		for _, tc := range brokenChunked {
			t.Run(tc.name, func(t *testing.T) {
				clean(t, p, func() {
					c := p.dial(t)
					defer c.Close()
					head := "POST /x HTTP/1.1\r\nHost: " + p.addr + "\r\nTransfer-Encoding: chunked\r\n\r\n"
					res, body, err := exchange1(c, []byte(head+tc.body), "POST")
					if err != nil {
						t.Errorf("%v", err)
					} else if res.StatusCode != 400 {
						t.Errorf("got %d %q, want 400", res.StatusCode, truncated(string(body)))
					}
				})
			})
		}
	}, onH1)

	e.each(func(t *testing.T, p path) {
		for _, tc := range shortStreams {
			t.Run(tc.name, func(t *testing.T) {
				clean(t, p, func() {
					h := h2dial(t, p.dial(t))
					s := h.open(p.request("POST", "/x", p.addr, hf{"content-length", strconv.Itoa(tc.declared)}), false)
					h.data(s, []byte("0123456789"), true)
					if s.result(t); s.status != 400 {
						t.Errorf("content-length %d, 10 bytes sent: got %v, want 400", tc.declared, s)
					}
				})
			})
		}
	}, onH2)
}
