package hostile

// trailers_test.go: trailer fields a backend must not get through.
//
// A trailer arrives after the body, when the proxy and its response
// filters have long dealt with the head. A backend that puts Set-Cookie,
// Authorization, Content-Length, Host or the like there slips past
// everything that checks heads, and clients that merge trailers into the
// head (some do) take them as the real thing. RFC 9110 §6.5.1 forbids
// such fields in trailers; the proxy drops them as net/http does and
// passes the rest (checksums, gRPC status, Server-Timing). Checked on every
// path's Go client (res.Trailer, from HTTP/1.1 chunked and from HTTP/2),
// behind a raw HTTP/1.1 backend and behind an h2c one.

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// forbiddenTrailers must never reach a client as trailers.
var forbiddenTrailers = []string{
	"Set-Cookie", "Cookie", "Content-Length", "Transfer-Encoding", "Content-Type", "Content-Encoding",
	"Content-Range", "Authorization", "Www-Authenticate", "Proxy-Authenticate", "Proxy-Authorization",
	"Host", "Trailer", "Te", "Connection", "Keep-Alive", "Cache-Control", "Expect", "Max-Forwards",
	"Pragma", "Range", "Upgrade",
}

// allowedTrailers must reach clients unchanged.
var allowedTrailers = map[string]string{
	"X-Checksum":    "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
	"Grpc-Status":   "0",
	"Grpc-Message":  "all good",
	"Server-Timing": "db;dur=53",
}

// hostileValue is the value a backend gives the forbidden trailer name.
func hostileValue(name string) string { return "hostile-" + strings.ToLower(name) }

// chunkedWithTrailers is a chunked answer for id whose trailer section
// holds every forbidden and every allowed field.
func chunkedWithTrailers(id string) string {
	body := idBody(id)
	var b strings.Builder
	b.WriteString(headFor(http.StatusOK, id, "Transfer-Encoding: chunked"))
	b.WriteString(strconv.FormatInt(int64(len(body)), 16) + "\r\n" + body + "\r\n0\r\n")
	for _, name := range forbiddenTrailers {
		b.WriteString(name + ": " + hostileValue(name) + "\r\n")
	}
	for name, v := range allowedTrailers {
		b.WriteString(name + ": " + v + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// trailersHandler answers like chunkedWithTrailers through net/http,
// which itself drops some forbidden names on HTTP/2. It flushes the body,
// as a gRPC server streams, so that no Content-Length goes with the head
// and the trailers can go on over HTTP/1.1 (chunked).
func trailersHandler(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/id/")
	w.Header().Set("X-Id", id)
	io.WriteString(w, idBody(id))
	w.(http.Flusher).Flush()
	for _, name := range forbiddenTrailers {
		w.Header().Set(http.TrailerPrefix+name, hostileValue(name))
	}
	for name, v := range allowedTrailers {
		w.Header().Set(http.TrailerPrefix+name, v)
	}
}

// forbiddenSent fetches an answer straight from a backend and returns the
// forbidden trailers it really sends (what a proxy must drop), failing
// unless they include Set-Cookie and the allowed ones all come: a backend
// that sends nothing to drop proves nothing.
func forbiddenSent(t *testing.T, client *http.Client, url string) []string {
	t.Helper()
	res, err := client.Get(url)
	if err != nil {
		t.Fatalf("asking the backend directly: %v", err)
	}
	defer res.Body.Close()
	io.Copy(io.Discard, res.Body)
	var sent []string
	for _, name := range forbiddenTrailers {
		if res.Trailer.Get(name) == hostileValue(name) {
			sent = append(sent, name)
		}
	}
	if !slices.Contains(sent, "Set-Cookie") {
		t.Fatalf("the backend does not send a Set-Cookie trailer (trailers %v): the test would prove nothing", res.Trailer)
	}
	for name, v := range allowedTrailers {
		if got := res.Trailer.Get(name); got != v {
			t.Fatalf("the backend sends trailer %s %q, want %q", name, got, v)
		}
	}
	return sent
}

// checkTrailers fails for every forbidden trailer of sent that reached the
// client, and for every allowed one that did
// not arrive intact.
func checkTrailers(t *testing.T, o outcome, sent []string) {
	t.Helper()
	if !o.own() {
		t.Fatalf("got %v, want the backend's answer", o)
	}
	var passed []string
	for _, name := range sent {
		if v, ok := o.trailer[http.CanonicalHeaderKey(name)]; ok {
			passed = append(passed, name+": "+strings.Join(v, ", "))
		}
	}
	if len(passed) > 0 {
		t.Errorf("forbidden trailers reached the client: %s", strings.Join(passed, "; "))
	}
	for name, v := range allowedTrailers {
		if got := o.trailer.Get(name); got != v {
			t.Errorf("trailer %s: got %q, want %q", name, got, v)
		}
	}
}

// TestBackendTrailersAreFiltered sends one request per path to a backend
// whose trailers hold every forbidden field.
func TestBackendTrailersAreFiltered(t *testing.T) {
	t.Run("HTTP/1.1 backend", func(t *testing.T) {
		b := newIDBackend(t, func(c net.Conn, r *backendReq) bool {
			write(c, chunkedWithTrailers(r.id))
			return true
		})
		sent := forbiddenSent(t, &http.Client{}, "http://"+b.addr+"/id/direct")
		e := newEnv(t, b.addr)
		e.each(func(t *testing.T, p path) { checkTrailers(t, ask(p, request{id: idFor(p, 0, 1)}), sent) })
	})
	t.Run("h2c backend", func(t *testing.T) {
		be := httptest.NewUnstartedServer(http.HandlerFunc(trailersHandler))
		be.Config.ErrorLog = log.New(io.Discard, "", 0) // it says which trailers it drops
		be.Config.Protocols = new(http.Protocols)
		be.Config.Protocols.SetUnencryptedHTTP2(true)
		be.Start()
		t.Cleanup(be.Close)
		h2c := &http.Transport{Protocols: new(http.Protocols)}
		h2c.Protocols.SetUnencryptedHTTP2(true)
		t.Cleanup(h2c.CloseIdleConnections)
		sent := forbiddenSent(t, &http.Client{Transport: h2c}, be.URL+"/id/direct")
		t.Logf("forbidden trailers Go's HTTP/2 server sends: %v", sent)
		e := newEnv(t, be.Listener.Addr().String(), withCluster(func(c *proxycfg.Cluster) { c.Protocol = proxycfg.ProtoH2C }))
		e.each(func(t *testing.T, p path) { checkTrailers(t, ask(p, request{id: idFor(p, 0, 1)}), sent) })
	})
}
