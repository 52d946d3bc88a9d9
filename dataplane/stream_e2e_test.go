package dataplane

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// End-to-end tests of response streaming over HTTP/1.1: events flushed as
// they come, trailers, large and broken bodies, bodiless responses.

// streamEnv is a proxy in front of one HTTP/1.1 backend.
func streamEnv(t *testing.T, h http.HandlerFunc) *testEnv {
	t.Helper()
	return ptEnv(t, config([]proxycfg.Route{route("r", to("b"))}, cluster("b", startBackend(t, h))))
}

// TestStreamE2EServerSentEvents checks that an event reaches the client
// while the backend is still blocked before the next one.
func TestStreamE2EServerSentEvents(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	abort := make(chan struct{}) // unblocks the backend if the test fails
	backendDone := make(chan error, 1)
	e := streamEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		io.WriteString(w, "id: 1\ndata: one\n\n")
		if err := http.NewResponseController(w).Flush(); err != nil {
			backendDone <- err
			return
		}
		select {
		case <-release:
		case <-abort:
			backendDone <- fmt.Errorf("test ended before event 2")
			return
		case <-r.Context().Done():
			backendDone <- fmt.Errorf("client went away before event 2")
			return
		}
		io.WriteString(w, "id: 2\ndata: two\n\n")
		backendDone <- nil
	})
	t.Cleanup(func() { close(abort) }) // runs before the servers' cleanups
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url("/events"), nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content-type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(res.Body)
	readEvent := func() (string, error) {
		var ev strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return ev.String(), err
			}
			if line == "\n" {
				return ev.String(), nil
			}
			ev.WriteString(line)
		}
	}
	var ev string
	ptWithin(t, 3*time.Second, "event 1 while the backend waits", func() (err error) {
		ev, err = readEvent()
		return err
	})
	if ev != "id: 1\ndata: one\n" {
		t.Fatalf("event 1 is %q", ev)
	}
	close(release)
	ptWithin(t, 3*time.Second, "event 2", func() (err error) {
		ev, err = readEvent()
		return err
	})
	if ev != "id: 2\ndata: two\n" {
		t.Fatalf("event 2 is %q", ev)
	}
	if err := <-backendDone; err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) > 0 {
		t.Fatalf("after the events: %q, %v", rest, err)
	}
}

// trailerBackend answers a chunked body with an X-Checksum trailer. The
// query says how: size (bytes per part, three parts), declared (a Trailer
// header, else http.TrailerPrefix), flush (after each part).
func trailerBackend(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size, _ := strconv.Atoi(q.Get("size"))
	declared := q.Get("declared") == "1"
	if declared {
		w.Header().Set("Trailer", "X-Checksum")
	}
	sum := sha256.New()
	for i := range 3 {
		p := strings.Repeat(string(rune('a'+i)), size)
		io.WriteString(w, p)
		sum.Write([]byte(p))
		if q.Get("flush") == "1" {
			http.NewResponseController(w).Flush()
		}
	}
	v := hex.EncodeToString(sum.Sum(nil))
	if declared {
		w.Header().Set("X-Checksum", v)
	} else {
		w.Header().Set(http.TrailerPrefix+"X-Checksum", v)
	}
}

func checkTrailer(t *testing.T, e *testEnv, size int, declared, flush bool) {
	t.Helper()
	b := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	res, body := e.get("h", fmt.Sprintf("/t?size=%d&declared=%s&flush=%s", size, b(declared), b(flush)))
	want := strings.Repeat("a", size) + strings.Repeat("b", size) + strings.Repeat("c", size)
	if res.StatusCode != 200 || body != want {
		t.Fatalf("status %d, body of %d bytes", res.StatusCode, len(body))
	}
	sum := sha256.Sum256([]byte(want))
	if got := res.Trailer.Get("X-Checksum"); got != hex.EncodeToString(sum[:]) {
		t.Errorf("trailer X-Checksum %q; the response reached the client with Content-Length %d, Transfer-Encoding %q, trailers %v",
			got, res.ContentLength, res.TransferEncoding, res.Trailer)
	}
}

// TestStreamE2EClientGoneCancelsUpstream checks that a client leaving in
// the middle of a streamed response is noticed while the backend is quiet:
// the backend's request ends (its context is cancelled when the proxy
// drops the upstream connection or stream), instead of the proxy holding
// the upstream connection and its handler until the backend writes again,
// which for a quiet event stream or long poll may be never. It runs on the
// origin listener and on the plain one (net/http's server), to each kind
// of upstream.
func TestStreamE2EClientGoneCancelsUpstream(t *testing.T) {
	t.Parallel()
	for _, listener := range []string{"origin", "plain"} {
		for _, proto := range []string{proxycfg.ProtoHTTP1, proxycfg.ProtoH2C} {
			t.Run(listener+"/"+proto, func(t *testing.T) {
				t.Parallel()
				gone := make(chan struct{}, 1)
				abort := make(chan struct{})
				h := func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, "data: one\n\n")
					http.NewResponseController(w).Flush()
					select {
					case <-r.Context().Done():
						gone <- struct{}{}
					case <-abort:
					}
				}
				var addr string
				if proto == proxycfg.ProtoH2C {
					addr = h2cBackend(t, h)
				} else {
					addr = startBackend(t, h)
				}
				c := cluster("b", addr)
				c.Protocol = proto
				e := ptEnv(t, config([]proxycfg.Route{route("r", to("b"))}, c))
				t.Cleanup(func() { close(abort) }) // before the servers close
				url := e.url("/events")
				if listener == "plain" {
					url = "http://" + e.bound.Plain + "/events"
				}
				res, err := e.client.Get(url)
				if err != nil {
					t.Fatal(err)
				}
				ptWithin(t, 3*time.Second, "event 1", func() error {
					line, err := bufio.NewReader(res.Body).ReadString('\n')
					if err == nil && line != "data: one\n" {
						err = fmt.Errorf("read %q", line)
					}
					return err
				})
				res.Body.Close() // the client leaves: its connection closes
				select {
				case <-gone:
				case <-time.After(3 * time.Second):
					t.Fatal("3 s after the client left, the backend's request was still open: the proxy did not notice the client leaving while it waited for more body")
				}
			})
		}
	}
}

// TestStreamE2EChunkedTrailers checks that a chunked response's trailer
// reaches an HTTP/1.1 client when the body is large enough that the proxy
// starts sending it before the backend is done.
func TestStreamE2EChunkedTrailers(t *testing.T) {
	t.Parallel()
	e := streamEnv(t, trailerBackend)
	for _, declared := range []bool{true, false} {
		for _, flush := range []bool{true, false} {
			t.Run(fmt.Sprintf("declared=%v,flush=%v", declared, flush), func(t *testing.T) {
				checkTrailer(t, e, 40_000, declared, flush)
			})
		}
	}
}

// TestStreamE2EChunkedTrailersShortBody is the same with a short body,
// which the proxy receives whole before it has sent anything. net/http
// would then frame the answer with Content-Length and drop the trailers,
// which the proxy can add to the header map only after WriteHeader.
func TestStreamE2EChunkedTrailersShortBody(t *testing.T) {
	t.Parallel()
	e := streamEnv(t, trailerBackend)
	for _, declared := range []bool{true, false} {
		for _, flush := range []bool{true, false} {
			if !declared && !flush {
				// The backend's own net/http would send this short body
				// with Content-Length and no trailer.
				continue
			}
			t.Run(fmt.Sprintf("declared=%v,flush=%v", declared, flush), func(t *testing.T) {
				checkTrailer(t, e, 6, declared, flush)
			})
		}
	}
}

// TestStreamE2ELargeDownload sends 8 MiB with Content-Length.
func TestStreamE2ELargeDownload(t *testing.T) {
	t.Parallel()
	const size = 8 << 20
	data := make([]byte, size)
	rng := rand.NewChaCha8([32]byte{1, 2, 3})
	rng.Read(data)
	want := sha256.Sum256(data)
	e := streamEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Header().Set("Content-Type", "application/octet-stream")
		// Uneven writes, so the proxy sees partial buffers.
		for off := 0; off < size; {
			n := min(size-off, 100_003)
			w.Write(data[off : off+n])
			off += n
		}
	})
	for i := range 2 { // the second reuses the upstream connection
		req, _ := http.NewRequest("GET", e.url("/big"), nil)
		res, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		n, err := io.Copy(h, res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatalf("download %d: after %d bytes: %v", i, n, err)
		}
		if res.ContentLength != size {
			t.Errorf("download %d: Content-Length %d, want %d", i, res.ContentLength, size)
		}
		if n != size || !bytes.Equal(h.Sum(nil), want[:]) {
			t.Fatalf("download %d: %d bytes, checksum differs", i, n)
		}
	}
}

// dieMidBody answers with a head that promises more body than it sends,
// then closes the connection.
func dieMidBody(w http.ResponseWriter, r *http.Request) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	defer conn.Close()
	if r.URL.Query().Get("chunked") == "1" {
		brw.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n")
		brw.WriteString("a\r\n0123456789\r\n5\r\n01234")
	} else {
		brw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nContent-Type: text/plain\r\n\r\n")
		brw.WriteString(strings.Repeat("x", 500))
	}
	brw.Flush()
}

// TestStreamE2EBackendDiesMidBody checks that a body cut short by the
// backend is cut short for the client too: an error, not a clean short
// body it would take for the whole.
func TestStreamE2EBackendDiesMidBody(t *testing.T) {
	t.Parallel()
	e := streamEnv(t, dieMidBody)
	for _, q := range []string{"chunked=0", "chunked=1"} {
		req, _ := http.NewRequest("GET", e.url("/die?"+q), nil)
		res, err := e.client.Do(req)
		if err != nil {
			// The proxy had sent nothing yet when the backend failed, and
			// dropped the connection: also an error, not a clean body.
			continue
		}
		got, err := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("%s: status %d", q, res.StatusCode)
		}
		if err == nil {
			t.Errorf("%s: the client read a complete body of %d bytes; want an error", q, len(got))
		}
	}
}

// TestStreamE2EBackendDiesMidBodyReleasesInflight checks that the
// endpoint's in-flight count, which load balancing reads, comes back to
// zero after the backend failed mid-body.
func TestStreamE2EBackendDiesMidBodyReleasesInflight(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{proxycfg.ProtoHTTP1, proxycfg.ProtoH2C} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			var addr string
			if proto == proxycfg.ProtoH2C {
				// An h2 backend that fails mid-body: it resets the stream.
				addr = h2cBackend(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Length", "1000")
					w.Write(make([]byte, 500))
					http.NewResponseController(w).Flush()
					panic(http.ErrAbortHandler)
				})
			} else {
				addr = startBackend(t, dieMidBody)
			}
			c := cluster("b", addr)
			c.Protocol = proto
			e := ptEnv(t, config([]proxycfg.Route{route("r", to("b"))}, c))
			for range 3 {
				req, _ := http.NewRequest("GET", e.url("/die"), nil)
				res, err := e.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_, err = io.ReadAll(res.Body)
				res.Body.Close()
				if err == nil {
					t.Fatal("the client read a complete body; want an error")
				}
			}
			ep := e.p.slots["b"].state.Load().endpoints()[0]
			// The handler's panic unwinds before the client sees the
			// error, so the count is final by now; allow a moment anyway.
			deadline := time.Now().Add(500 * time.Millisecond)
			for ep.inflight.Load() != 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := ep.inflight.Load(); n != 0 {
				t.Errorf("endpoint in-flight count is %d after 3 failed responses, want 0: it leaks on every mid-body failure, and pick() then avoids the endpoint for good", n)
			}
		})
	}
}

// TestStreamE2EBodilessResponses checks HEAD, 204 and 304: no body, and the
// client's connection is reused for the next request.
func TestStreamE2EBodilessResponses(t *testing.T) {
	t.Parallel()
	e := streamEnv(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/head":
			w.Header().Set("Content-Length", "11")
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "hello world")
		case "/204":
			w.Header().Set("X-Done", "yes")
			w.WriteHeader(204)
		case "/304":
			w.Header().Set("Etag", `"v1"`)
			w.WriteHeader(304)
		default:
			io.WriteString(w, "after")
		}
	})
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"HEAD", "/head", 200},
		{"GET", "/204", 204},
		{"GET", "/304", 304},
		{"HEAD", "/204", 204},
	} {
		name := c.method + " " + c.path
		req, _ := http.NewRequest(c.method, e.url(c.path), nil)
		if c.path == "/304" {
			req.Header.Set("If-None-Match", `"v1"`)
		}
		res, body := e.do(e.client, req)
		if res.StatusCode != c.status || body != "" {
			t.Fatalf("%s: status %d, body %q", name, res.StatusCode, body)
		}
		if c.path == "/head" && res.ContentLength != 11 {
			t.Errorf("%s: Content-Length %d, want the GET's 11", name, res.ContentLength)
		}
		// The same client connection serves the next request.
		var reused bool
		ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused },
		})
		req, _ = http.NewRequestWithContext(ctx, "GET", e.url("/after"), nil)
		ptWithin(t, 5*time.Second, name+": next request", func() error {
			res, err := e.client.Do(req)
			if err != nil {
				return err
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			if err != nil || string(b) != "after" {
				return fmt.Errorf("status %d body %q, %v", res.StatusCode, b, err)
			}
			return nil
		})
		if !reused {
			t.Errorf("%s: the next request needed a new connection", name)
		}
	}
}

// TestStreamE2EEarlyHints checks that a 103 before the final answer does
// not confuse the proxy.
func TestStreamE2EEarlyHints(t *testing.T) {
	t.Parallel()
	e := streamEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload; as=style")
		w.WriteHeader(http.StatusEarlyHints) // net/http sends a 1xx at once
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>ok</html>")
	})
	for range 2 {
		res, body := e.get("h", "/page")
		if res.StatusCode != 200 || body != "<html>ok</html>" {
			t.Fatalf("status %d, body %q", res.StatusCode, body)
		}
		if got := res.Header.Get("Content-Type"); got != "text/html" {
			t.Errorf("content-type %q", got)
		}
	}
}
