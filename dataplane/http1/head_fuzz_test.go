package http1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
)

// FuzzResponseHead feeds arbitrary bytes to the response head parser and
// compares its verdict with net/http's: the proxy may refuse more than
// net/http (it is a gateway and must, RFC 9112 §5.2 and §6.3), but what it
// accepts must parse the same way there, with the same status and framing.
func FuzzResponseHead(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nbody to close",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n",
		"HTTP/1.1 200\r\n\r\n",
		"HTTP/1.1 999 Odd\r\nconnection: close\r\n\r\n",
		"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
		"HTTP/2.0 200 OK\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h := &Head{}
		err := readHead(bufio.NewReader(bytes.NewReader(data)), h)
		if err != nil {
			return
		}
		res, herr := http.ReadResponse(bufio.NewReader(bytes.NewReader(data)), &http.Request{Method: "GET"})
		if herr != nil {
			// net/http is laxer in places (it tolerates obs-fold); it is
			// never stricter about what reaches this point, except for
			// status codes it will not parse.
			t.Fatalf("accepted %q, net/http refuses: %v", data, herr)
		}
		// net/http skips 1xx only when asked; compare final answers.
		for res.StatusCode >= 100 && res.StatusCode < 200 && res.StatusCode != 101 {
			return
		}
		if res.StatusCode != h.Status {
			t.Fatalf("status %d, net/http %d for %q", h.Status, res.StatusCode, data)
		}
		if h.Chunked != (len(res.TransferEncoding) > 0 && res.TransferEncoding[len(res.TransferEncoding)-1] == "chunked") {
			t.Fatalf("chunked=%v, net/http %v for %q", h.Chunked, res.TransferEncoding, data)
		}
		if !h.Chunked && h.ContentLength >= 0 && h.HasBody("GET") && res.ContentLength != h.ContentLength {
			t.Fatalf("length %d, net/http %d for %q", h.ContentLength, res.ContentLength, data)
		}
		dst := http.Header{}
		h.copyTo(dst, "")
		for k := range dst {
			if httpsyntax.HopByHop(k) {
				t.Fatalf("hop-by-hop %q copied for %q", k, data)
			}
		}
	})
}

// FuzzChunked compares the chunked decoder with net/http's on arbitrary
// input: both must agree on the decoded bytes whenever both succeed, and
// the proxy must not accept a body net/http rejects.
func FuzzChunked(f *testing.F) {
	for _, s := range []string{
		"5\r\nhello\r\n0\r\n\r\n",
		"3;ext=1\r\nabc\r\n0\r\nTrailer: v\r\n\r\n",
		"ffffffffffffffffff\r\n",
		"1\r\nab\r\n0\r\n\r\n",
		"0\r\n\r\n",
		"A\r\n0123456789\r\n0\r\n\r\n",
		"1 \r\na\r\n0\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rec := httptest.NewRecorder()
		c := bodyCopy{w: rec, br: bufio.NewReader(bytes.NewReader(data))}
		tr := &Head{}
		err := c.chunked(tr)
		want, werr := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		if werr != nil && !strings.Contains(werr.Error(), "trailer") {
			t.Fatalf("accepted %q, net/http: %v", data, werr)
		}
		if werr == nil && !bytes.Equal(rec.Body.Bytes(), want) {
			t.Fatalf("decoded %q, net/http %q", rec.Body.Bytes(), want)
		}
	})
}

// FuzzResponseHeadWhole holds the two ways of reading a response head to
// one result: whole from the reader's buffer (bufferedHead) and line by
// line (a head that arrives in pieces), informational heads included.
func FuzzResponseHeadWhole(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\nX:  a \nContent-Length: 1\n\nx",
		"HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		read := func(br *bufio.Reader) (*Head, string, error) {
			h := &Head{}
			err := readHead(br, h)
			rest, _ := io.ReadAll(br)
			return h, string(rest), err
		}
		whole, pieces := wholeAndPieces(data)
		hw, restW, errW := read(whole)
		hp, restP, errP := read(pieces)
		if (errW == nil) != (errP == nil) || errW != nil && errW.Error() != errP.Error() {
			t.Fatalf("%q: whole %v, in pieces %v", data, errW, errP)
		}
		if errW != nil {
			return
		}
		if hw.Status != hp.Status || hw.ContentLength != hp.ContentLength || hw.Chunked != hp.Chunked || hw.Close != hp.Close ||
			hw.upgrade != hp.upgrade || hw.spent != hp.spent || restW != restP {
			t.Fatalf("%q: whole %+v (rest %q), in pieces %+v (rest %q)", data, hw, restW, hp, restP)
		}
		if len(hw.fields) != len(hp.fields) {
			t.Fatalf("%q: %d fields whole, %d in pieces", data, len(hw.fields), len(hp.fields))
		}
		for i := range hw.fields {
			if string(hw.bytes(hw.fields[i].name)) != string(hp.bytes(hp.fields[i].name)) ||
				string(hw.bytes(hw.fields[i].value)) != string(hp.bytes(hp.fields[i].value)) {
				t.Fatalf("%q: field %d differs", data, i)
			}
		}
	})
}
