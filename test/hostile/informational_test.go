package hostile

// informational_test.go: a backend that sends 1xx answers without end.
//
// Before its final answer a backend may send informational ones (100
// Continue, 103 Early Hints), which the proxy reads and drops. Without a
// cap a backend keeps the proxy reading forever, or makes it read
// megabytes of heads, for one request. The proxy caps them as Go's
// Transport does: at most 5 informational answers (1xx other than 101)
// before the final one, and all heads of one answer, the final one's
// included, at most 256 KiB together. Beyond either cap the client gets a
// 502 at once, without the proxy waiting for a final answer; within both
// the final answer passes.

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Heads for the cases below.
const (
	continue100 = "HTTP/1.1 100 Continue\r\n\r\n"
	hints103    = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n"
)

// bigHints is a 103 head of about n bytes.
func bigHints(n int) string {
	return "HTTP/1.1 103 Early Hints\r\nX-Hint: " + strings.Repeat("h", n) + "\r\n\r\n"
}

// bigOK is okFor with a head of about n bytes.
func bigOK(id string, n int) string {
	body := idBody(id)
	return headFor(http.StatusOK, id, contentLength(len(body)), "X-Big: "+strings.Repeat("b", n)) + body
}

// informationalShape is one run of 1xx answers, and whether it goes beyond
// a cap.
type informationalShape struct {
	name   string
	answer func(c net.Conn, id string) (keep bool)
	capped bool
}

var informationalShapes = []informationalShape{
	{"five 100 Continue, then 200", func(c net.Conn, id string) bool {
		write(c, strings.Repeat(continue100, 5)+okFor(id))
		return true
	}, false},
	{"five 103 Early Hints, then 200", func(c net.Conn, id string) bool {
		write(c, strings.Repeat(hints103, 5)+okFor(id))
		return true
	}, false},
	{"three 103 of 60 KiB and a 200 of 60 KiB, 240 KiB together", func(c net.Conn, id string) bool {
		write(c, strings.Repeat(bigHints(60<<10), 3)+bigOK(id, 60<<10))
		return true
	}, false},
	{"six 103 Early Hints, then 200", func(c net.Conn, id string) bool {
		write(c, strings.Repeat(hints103, 6)+okFor(id))
		return true
	}, true},
	{"a thousand 100 Continue, then 200", func(c net.Conn, id string) bool {
		write(c, strings.Repeat(continue100, 1000)+okFor(id))
		return true
	}, true},
	{"six 103 Early Hints, then nothing", func(c net.Conn, id string) bool {
		write(c, strings.Repeat(hints103, 6))
		c.SetDeadline(time.Now().Add(informationalWait)) // today's proxy waits that long
		waitForClose(c)
		return false
	}, true},
	{"five 103 of 60 KiB, then 200", func(c net.Conn, id string) bool {
		write(c, strings.Repeat(bigHints(60<<10), 5)+okFor(id))
		return true
	}, true},
	{"two 103 of 100 KiB, then a 200 of 100 KiB", func(c net.Conn, id string) bool {
		write(c, strings.Repeat(bigHints(100<<10), 2)+bigOK(id, 100<<10))
		return true
	}, true},
}

// quickly is how soon a capped answer must come back as a 502;
// informationalWait bounds the client's wait (today's proxy waits for a
// final answer that never comes).
const (
	quickly           = 2 * time.Second
	informationalWait = 3 * time.Second
)

// TestInformationalAnswersAreCapped sends one request per path, all paths
// at once, for each shape.
func TestInformationalAnswersAreCapped(t *testing.T) {
	for _, shape := range informationalShapes {
		t.Run(shape.name, func(t *testing.T) {
			t.Parallel()
			b := newIDBackend(t, func(c net.Conn, r *backendReq) bool { return shape.answer(c, r.id) })
			e := newEnv(t, b.addr)
			atOnce(e, func(p path) outcome {
				return ask(p, request{id: idFor(p, 0, 1), timeout: informationalWait})
			}, func(t *testing.T, p path, o outcome) {
				switch {
				case !shape.capped && !o.own():
					t.Errorf("got %v, want the final answer", o)
				case shape.capped && (o.status != http.StatusBadGateway || o.took > quickly):
					t.Errorf("got %v, want a 502 within %v", o, quickly)
				}
			})
		})
	}
}
