package hostile

// reuse_test.go: a backend that writes more than the answer it owes.
//
// The proxy keeps its HTTP/1.1 connections to a backend open and sends
// the next request, whichever client it comes from, on any idle one. On
// HTTP/1.1 an answer belongs to a request only by its place on the
// connection, so if a backend writes anything after a complete answer
// (junk, a second response, a body after a HEAD, 204 or 304 answer) and
// the proxy reuses the connection, the next request is answered with those
// bytes, and every answer after it shifts by one: client B reads what the
// backend said to client A. Here many clients go through every way in at
// once, and each must get its own answer or an error, never another's.
//
// Every hostile answer writes its extra bytes where the proxy can tell
// them: in the same write as the answer (or, after HEAD, behind a
// Content-Length that announced a body, which the proxy will not reuse a
// connection after). Answers are padded to the sizes in readBufferSizes
// so that the extra bytes are sometimes still in the socket rather than in
// the proxy's read buffer when the answer is complete. A body sent after
// a 204 or 304 in a write of its own is idle_test.go's business: with
// many clients the proxy may have sent the next request before it comes,
// and then no HTTP/1.1 client can tell it from the answer.

import (
	"net"
	"net/http"
	"testing"
)

// strayShape is one way for a backend to write more than it owes: what it
// answers to a hostile request.
type strayShape struct {
	name string
	// method is the hostile requests' method.
	method string
	// answer writes the answer to id, padded to size, and what follows.
	answer func(c net.Conn, id string, size int)
}

var strayShapes = []strayShape{
	{"junk after a 200, same write", http.MethodGet, func(c net.Conn, id string, size int) {
		write(c, okSized(id, size)+"garbage, not HTTP\r\n\r\n")
	}},
	{"a second response after a 200, same write", http.MethodGet, func(c net.Conn, id string, size int) {
		write(c, okSized(id, size)+okFor(strayID(id)))
	}},
	{"half a head after a 200 that swallows the next answer's status line, same write", http.MethodGet, func(c net.Conn, id string, size int) {
		// The next answer's status line becomes this field's value and
		// its X-Id a second one: one response with two ids.
		write(c, okSized(id, size)+"HTTP/1.1 200 OK\r\nX-Id: "+strayID(id)+"\r\nX-Swallowed: ")
	}},
	{"HEAD answered like GET, body in the same write", http.MethodHead, func(c net.Conn, id string, size int) {
		stray := okFor(strayID(id))
		write(c, headSized(size, http.StatusOK, id, contentLength(len(stray)))+stray)
	}},
	{"HEAD answered like GET, body in a second write", http.MethodHead, func(c net.Conn, id string, size int) {
		stray := okFor(strayID(id))
		write(c, headSized(size, http.StatusOK, id, contentLength(len(stray))))
		write(c, stray)
	}},
	{"a body after a 204, same write", http.MethodGet, func(c net.Conn, id string, size int) {
		write(c, headSized(size, http.StatusNoContent, id)+okFor(strayID(id)))
	}},
	{"a body with a Content-Length after a 204, same write", http.MethodGet, func(c net.Conn, id string, size int) {
		stray := okFor(strayID(id))
		write(c, headSized(size, http.StatusNoContent, id, contentLength(len(stray)))+stray)
	}},
	{"a body after a 304, same write", http.MethodGet, func(c net.Conn, id string, size int) {
		write(c, headSized(size, http.StatusNotModified, id)+okFor(strayID(id)))
	}},
	{"a body with a Content-Length after a 304, same write", http.MethodGet, func(c net.Conn, id string, size int) {
		stray := okFor(strayID(id))
		write(c, headSized(size, http.StatusNotModified, id, contentLength(len(stray)))+stray)
	}},
}

// TestStrayBytesNeverReachAnotherClient: one request in three asks the
// backend for a hostile answer, the others get plain, well-behaved 200s;
// no client may get an answer that is not its own.
func TestStrayBytesNeverReachAnotherClient(t *testing.T) {
	for _, shape := range strayShapes {
		t.Run(shape.name, func(t *testing.T) {
			var sizes cycle
			b := newIDBackend(t, func(c net.Conn, r *backendReq) bool {
				if r.hostile {
					shape.answer(c, r.id, sizes.next())
				} else {
					write(c, okFor(r.id))
				}
				return true
			})
			e := newEnv(t, b.addr)
			storm(e, func(p path, id string, k int) outcome {
				if k%3 != 0 {
					return ask(p, request{id: id})
				}
				return ask(p, request{method: shape.method, id: id, hostile: true})
			})
		})
	}
}
