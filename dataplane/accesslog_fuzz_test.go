package dataplane

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// FuzzAccessLogRequest drives the request pipeline and the access log
// with every request head a server of the proxy accepts: net/http's (the
// TLS origin, plain and Gateway listeners) and the origin listener's own.
// Whatever the target's form (absolute, "*", CONNECT's authority), the
// handler answers without panicking and the log line is valid JSON.
// How the line escapes what it holds is fuzzed in package observe
// (FuzzAppendJSONString).
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
				ln := accessLogLine(&reqRecord{start: now}, r, trusted, rw.Code, int64(rw.Body.Len()), now)
				line := ln.AppendJSON(nil)
				if !json.Valid(line) {
					t.Fatalf("%s %q: invalid log line %s", name, data, line)
				}
			}
		}
	})
}
