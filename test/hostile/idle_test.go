package hostile

// idle_test.go: stray bytes that come while a connection is idle.
//
// A backend answers a request, and then, in a write of its own, sends
// bytes nobody asked for: a second complete response a little later, a
// body after a 204 or 304, a body after a HEAD answer that announced one.
// By then the proxy may have put the connection back in its pool, and if
// the next request goes on it the proxy reads those bytes as its answer.
// The proxy checks an idle connection before reusing it (and now and then
// while it is idle), so a request sent once the stray bytes are there must
// go on another connection and get its own answer.
//
// One client at a time: bytes that come after the proxy has written the
// next request cannot be told from its answer by any HTTP/1.1 client, so
// the next request is sent only once the backend has written them.

import (
	"net"
	"net/http"
	"testing"
	"time"
)

// strayDelay is how long after its answer the backend writes the stray
// bytes, in the cases that wait; idleGrace is how long the client waits
// after that before its next request, for the bytes to cross loopback.
const (
	strayDelay = 20 * time.Millisecond
	idleGrace  = 30 * time.Millisecond
)

// lateStray is one way to send bytes after an answer, in a later write.
type lateStray struct {
	name   string
	method string
	// answer writes the answer to id and, in a write of its own, the
	// stray bytes.
	answer func(c net.Conn, id string)
}

var lateStrays = []lateStray{
	{"a second response 20 ms after a 200", http.MethodGet, func(c net.Conn, id string) {
		write(c, okFor(id))
		time.Sleep(strayDelay)
		write(c, okFor(strayID(id)))
	}},
	{"a body right after a 204", http.MethodGet, func(c net.Conn, id string) {
		write(c, headFor(http.StatusNoContent, id))
		write(c, okFor(strayID(id)))
	}},
	{"a body with a Content-Length 20 ms after a 204", http.MethodGet, func(c net.Conn, id string) {
		stray := okFor(strayID(id))
		write(c, headFor(http.StatusNoContent, id, contentLength(len(stray))))
		time.Sleep(strayDelay)
		write(c, stray)
	}},
	{"a body right after a 304", http.MethodGet, func(c net.Conn, id string) {
		write(c, headFor(http.StatusNotModified, id))
		write(c, okFor(strayID(id)))
	}},
	{"a body with a Content-Length 20 ms after a 304", http.MethodGet, func(c net.Conn, id string) {
		stray := okFor(strayID(id))
		write(c, headFor(http.StatusNotModified, id, contentLength(len(stray))))
		time.Sleep(strayDelay)
		write(c, stray)
	}},
	{"a body 20 ms after a HEAD answer with a Content-Length", http.MethodHead, func(c net.Conn, id string) {
		stray := okFor(strayID(id))
		write(c, headFor(http.StatusOK, id, contentLength(len(stray))))
		time.Sleep(strayDelay)
		write(c, stray)
	}},
}

// TestStrayBytesWhileIdleAreNoticed: request 1 is answered and followed by
// stray bytes; request 2, sent once they are there, must get its own
// answer, on a connection other than request 1's.
func TestStrayBytesWhileIdleAreNoticed(t *testing.T) {
	for _, tc := range lateStrays {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			strayWritten := make(chan string, 64)
			b := newIDBackend(t, func(c net.Conn, r *backendReq) bool {
				if !r.hostile {
					write(c, okFor(r.id))
					return true
				}
				tc.answer(c, r.id)
				select {
				case strayWritten <- r.id:
				default: // nobody is waiting for that many
				}
				return true
			})
			e := newEnv(t, b.addr)
			e.each(func(t *testing.T, p path) {
				first, second := idFor(p, 0, 1), idFor(p, 0, 2)
				// Request 1's answer is the backend's, stray bytes aside: it
				// must carry its id (whether its body reads cleanly is not
				// this test's business).
				if o := ask(p, request{method: tc.method, id: first, hostile: true}); o.misdelivered() != "" || len(o.xid) == 0 {
					t.Errorf("request 1 did not get its own answer: %v", o)
				}
				waitFor(t, strayWritten, first)
				time.Sleep(idleGrace)
				o := ask(p, request{id: second})
				if !o.own() {
					t.Errorf("request 2, sent %v after the stray bytes, did not get its own answer: %v", idleGrace, o)
				}
				c1, c2 := b.connsOf(first), b.connsOf(second)
				if len(c1) == 1 && len(c2) == 1 && c1[0] == c2[0] {
					t.Errorf("request 2 went on connection %d, which carried stray bytes after request 1's answer (%d connections accepted in all)",
						c2[0], b.accepted.Load())
				}
			})
		})
	}
}

// waitFor reads ids from ch until want comes, for at most two seconds.
func waitFor(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	deadline := time.After(2 * time.Second)
	for {
		select {
		case id := <-ch:
			if id == want {
				return
			}
		case <-deadline:
			t.Fatalf("the backend never wrote the stray bytes after %s's answer", want)
		}
	}
}
