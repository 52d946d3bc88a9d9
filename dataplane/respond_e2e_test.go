package dataplane

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testnet"
)

// A 204 or 304 that carries a Content-Length reaches clients without it:
// an HTTP/2 client takes it as a promise of a body that never comes.
func TestNoContentLengthOnStatusesWithoutContent(t *testing.T) {
	be := startBackend(t, func(w http.ResponseWriter, r *http.Request) {
		c, brw, _ := http.NewResponseController(w).Hijack()
		defer c.Close()
		status := "204 No Content"
		if r.URL.Path == "/304" {
			status = "304 Not Modified"
		}
		brw.WriteString("HTTP/1.1 " + status + "\r\nContent-Length: 5\r\nEtag: \"v1\"\r\n\r\n")
		brw.Flush()
	})
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", be)))
	for _, path := range []string{"/204", "/304"} {
		for name, c := range map[string]*http.Client{"HTTP/1.1": e.client, "HTTP/2": e.h2} {
			url := e.url(path)
			if c == e.h2 {
				url = "https://" + e.bound.OriginTLS + path
			}
			req, _ := http.NewRequest("GET", url, nil)
			req.Host = "h"
			res, err := c.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", name, path, err)
			}
			_, err = io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil || res.Header.Get("Content-Length") != "" || res.Header.Get("Etag") != `"v1"` {
				t.Errorf("%s %s: %d, headers %v, body error %v", name, path, res.StatusCode, res.Header, err)
			}
		}
	}
}

// Trailers an HTTP/2 backend declares reach an HTTP/1.1 client even when
// the backend gave a length: the answer goes out chunked.
func TestDeclaredTrailersFromHTTP2ReachHTTP1Clients(t *testing.T) {
	be := h2cBackend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		w.Header().Set("Content-Length", "5")
		io.WriteString(w, "hello")
		w.Header().Set("X-Checksum", "5d41402a")
	})
	c := cluster("a", be)
	c.Protocol = proxycfg.ProtoH2C
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, c))
	req, _ := http.NewRequest("GET", e.url("/"), nil)
	req.Host = "h"
	res, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != "hello" || res.Trailer.Get("X-Checksum") != "5d41402a" {
		t.Errorf("body %q, trailers %v", body, res.Trailer)
	}
}

// A backend that starts a response head and stalls holds its connection
// only as long as the client waits: a client that leaves frees it.
func TestStalledHeadFreedWhenTheClientLeaves(t *testing.T) {
	freed := make(chan struct{})
	be := testnet.RawServer(t, func(c net.Conn) {
		if skipHead(bufio.NewReader(c)) != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != nil && !isTimeout(err) {
			close(freed) // the proxy closed its side
		}
	})
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", be)))
	client, err := net.Dial("tcp", e.bound.Origin)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(client, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	time.Sleep(200 * time.Millisecond) // the head has started arriving
	client.Close()
	select {
	case <-freed:
	case <-time.After(5 * time.Second):
		t.Fatal("the backend connection is still held 5 s after its client left")
	}
}
