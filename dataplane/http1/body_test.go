package http1

import (
	"net/http"
	"strings"
	"testing"
)

// Trailers that frame, route, authenticate or set cookies are dropped
// (RFC 9110 §6.5.1); others are passed on under http.TrailerPrefix.
func TestCopyBodyFiltersTrailers(t *testing.T) {
	answer := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n" +
		"Set-Cookie: session=stolen\r\nContent-Length: 99\r\nAuthorization: Basic eA==\r\nHost: elsewhere\r\n" +
		"Transfer-Encoding: chunked\r\nX-Checksum: 900150983cd24fb0\r\nGrpc-Status: 0\r\n\r\n"
	b := startBackend(t, func(int) string { return answer }, nil)
	p := testPool(b.addr)
	c, err := p.Get(t.Context(), "", false)
	if err != nil {
		t.Fatal(err)
	}
	WriteRequestLine(c.Writer(), "GET", "/", "h")
	EndHead(c.Writer(), 0)
	done, _ := c.Send(nil, nil, 0)
	h := GetHead()
	defer PutHead(h)
	if err := c.ReadResponse(h, false); err != nil {
		t.Fatal(err)
	}
	var body strings.Builder
	trailers := http.Header{}
	if upErr, downErr := c.CopyBody(&body, nil, h, "GET", trailers); upErr != nil || downErr != nil {
		t.Fatal(upErr, downErr)
	}
	c.Finish(h, true, "GET", done)
	want := http.Header{
		http.TrailerPrefix + "X-Checksum":  {"900150983cd24fb0"},
		http.TrailerPrefix + "Grpc-Status": {"0"},
	}
	if body.String() != "abc" || len(trailers) != len(want) ||
		trailers.Get(http.TrailerPrefix+"X-Checksum") != "900150983cd24fb0" || trailers.Get(http.TrailerPrefix+"Grpc-Status") != "0" {
		t.Errorf("body %q, trailers %v; want %v", body.String(), trailers, want)
	}
}
