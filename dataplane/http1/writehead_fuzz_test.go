package http1

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// FuzzWriteHead holds the two ways a handler passes an upstream's answer
// on to the same response on the wire: the head copied into the header
// map (Head.CopyTo, then WriteHeader), and written from the head without
// the map (ResponseWriter.WriteHead). Each fuzz input is an upstream's
// answer; a real Server answers with it both ways, and a client reads
// both: the status, every field's values in order, and the body agree
// (Date aside when the upstream sent none: each way takes the clock's).
func FuzzWriteHead(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\ncontent-type: a\r\nX-A: 1\r\nx-a: 2\r\nDate: Mon, 30 Nov 2026 00:00:00 GMT\r\nDate: x\r\nContent-Length: 1\r\n\r\nz",
		"HTTP/1.1 404 Not Found\r\nConnection: x-secret, keep-alive\r\nX-Secret: s\r\nKeep-Alive: timeout=5\r\nContent-Length: 2\r\n\r\nno",
		"HTTP/1.1 200 OK\r\nConnection: date\r\nDate: Mon, 30 Nov 2026 00:00:00 GMT\r\nContent-Length: 1\r\n\r\nz",
		"HTTP/1.1 200 OK\r\nConnection: content-length\r\nContent-Length: 3\r\nUpgrade: h2c\r\nTe: x\r\nProxy-Authenticate: y\r\n\r\nabc",
		"HTTP/1.0 201 Created\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 1\r\n\r\nz",
	} {
		f.Add([]byte(s))
	}
	var mu sync.Mutex
	var up []byte // the answer the handler passes on
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		answer := up
		mu.Unlock()
		h := &Head{}
		br := bufio.NewReader(bytes.NewReader(answer))
		if readHead(br, h) != nil || h.Chunked || h.ContentLength <= 0 || !h.HasBody(r.Method) {
			w.WriteHeader(599)
			return
		}
		body := make([]byte, h.ContentLength)
		if _, err := io.ReadFull(br, body); err != nil {
			w.WriteHeader(599)
			return
		}
		if r.URL == nil && r.RequestURI == "/map" {
			h.CopyTo(w.Header())
			w.WriteHeader(h.Status)
		} else {
			w.(*ResponseWriter).WriteHead(h)
		}
		w.Write(body)
	}), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), HeadTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second}
	addr := startServer(f, s)
	get := func(t *testing.T, path string) (status int, fields map[string][]string, body []byte) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
		raw, _ := io.ReadAll(c)
		head, body, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
		if !ok {
			t.Fatalf("%s: no head in %q", path, raw)
		}
		lines := strings.Split(string(head), "\r\n")
		status, _ = strconv.Atoi(strings.Fields(lines[0])[1])
		fields = map[string][]string{}
		for _, l := range lines[1:] {
			k, v, _ := strings.Cut(l, ": ")
			fields[k] = append(fields[k], v)
		}
		return status, fields, body
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		mu.Lock()
		up = answer
		mu.Unlock()
		sm, fm, bm := get(t, "/map")
		if sm == 599 {
			return
		}
		sh, fh, bh := get(t, "/head")
		if !bytes.Contains(answer, []byte("Date:")) && !bytes.Contains(bytes.ToLower(answer), []byte("date:")) {
			delete(fm, "Date")
			delete(fh, "Date")
		}
		if sm != sh || !bytes.Equal(bm, bh) || !maps.EqualFunc(fm, fh, slices.Equal[[]string]) {
			t.Fatalf("%q:\nby the map: %d %q %q\nby the head: %d %q %q", answer, sm, fm, bm, sh, fh, bh)
		}
	})
}
