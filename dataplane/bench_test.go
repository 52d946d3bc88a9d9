package dataplane

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testnet"
)

// BenchmarkProxy measures one proxied GET with a 100-byte answer, in
// process, over loopback: a raw client on a kept-alive connection, the
// proxy under test, and a raw backend that answers every request with the
// same bytes. Client and backend do no allocation, so allocs/op is the
// proxy's own. impl=httputil is net/http's ReverseProxy tuned as a
// production user would (idle pool, buffer pool), the baseline the
// bench-check gates compare against; impl=floor is the floor relay
// (test/floorrelay), the least a Go proxy does, which stands in for
// nginx.
func BenchmarkProxy(b *testing.B) {
	be := rawBackend(b)
	b.Run("impl=floor", func(b *testing.B) { benchGET(b, serveFloor(b, be)) })
	// A browser's request through Cloudflare, 20 fields (the load
	// benchmark's headers shape): the part of the proxy's work that grows
	// with the fields, against the floor relay's.
	b.Run("req=browser/impl=floor", func(b *testing.B) { benchGETRequest(b, serveFloor(b, be), browserRequest) })
	b.Run("req=browser/impl=tunnelgate", func(b *testing.B) {
		benchGETRequest(b, serveOwn(b, tunnelgateHandler(b, be, false)), browserRequest)
	})
	for _, filters := range []string{"none", "headers"} {
		for _, impl := range []string{"tunnelgate", "httputil"} {
			name := "impl=" + impl
			if filters != "none" {
				name = "filters=" + filters + "/" + name
			}
			b.Run(name, func(b *testing.B) {
				var addr string
				if impl == "tunnelgate" {
					// As on the origin listener: the proxy's own server.
					addr = serveOwn(b, tunnelgateHandler(b, be, filters == "headers"))
				} else {
					addr = serveHandler(b, httputilHandler(be, filters == "headers"))
				}
				benchGET(b, addr)
			})
		}
	}
	// Everything observable switched on: every request traced (sampled at
	// 100%, batched to an exporter that discards) and access-logged.
	b.Run("obs=on/impl=tunnelgate", func(b *testing.B) {
		tr := observe.NewTracer(observe.TracerOptions{Exporter: discardSpans{}, Sampler: sdktrace.AlwaysSample()})
		al := observe.NewAccessLog(io.Discard, observe.AccessLogOptions{})
		b.Cleanup(func() {
			al.Close()
			tr.Close()
		})
		addr := serveOwn(b, tunnelgateHandler(b, be, false, func(o *Options) {
			o.Tracer = tr
			o.AccessLog = al
		}))
		benchGET(b, addr)
	})
	// Cloudflare Access on the rule against off, the same request (with a
	// token, which a browser sends with every request) both times: on, the
	// proxy finds the token in its cache of verified ones.
	key := accessTeamKey(b)
	req := withHeader(benchRequest, "Cf-Access-Jwt-Assertion", accessJWT(b, key, accessClaims()))
	for _, access := range []string{"off", "on"} {
		b.Run("access="+access+"/impl=tunnelgate", func(b *testing.B) {
			var a *proxycfg.Access
			if access == "on" {
				a = &proxycfg.Access{Team: e2eTeam, Audiences: []string{e2eAud}, EmailHeader: "X-Auth-Email"}
			}
			p := accessProxy(b, be, &key.PublicKey, a)
			benchGETRequest(b, serveOwn(b, p.Handler(0, true)), req)
		})
	}
}

// BenchmarkProxyBody measures one proxied GET with a large answer, as
// BenchmarkProxy does a small one: 64 KiB (the largest read whole before
// the client is sent it) and 1 MiB (streamed). The backend sends head and
// body in one write; the client reads the body into a buffer of its own.
func BenchmarkProxyBody(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		b.Run("size="+strconv.Itoa(size>>10)+"KiB/impl=tunnelgate", func(b *testing.B) {
			addr := serveOwn(b, tunnelgateHandler(b, bodyBackend(b, size), false))
			benchGETSized(b, addr, size)
		})
	}
}

// bodyBackend answers each request head it reads with a size-byte body,
// head and body in one write.
func bodyBackend(b testing.TB, size int) string { return answerBackend(b, sizedAnswer(size)) }

// sizedAnswer is a 200 answer with a size-byte body, head and body
// together.
func sizedAnswer(size int) []byte {
	return append([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: "+
		strconv.Itoa(size)+"\r\n\r\n"), bytes.Repeat([]byte("x"), size)...)
}

// benchGETSized is benchGET for answers of size bytes.
func benchGETSized(b *testing.B, addr string, size int) {
	b.SetBytes(int64(size))
	benchGets(b, getSizedOn(b, addr, benchRequest, size))
}

// benchGets runs get b.N times, after a warm-up (connections dialled,
// pools and buffers filled, so that allocs/op is the steady state
// whatever b.N is), and reports the process's CPU per request: ns/op is
// latency, and work done off the request's path (span export, log
// writing) shows there.
func benchGets(b *testing.B, get func()) {
	for range 200 {
		get()
	}
	b.ReportAllocs()
	cpu := processCPU()
	b.ResetTimer()
	for range b.N {
		get()
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

// getSizedOn returns a function sending req on one connection to addr
// and reading its size-byte answer; the connection closes when the test
// ends.
func getSizedOn(t testing.TB, addr string, req []byte, size int) func() {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	br := bufio.NewReaderSize(c, 64<<10)
	body := make([]byte, size)
	return func() {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		if n, err := readResponse(br, body); err != nil || n != size {
			t.Fatalf("response: %d bytes, %v", n, err)
		}
	}
}

// discardSpans is a span exporter that drops what it is given.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

var benchHeaders = []proxycfg.Header{{Name: "X-Env", Value: "prod"}, {Name: "X-Team", Value: "payments"}, {Name: "X-Request-Source", Value: "edge"}}

func tunnelgateHandler(b testing.TB, be string, headers bool, opts ...func(*Options)) http.Handler {
	rule := to("a")
	if headers {
		rule.Filters = []proxycfg.Filter{{Type: proxycfg.FilterRequestHeaderModifier, RequestHeaderModifier: &proxycfg.HeaderModifier{Set: benchHeaders}}}
	}
	o := Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, f := range opts {
		f(&o)
	}
	p := New(o)
	if err := p.Load(config([]proxycfg.Route{route("r", rule)}, cluster("a", be))); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	return p.Handler(0, true)
}

func httputilHandler(be string, headers bool) http.Handler {
	target := &url.URL{Scheme: "http", Host: be}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
			if headers {
				for _, h := range benchHeaders {
					pr.Out.Header.Set(h.Name, h.Value)
				}
			}
		},
		Transport: &http.Transport{
			MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second,
			DisableCompression: true,
		},
		BufferPool: &bufPool{p: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}},
		ErrorLog:   nil,
	}
}

type bufPool struct{ p sync.Pool }

func (bp *bufPool) Get() []byte  { return *bp.p.Get().(*[]byte) }
func (bp *bufPool) Put(b []byte) { bp.p.Put(&b) }

func serveHandler(b testing.TB, h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// serveOwn serves h with the origin listener's HTTP/1.1 server.
func serveOwn(b testing.TB, h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := &http1.Server{Handler: h, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), HeadTimeout: headTimeout, IdleTimeout: idleTimeout}
	go s.Serve(ln)
	b.Cleanup(s.Close)
	return ln.Addr().String()
}

var benchResponse = []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n" + string(bytes.Repeat([]byte("x"), 100)))

// rawBackend answers each request head it reads with benchResponse.
func rawBackend(b testing.TB) string { return answerBackend(b, benchResponse) }

// answerBackend answers each request head it reads with answer, in one
// write.
func answerBackend(b testing.TB, answer []byte) string {
	return testnet.RawServer(b, func(c net.Conn) {
		br := bufio.NewReader(c)
		for skipHead(br) == nil {
			if _, err := c.Write(answer); err != nil {
				return
			}
		}
	})
}

// skipHead reads up to the blank line that ends a head.
func skipHead(br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 {
			return nil
		}
	}
}

// benchRequest is shaped like what cloudflared sends an origin.
var benchRequest = []byte("GET /bench/path?x=1 HTTP/1.1\r\nHost: app.example.com\r\nUser-Agent: bench\r\nAccept: */*\r\n" +
	"Cf-Connecting-Ip: 203.0.113.7\r\nCf-Ray: 8f0c1a2b3c4d5e6f-AMS\r\nCf-Visitor: {\"scheme\":\"https\"}\r\n" +
	"X-Forwarded-For: 203.0.113.7\r\nX-Forwarded-Proto: https\r\nCf-Warp-Tag-Id: 5c3f2f58-3c1e-4c8e-9f3e-2b9a8d6e7f10\r\n" +
	"Connection: keep-alive\r\n\r\n")

// browserRequest is what a browser sends through Cloudflare: its own
// fields and the edge's, 20 besides Host (bench/load's headers shape).
var browserRequest = []byte("GET / HTTP/1.1\r\nHost: app.example.com\r\n" +
	"User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36\r\n" +
	"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8\r\n" +
	"Accept-Language: en-US,en;q=0.9,de;q=0.8\r\nAccept-Encoding: gzip, deflate, br, zstd\r\n" +
	"Cookie: session=7f3a9c2e5b1d4f8a6c0e2b4d6f8a0c2e4b6d8f0a; csrftoken=Yx8kQ2mP4vR7tW1zB5nC9dF3gH6jK0lM; theme=dark; lang=en-US; _ga=GA1.1.1234567890.1735689600; cf_clearance=abc123def456ghi789jkl012mno345pqr678\r\n" +
	"Cf-Connecting-Ip: 203.0.113.42\r\nCf-Ray: 8f2b6c1d9e3a4f57-FRA\r\nCf-Visitor: {\"scheme\":\"https\"}\r\nCf-Ipcountry: DE\r\n" +
	"Cdn-Loop: cloudflare\r\nX-Forwarded-For: 203.0.113.42\r\nX-Forwarded-Proto: https\r\nReferer: https://app.example.com/dashboard\r\n" +
	"Sec-Ch-Ua: \"Google Chrome\";v=\"131\", \"Chromium\";v=\"131\", \"Not_A Brand\";v=\"24\"\r\nSec-Ch-Ua-Mobile: ?0\r\n" +
	"Sec-Ch-Ua-Platform: \"Windows\"\r\nSec-Fetch-Dest: document\r\nSec-Fetch-Mode: navigate\r\nSec-Fetch-Site: same-origin\r\n" +
	"Upgrade-Insecure-Requests: 1\r\n\r\n")

// benchGET sends b.N GETs on one connection and checks each answer.
func benchGET(b *testing.B, addr string) { benchGETRequest(b, addr, benchRequest) }

// benchGETRequest is benchGET with another request.
func benchGETRequest(b *testing.B, addr string, req []byte) {
	benchGets(b, getSizedOn(b, addr, req, 100))
}

// readResponse reads one response with a Content-Length body.
func readResponse(br *bufio.Reader, body []byte) (int, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if !bytes.HasPrefix(line, []byte("HTTP/1.1 200")) {
		return 0, fmt.Errorf("status line %q", line)
	}
	n := -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(line) <= 2 {
			break
		}
		if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
			n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
	if n < 0 || n > len(body) {
		return 0, fmt.Errorf("content length %d", n)
	}
	_, err = io.ReadFull(br, body[:n])
	return n, err
}
