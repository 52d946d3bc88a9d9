package http1

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
)

// FuzzWriteRequestLine checks that what the writer lets through is read
// back as meant: whatever method, target and host it accepts, net/http's
// parser and ours either refuse the request (the backend answers 400) or
// read that very method, target and host, and one request, not two. What
// it refuses are exactly the values IsToken, ValidTarget and ValidHost
// refuse (the checks every listener makes before routing), and targets
// not in origin form.
func FuzzWriteRequestLine(f *testing.F) {
	for _, s := range [][3]string{
		{"GET", "/", "a"},
		{"GET /admin/secret.txt?", "/public/index.txt", "a"},
		{"GET", "/public/index.txt HTTP/1.1\r\nHost: a\r\n\r\nGET /admin", "a"},
		{"GET", "/a\tb", "a"},
		{"GET", "/a\x7fb", "a"},
		{"GET", "/?q=1 2", "a"},
		{"GET", "*", "a"},
		{"OPTIONS", "*", "a"},
		{"GET", "http://b/x", "a"},
		{"GET", "/", "a b"},
		{"GET", "/", "a\r\nX-Injected: 1"},
		{"GET", "/", "[::1]:8080"},
		{"M-SEARCH", "/%zz", "a"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, method, target, host string) {
		var buf bytes.Buffer
		bw := bufio.NewWriter(&buf)
		err := WriteRequestLine(bw, method, target, host)
		if want := httpsyntax.IsToken(method) && httpsyntax.ValidTarget(target) && httpsyntax.ValidHost(host) && originForm(method, target); (err == nil) != want {
			t.Fatalf("%q %q %q: err %v, checks say %v", method, target, host, err, want)
		}
		if err != nil {
			if bw.Buffered() != 0 {
				t.Fatalf("refused, yet wrote %q", buf.Bytes())
			}
			return
		}
		EndHead(bw, 0)
		bw.Flush()
		wire := buf.Bytes()
		br := bufio.NewReader(bytes.NewReader(wire))
		if r, err := http.ReadRequest(br); err == nil {
			if r.Method != method || r.RequestURI != target || r.Host != host {
				t.Fatalf("wrote %q %q %q; net/http read %q %q %q", method, target, host, r.Method, r.RequestURI, r.Host)
			}
			if br.Buffered() != 0 {
				t.Fatalf("net/http sees more than one request in %q", wire)
			}
		}
		q := &requestHead{}
		br = bufio.NewReader(bytes.NewReader(wire))
		if err := readRequestHead(br, q); err == nil {
			r := &http.Request{Header: http.Header{}}
			q.fill(r)
			if r.Method != method || r.RequestURI != target || r.Host != host {
				t.Fatalf("wrote %q %q %q; our parser read %q %q %q", method, target, host, r.Method, r.RequestURI, r.Host)
			}
			if br.Buffered() != 0 {
				t.Fatalf("our parser sees more than one request in %q", wire)
			}
		}
	})
}

// A field line longer than the writer's buffer is written whole, in
// pieces, with names and values as strings or bytes.
func TestWriteFieldLargerThanTheBuffer(t *testing.T) {
	long := strings.Repeat("v", 100)
	for _, bytesToo := range []bool{false, true} {
		var out bytes.Buffer
		bw := bufio.NewWriterSize(&out, 16)
		bw.WriteString("12345")
		if bytesToo {
			writeField(bw, []byte("X-Long"), []byte(long))
		} else {
			WriteField(bw, "X-Long", long)
		}
		WriteField(bw, "A", "b")
		bw.Flush()
		if want := "12345X-Long: " + long + "\r\nA: b\r\n"; out.String() != want {
			t.Fatalf("bytes %v: wrote %q, want %q", bytesToo, out.String(), want)
		}
	}
}
