package http1

import (
	"bufio"
	"bytes"
	"net/http"
	"testing"
)

// FuzzRequestHead compares the origin server's request parser with
// net/http's: whatever it accepts, net/http must accept too, with the same
// method, target, host and body framing. (It may refuse more: requests
// with both Content-Length and Transfer-Encoding, say.)
func FuzzRequestHead(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /x?y=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
		"GET http://b.example/p HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.0\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
		"\r\nGET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
		"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
		"G\x00T / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: user@a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a_b.example\r\n\r\n",
		"GET http://user@a/ HTTP/1.1\r\nHost: a\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		q := &requestHead{}
		if err := readRequestHead(bufio.NewReader(bytes.NewReader(data)), q); err != nil {
			return
		}
		r := &http.Request{Header: http.Header{}}
		q.fill(r)
		want, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			t.Fatalf("accepted %q; net/http refuses: %v", data, err)
		}
		if r.Method != want.Method || r.RequestURI != want.RequestURI || r.Host != want.Host {
			t.Fatalf("%q: got %s %s host %q; net/http %s %s host %q", data, r.Method, r.RequestURI, r.Host, want.Method, want.RequestURI, want.Host)
		}
		if r.ContentLength != want.ContentLength {
			t.Fatalf("%q: length %d; net/http %d", data, r.ContentLength, want.ContentLength)
		}
		for k, vs := range want.Header {
			if got := r.Header[k]; len(got) != len(vs) {
				t.Fatalf("%q: header %s = %q; net/http %q", data, k, got, vs)
			}
		}
	})
}
