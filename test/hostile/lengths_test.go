package hostile

// lengths_test.go: a backend whose answer does not end where it says.
//
// An answer that announces more than it sends, or sends more than it
// announces, or breaks its chunked framing, must not reach the client as
// a complete, well-formed answer (the client would take a truncated file
// for the whole one), and whatever the backend sent beyond the announced
// end must not become part of the next client's answer. After each hostile
// answer a well-behaved request on the same proxy must get its own answer:
// the connection that carried the bad one cannot be trusted again.

import (
	"net"
	"net/http"
	"strings"
	"testing"
)

// lyingAnswer is one way for an answer to misstate its length.
type lyingAnswer struct {
	name string
	// answer writes the hostile answer to id, padded to size where the
	// case pads, and says whether the backend keeps the connection.
	answer func(c net.Conn, id string, size int) (keep bool)
	// check judges what the client got for the hostile request.
	check func(t *testing.T, o outcome)
}

// notComplete fails when o looks like a whole, well-formed answer.
func notComplete(t *testing.T, o outcome) {
	t.Helper()
	if o.status != 0 && o.status < 500 && o.err == nil {
		t.Errorf("the client saw a complete answer: %v", o)
	}
}

// tenBytes is the body of the answer that says Content-Length: 10 and
// sends twenty bytes: these ten, then leaked.
const (
	tenBytes = "0123456789"
	leaked   = "LEAKEDLEAK"
)

var lyingAnswers = []lyingAnswer{
	{"Content-Length 100, 50 bytes, then close", func(c net.Conn, id string, _ int) bool {
		write(c, headFor(http.StatusOK, id, contentLength(100))+strings.Repeat("x", 50))
		return false
	}, notComplete},
	{"Content-Length 10 followed by 20 bytes", func(c net.Conn, id string, size int) bool {
		// Padded so that, at some sizes, the ten extra bytes are still in
		// the socket when the proxy has read the announced ten.
		write(c, headSized(size-len(tenBytes), http.StatusOK, id, contentLength(len(tenBytes)))+tenBytes+leaked)
		return true
	}, func(t *testing.T, o outcome) {
		if msg := o.misdelivered(); msg != "" {
			t.Error(msg)
		}
		if o.status == http.StatusOK && o.body != tenBytes {
			t.Errorf("the client got %q, want the ten announced bytes %q", clip(o.body), tenBytes)
		}
	}},
	{"a malformed chunk size mid-body", func(c net.Conn, id string, _ int) bool {
		write(c, headFor(http.StatusOK, id, "Transfer-Encoding: chunked")+"5\r\nhello\r\nzz\r\nmore\r\n0\r\n\r\n")
		return true
	}, notComplete},
	{"a close before any answer", func(c net.Conn, id string, _ int) bool {
		return false
	}, func(t *testing.T, o outcome) {
		if o.status != http.StatusBadGateway {
			t.Errorf("got %v, want the proxy's 502", o)
		}
	}},
}

// TestLyingLengths sends, on each path in turn, a request the backend
// answers with a lying length and then a well-behaved one, once for each
// of readBufferSizes.
func TestLyingLengths(t *testing.T) {
	for _, tc := range lyingAnswers {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var sizes cycle
			b := newIDBackend(t, func(c net.Conn, r *backendReq) bool {
				if r.hostile {
					return tc.answer(c, r.id, sizes.next())
				}
				write(c, okFor(r.id))
				return true
			})
			e := newEnv(t, b.addr)
			e.each(func(t *testing.T, p path) {
				for round := range readBufferSizes {
					tc.check(t, ask(p, request{id: idFor(p, round, 1), hostile: true}))
					if o := ask(p, request{id: idFor(p, round, 2)}); !o.own() {
						t.Errorf("the well-behaved request after it did not get its own answer: %v", o)
					}
				}
			})
		})
	}
}
