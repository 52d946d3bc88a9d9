package http1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/textproto"
	"reflect"
	"slices"
	"testing"
	"testing/iotest"

	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
)

// FuzzRequestHead compares the origin server's request parser with
// net/http's: whatever it accepts, net/http must accept too, with the same
// method, target, host and body framing. (It may refuse more: requests
// with both Content-Length and Transfer-Encoding, say.)
func FuzzRequestHead(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /x?y=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
		"GET http://b.example/p HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.0\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
		"\r\nGET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
		"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
		"G\x00T / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: user@a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a_b.example\r\n\r\n",
		"GET http://user@a/ HTTP/1.1\r\nHost: a\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		q := &requestHead{}
		br := bufio.NewReader(bytes.NewReader(data))
		br.Peek(1) // as the server waits for a request: the head is buffered whole
		if err := readRequestHead(br, q); err != nil {
			return
		}
		r := &http.Request{Header: http.Header{}}
		q.fill(r)
		want, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			t.Fatalf("accepted %q; net/http refuses: %v", data, err)
		}
		if r.Method != want.Method || r.RequestURI != want.RequestURI || r.Host != want.Host {
			t.Fatalf("%q: got %s %s host %q; net/http %s %s host %q", data, r.Method, r.RequestURI, r.Host, want.Method, want.RequestURI, want.Host)
		}
		if r.ContentLength != want.ContentLength {
			t.Fatalf("%q: length %d; net/http %d", data, r.ContentLength, want.ContentLength)
		}
		for k, vs := range want.Header {
			if got := r.Header[k]; len(got) != len(vs) {
				t.Fatalf("%q: header %s = %q; net/http %q", data, k, got, vs)
			}
		}
	})
}

// FuzzBufferedHead holds the two ways of reading a request head to the
// same result: whole from the reader's buffer (bufferedHead, the usual
// case) and line by line (a head that arrives in pieces). Both must
// accept and refuse alike, with the same answer, and read the same
// request.
func FuzzBufferedHead(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\nHost: a\nX:  b \n\n",
		"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nx-A: 1\r\nX-a: 2\r\nHOST2: c\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX\x00: b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n\r",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
		browserHead,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		read := func(br *bufio.Reader) (*requestHead, *http.Request, error) {
			q := &requestHead{}
			br.Peek(1)
			if err := readRequestHead(br, q); err != nil {
				return nil, nil, err
			}
			r := &http.Request{Header: http.Header{}}
			q.fill(r)
			return q, r, nil
		}
		whole, pieces := wholeAndPieces(data)
		qw, rw, errW := read(whole)
		qp, rp, errP := read(pieces)
		if (errW == nil) != (errP == nil) || errW != nil && errW.Error() != errP.Error() {
			t.Fatalf("%q: whole %v, in pieces %v", data, errW, errP)
		}
		if errW != nil {
			return
		}
		if rw.Method != rp.Method || rw.RequestURI != rp.RequestURI || rw.Host != rp.Host ||
			rw.ContentLength != rp.ContentLength || rw.Close != rp.Close || !reflect.DeepEqual(rw.Header, rp.Header) {
			t.Fatalf("%q: whole %+v, in pieces %+v", data, rw, rp)
		}
		if qw.list.Len() != qp.list.Len() {
			t.Fatalf("%q: %d fields whole, %d in pieces", data, qw.list.Len(), qp.list.Len())
		}
		for i := range qw.list.Len() {
			kw, vw := qw.list.At(i)
			kp, vp := qp.list.At(i)
			if kw != kp || vw != vp {
				t.Fatalf("%q: field %d %q: %q whole, %q: %q in pieces", data, i, kw, vw, kp, vp)
			}
			if vs := rw.Header[kw]; !slices.Contains(vs, vw) {
				t.Fatalf("%q: field %s: %q not in the header map's %q", data, kw, vw, vs)
			}
		}
		if w, p := restOf(whole), restOf(pieces); w != p {
			t.Fatalf("%q: %d bytes left after the head whole, %d in pieces", data, w, p)
		}
	})
}

// restOf is what is left to read in br.
func restOf(br *bufio.Reader) int {
	n, _ := io.Copy(io.Discard, br)
	return int(n)
}

// FuzzCanonicalize holds the server's canonical field names to net/http's.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{"host", "X-FORWARDED-FOR", "cf-connecting-ip", "a--b", "-x", "x_y-z", "1a-2b", "Sec-CH-UA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if !httpsyntax.IsToken(name) {
			return
		}
		b := []byte(name)
		canonicalize(b)
		if want := textproto.CanonicalMIMEHeaderKey(name); string(b) != want {
			t.Fatalf("%q: %q, net/textproto %q", name, b, want)
		}
	})
}

// wholeAndPieces returns two readers of data: one that holds it whole
// after its first read, and one that reads a byte at a time, so never
// holds a whole head (the fast and the line-by-line reads of a head).
func wholeAndPieces(data []byte) (whole, pieces *bufio.Reader) {
	return bufio.NewReaderSize(bytes.NewReader(data), 64<<10),
		bufio.NewReaderSize(iotest.OneByteReader(bytes.NewReader(data)), 16)
}
