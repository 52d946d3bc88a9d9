package hostile

// backendkit_test.go: the tools of the backend-side attacks (reuse_test.go,
// idle_test.go, lengths_test.go, informational_test.go, replay_test.go,
// trailers_test.go).
//
// A client names each request with an id of its own in the path
// (/id/<id>). An idBackend reads requests off raw connections, one after
// another as HTTP/1.1 has them, notes on which connection each id arrived,
// and hands each request to the test, which writes the answer byte by
// byte: a well-behaved answer carries the id in an X-Id field and in its
// body ("id=<id>\n"), a hostile one adds whatever the test is about. On the
// client side, ask sends one request and its outcome says whether the
// answer was the client's own, an error, or somebody else's: the one thing
// a proxy must never deliver.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testnet"
)

// askTimeout bounds one client request, body included; backendIdle bounds
// how long a backend waits for the next request on a connection.
const (
	askTimeout  = 5 * time.Second
	backendIdle = 30 * time.Second
)

// backendReq is one request as an idBackend read it (its body read whole
// and dropped).
type backendReq struct {
	id      string // from the path /id/<id>; "" for any other path
	hostile bool   // the client asked for the test's misbehaviour (?hostile)
	nth     int    // 1 the first time this id reaches the backend, 2 the second…
}

// answerFunc writes the answer to r on c, in as many writes as it likes,
// and says whether to read another request from c.
type answerFunc func(c net.Conn, r *backendReq) (keep bool)

// idBackend is a raw HTTP/1.1 backend that records where each id arrived.
type idBackend struct {
	addr     string
	answer   answerFunc
	accepted atomic.Int64 // connections accepted

	mu       sync.Mutex
	arrivals map[string][]int // id → serials of the connections it came on, in order
}

// newIDBackend starts a backend on loopback that reads requests (bodies
// whole) and lets answer write the answers. It stops when the test ends.
func newIDBackend(t testing.TB, answer answerFunc) *idBackend {
	t.Helper()
	b := &idBackend{arrivals: map[string][]int{}, answer: answer}
	b.addr = testnet.RawServer(t, b.serve)
	return b
}

// serve reads requests off c one after another and has b.answer answer
// them, until the connection ends or answer says to close it.
func (b *idBackend) serve(c net.Conn) {
	serial := int(b.accepted.Add(1))
	br := bufio.NewReader(c)
	for {
		c.SetReadDeadline(time.Now().Add(backendIdle))
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		r := &backendReq{hostile: req.URL.Query().Has("hostile")}
		if id, ok := strings.CutPrefix(req.URL.Path, "/id/"); ok {
			r.id = id
		}
		b.mu.Lock()
		b.arrivals[r.id] = append(b.arrivals[r.id], serial)
		r.nth = len(b.arrivals[r.id])
		b.mu.Unlock()
		c.SetDeadline(time.Now().Add(askTimeout))
		if !b.answer(c, r) {
			return
		}
	}
}

// times is how many times id reached the backend.
func (b *idBackend) times(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.arrivals[id])
}

// connsOf lists the connections id arrived on, in order.
func (b *idBackend) connsOf(id string) []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.arrivals[id]...)
}

// write sends one piece of an answer in one write call; an error (the
// proxy hung up) is the proxy's business, not the backend's.
func write(c net.Conn, s string) { io.WriteString(c, s) }

// waitForClose holds a connection open until the proxy closes it (or the
// deadline set before the answer passes): a backend that answered only
// part of what it owes and now says nothing.
func waitForClose(c net.Conn) {
	io.Copy(io.Discard, c)
}

// idBody is the body of a well-behaved answer for id.
func idBody(id string) string { return "id=" + id + "\n" }

// strayID is the id of the response a backend writes, unasked, after its
// answer to id. A client that gets it, or (once answers have shifted on a
// connection) another client's id, got an answer not its own.
func strayID(id string) string { return "stray-after-" + id }

// headFor is a response head for id: the status line, X-Id, the given
// fields ("Name: value"), the blank line.
func headFor(status int, id string, fields ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nX-Id: %s\r\n", status, http.StatusText(status), id)
	for _, f := range fields {
		b.WriteString(f + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// contentLength is a Content-Length field for n bytes.
func contentLength(n int) string { return "Content-Length: " + strconv.Itoa(n) }

// okFor is a complete, well-behaved 200 answer for id.
func okFor(id string) string {
	body := idBody(id)
	return headFor(http.StatusOK, id, contentLength(len(body))) + body
}

// okSized is okFor with its body padded with dots to make the answer
// exactly total bytes, head included (total too small: okFor).
func okSized(id string, total int) string {
	body := idBody(id)
	// The head's length depends on how many digits the Content-Length
	// has, which depends on the padding: try each count of digits.
	for digits := 1; digits <= 6; digits++ {
		n := total - len(headFor(http.StatusOK, id, contentLength(0))) - (digits - 1) // body length, padding included
		if n >= len(body) && len(strconv.Itoa(n)) == digits {
			return headFor(http.StatusOK, id, contentLength(n)) + body + strings.Repeat(".", n-len(body))
		}
	}
	return okFor(id)
}

// headSized is headFor padded with an X-Pad field to exactly total bytes
// (total too small to hold it: not padded).
func headSized(total, status int, id string, fields ...string) string {
	h := headFor(status, id, fields...)
	pad := total - len(h) - len("X-Pad: \r\n")
	if pad < 0 {
		return h
	}
	return headFor(status, id, append(fields, "X-Pad: "+strings.Repeat("p", pad))...)
}

// readBufferSizes are the sizes hostile answers are padded to in turn. A
// proxy that reads upstream connections through a buffer of one of these
// sizes (the proxy's is 8 KiB) reads such an answer exactly, so whatever
// the backend wrote after it in the same write is still in the socket, not
// in the buffer, when the answer is complete. 0 leaves the answer small.
var readBufferSizes = []int{0, 4 << 10, 8 << 10, 16 << 10}

// cycle hands out readBufferSizes in turn, to a backend's answers.
type cycle struct{ n atomic.Int64 }

func (c *cycle) next() int { return readBufferSizes[int(c.n.Add(1))%len(readBufferSizes)] }

// outcome is what one client request came back with.
type outcome struct {
	method, id string // what the client asked for
	hostile    bool   // and whether it asked for misbehaviour
	status     int    // 0 when no response came
	xid        []string
	body       string
	trailer    http.Header
	err        error // no response, or the body broke off
	took       time.Duration
}

// request is one client request for ask.
type request struct {
	method  string
	id      string
	hostile bool // ask the backend for the test's misbehaviour
	header  http.Header
	body    string
	timeout time.Duration // default askTimeout
}

// ask sends r on p and reads the whole answer.
func ask(p path, r request) outcome {
	o := outcome{method: r.method, id: r.id, hostile: r.hostile}
	if o.method == "" {
		o.method = http.MethodGet
	}
	start := time.Now()
	o.status, o.xid, o.body, o.trailer, o.err = roundTrip(p, o.method, r)
	o.took = time.Since(start)
	return o
}

// roundTrip makes the request for ask: the status (0 if no answer came),
// the X-Id values, the body, the trailers, and the error that ended it.
func roundTrip(p path, method string, r request) (status int, xid []string, body string, trailer http.Header, err error) {
	timeout := r.timeout
	if timeout == 0 {
		timeout = askTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	target := "/id/" + url.PathEscape(r.id)
	if r.hostile {
		target += "?hostile"
	}
	var rb io.Reader
	if r.body != "" {
		rb = strings.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.url(target), rb)
	if err != nil {
		return 0, nil, "", nil, err
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	res, err := p.client.Do(req)
	if err != nil {
		return 0, nil, "", nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Values("X-Id"), string(b), res.Trailer, err
}

// bodiless reports whether o's answer has no body by the rules (HEAD, 1xx,
// 204, 304).
func (o outcome) bodiless() bool {
	return o.method == http.MethodHead || o.status == http.StatusNoContent || o.status == http.StatusNotModified
}

// misdelivered says what is wrong when o carries an answer meant for
// another request, or nothing the backend sent for it; "" when it is the
// client's own answer (whole or truncated) or an error of the proxy's.
func (o outcome) misdelivered() string {
	if o.status == 0 {
		return "" // no response at all: an error, allowed
	}
	if len(o.xid) == 0 {
		if o.status >= 500 {
			return "" // the proxy's own error answer
		}
		return fmt.Sprintf("%s %s: %d without X-Id (body %q): not an answer the backend gave", o.method, o.id, o.status, clip(o.body))
	}
	if len(o.xid) != 1 || o.xid[0] != o.id {
		// Every answer of the backend carries one X-Id: two are two
		// answers run together.
		return fmt.Sprintf("%s %s: got the answer for X-Id %q (status %d, body %q)", o.method, o.id, o.xid, o.status, clip(o.body))
	}
	for line := range strings.Lines(o.body) {
		if strings.HasPrefix(line, "id=") && line != idBody(o.id) {
			return fmt.Sprintf("%s %s: own X-Id but a body for another: %q", o.method, o.id, clip(o.body))
		}
	}
	return ""
}

// own reports whether o is the client's own answer, whole: X-Id and, where
// a body belongs, the body (padded with dots) the backend sent for it.
func (o outcome) own() bool {
	if o.err != nil || o.status == 0 || o.status >= 500 || o.misdelivered() != "" {
		return false
	}
	if o.bodiless() {
		return o.body == ""
	}
	rest, ok := strings.CutPrefix(o.body, idBody(o.id))
	return ok && strings.Trim(rest, ".") == ""
}

// String describes o for failure messages.
func (o outcome) String() string {
	if o.status == 0 {
		return fmt.Sprintf("%s %s: no response after %v: %v", o.method, o.id, o.took.Round(time.Millisecond), o.err)
	}
	s := fmt.Sprintf("%s %s: %d X-Id %q body %q", o.method, o.id, o.status, o.xid, clip(o.body))
	if o.err != nil {
		s += fmt.Sprintf(" (body broke off: %v)", o.err)
	}
	return s + fmt.Sprintf(" after %v", o.took.Round(time.Millisecond))
}

// clip shortens a body for a message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// idFor is a unique id for the k-th request of client g on p.
func idFor(p path, g, k int) string {
	return fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(p.name, "/", "."), g, k)
}

// atOnce runs work on every path of e (kept by keep) at the same time, so
// the backend sees all the ways in interleaved, then reports on each path
// in a subtest of its own with check.
func atOnce[T any](e *env, work func(p path) T, check func(t *testing.T, p path, got T), keep ...func(path) bool) {
	e.t.Helper()
	results := make(map[string]T)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range e.paths {
		if len(keep) > 0 && !keep[0](p) {
			continue
		}
		wg.Go(func() {
			r := work(p)
			mu.Lock()
			results[p.name] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	e.each(func(t *testing.T, p path) { check(t, p, results[p.name]) }, keep...)
}

// stormClients and stormRequests size a storm: per path, that many
// clients each sending that many requests one after another, all paths
// at once. Against a proxy that reuses dirty connections this is plenty:
// measured before the fix, each failing shape failed on 48 to 50 of 50
// path runs (5 runs × 10 paths), so the test as a whole failed every time.
const (
	stormClients  = 8
	stormRequests = 6
	// stormLimit stops a storm that runs this long (each request has its
	// own askTimeout too).
	stormLimit = 15 * time.Second
)

// storm sends, on every path at once, stormClients concurrent clients ×
// stormRequests requests, each with an id of its own, the k-th request of
// a client made by send. Then, per path, it fails for every answer that
// went to the wrong client, and for every request that did not ask for
// misbehaviour and still did not get its own answer: the backend answered
// it well, and a proxy that noticed the other answers' extra bytes in time
// (they all come where it can) has no reason to lose it.
func storm(e *env, send func(p path, id string, k int) outcome) {
	e.t.Helper()
	stop := time.Now().Add(stormLimit)
	atOnce(e, func(p path) []outcome {
		var mu sync.Mutex
		var all []outcome
		var wg sync.WaitGroup
		for g := range stormClients {
			wg.Go(func() {
				for k := 0; k < stormRequests && time.Now().Before(stop); k++ {
					o := send(p, idFor(p, g, k), k)
					mu.Lock()
					all = append(all, o)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return all
	}, func(t *testing.T, p path, all []outcome) {
		wrong, clean, lost := 0, 0, 0
		for _, o := range all {
			if msg := o.misdelivered(); msg != "" {
				if wrong++; wrong <= 5 {
					t.Error(msg)
				}
				continue
			}
			if o.hostile {
				continue
			}
			clean++
			if !o.own() {
				if lost++; lost <= 3 {
					t.Errorf("a well-answered request did not get its answer: %v", o)
				}
			}
		}
		if wrong > 0 {
			t.Errorf("%d of %d answers went to the wrong client", wrong, len(all))
		}
		if lost > 0 {
			t.Errorf("%d of %d well-answered requests did not get their answer", lost, clean)
		}
	})
}
