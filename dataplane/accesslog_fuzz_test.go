package dataplane

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Whatever a client puts in a host, path or method, the access log's
// string is valid JSON that decodes to the same text (bytes that are not
// UTF-8 become U+FFFD).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "/plain", `"quoted"`, `back\slash`, "ctl\x00\x1f\x7f", "é中🙂", "\xff\xfe", "tab\tnl\nlf\r", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendJSONString([]byte("x"), s)
		if b[0] != 'x' {
			t.Fatal("overwrote what was there")
		}
		var got string
		if err := json.Unmarshal(b[1:], &got); err != nil {
			t.Fatalf("%q encodes to invalid JSON %s: %v", s, b[1:], err)
		}
		// Each byte that is not UTF-8 becomes one U+FFFD.
		var want strings.Builder
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				want.WriteRune(utf8.RuneError)
			} else {
				want.WriteString(s[i : i+n])
			}
			i += n
		}
		if got != want.String() {
			t.Fatalf("%q decodes to %q, want %q", s, got, want.String())
		}
	})
}

// FuzzAccessLogRequest drives the request pipeline and the access log
// with every request head a server of the proxy accepts: net/http's (the
// TLS origin, plain and Gateway listeners) and the origin listener's own.
// Whatever the target's form (absolute, "*", CONNECT's authority), the
// handler answers without panicking and the log line is valid JSON.
func FuzzAccessLogRequest(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET http://a.example/x?y=1 HTTP/1.1\r\nHost: b\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
		"CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n",
		"GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /\xff\"\\ HTTP/1.0\r\n\r\n",
		"GET https://[::1]:8443 HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := p.Load(config([]proxycfg.Route{route("r", to("a"))}, proxycfg.Cluster{Name: "a", Protocol: proxycfg.ProtoHTTP1, Endpoints: []proxycfg.Endpoint{}})); err != nil {
		f.Fatal(err)
	}
	al := NewAccessLog(io.Discard, AccessLogOptions{})
	f.Cleanup(al.Close)
	parsers := map[string]func(*bufio.Reader) (*http.Request, error){
		"net/http": http.ReadRequest,
		"http1":    http1.ReadRequest,
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for name, parse := range parsers {
			r, err := parse(bufio.NewReader(bytes.NewReader(data)))
			if err != nil {
				continue
			}
			r.RemoteAddr = "192.0.2.1:1234"
			for _, trusted := range []bool{false, true} {
				rw := httptest.NewRecorder()
				p.Handler(0, trusted).ServeHTTP(rw, r)
				if rw.Code < 200 {
					t.Fatalf("%s %q: status %d", name, data, rw.Code)
				}
				now := time.Now()
				line := al.appendLine(nil, &reqRecord{start: now}, r, trusted, rw.Code, int64(rw.Body.Len()), now)
				if !json.Valid(line) {
					t.Fatalf("%s %q: invalid log line %s", name, data, line)
				}
			}
		}
	})
}
