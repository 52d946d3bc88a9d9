package dataplane

import (
	"bufio"
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
)

// outRequestOf parses a request head as the origin server does and sets
// out the request as the proxy sends it on, from the server's ordered
// fields (fields) or from the header map alone.
func outRequestOf(t testing.TB, head []byte, fields bool) (*outRequest, bool) {
	r, f, err := http1.ReadRequestFields(bufio.NewReader(bytes.NewReader(head)))
	if err != nil {
		return nil, false
	}
	o := &outRequest{method: r.Method, target: "/", host: "app.example.com", in: r.Header,
		xffPrior: r.Header["X-Forwarded-For"], peer: "192.0.2.1", xfp: "https"}
	if fields {
		o.fields = f
	}
	return o, true
}

// headFields reads the fields of a written request head: each name's
// values in the order they were written.
func headFields(t testing.TB, head []byte) (line string, fields map[string][]string) {
	lines := strings.Split(strings.TrimSuffix(string(head), "\r\n\r\n"), "\r\n")
	fields = map[string][]string{}
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ": ")
		if !ok {
			t.Fatalf("field line %q in %q", l, head)
		}
		fields[name] = append(fields[name], value)
	}
	return lines[0], fields
}

// FuzzWriteHeadFromFields holds the two ways of writing a request on to
// the same result: from the origin server's fields in the client's order,
// and from the request's header map (HTTP/2, mirrors): the same fields
// with the same values, each name's in the same order.
func FuzzWriteHeadFromFields(f *testing.F) {
	f.Add([]byte(browserRequest))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nx-a: 2\r\nConnection: x-b, close\r\nX-B: 3\r\nX-A: 4\r\n\r\n"))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: a\r\nCookie: a=1\r\nCookie: b=2\r\nTe: trailers\r\nX_Forwarded_For: 1.2.3.4\r\n\r\n"))
	f.Fuzz(func(t *testing.T, head []byte) {
		byFields, ok := outRequestOf(t, head, true)
		if !ok {
			return
		}
		byMap, _ := outRequestOf(t, head, false)
		var a, b bytes.Buffer
		errA := writeHead(bufio.NewWriterSize(&a, 64<<10), byFields)
		errB := writeHead(bufio.NewWriterSize(&b, 64<<10), byMap)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("%q: from fields %v, from the map %v", head, errA, errB)
		}
		if errA != nil {
			return
		}
		la, fa := headFields(t, a.Bytes())
		lb, fb := headFields(t, b.Bytes())
		if la != lb || !mapsEqual(fa, fb) {
			t.Fatalf("%q:\nfrom fields %q\nfrom the map %q", head, a.Bytes(), b.Bytes())
		}
	})
}

func mapsEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestRequestLeavesInTheClientsOrder: the origin server's request goes on
// with its fields in the order the client sent them, as nginx sends them.
func TestRequestLeavesInTheClientsOrder(t *testing.T) {
	o, _ := outRequestOf(t, []byte("GET / HTTP/1.1\r\nZ-Last: 1\r\nHost: a\r\nA-First: 2\r\nM-Middle: 3\r\nz-last: 4\r\n\r\n"), true)
	var out bytes.Buffer
	bw := bufio.NewWriter(&out)
	if err := writeHead(bw, o); err != nil {
		t.Fatal(err)
	}
	bw.Flush()
	want := "GET / HTTP/1.1\r\nHost: app.example.com\r\nZ-Last: 1\r\nA-First: 2\r\nM-Middle: 3\r\nZ-Last: 4\r\n"
	if !strings.HasPrefix(out.String(), want) {
		t.Fatalf("head %q, want it to start %q", out.String(), want)
	}
}

// BenchmarkWriteHead measures writing a browser's request on (20 fields),
// from the origin server's fields and from the header map.
func BenchmarkWriteHead(b *testing.B) {
	for _, fields := range []bool{true, false} {
		name := "from=map"
		if fields {
			name = "from=fields"
		}
		b.Run(name, func(b *testing.B) {
			o, _ := outRequestOf(b, browserRequest, fields)
			bw := bufio.NewWriterSize(io.Discard, 4096)
			b.ReportAllocs()
			for b.Loop() {
				if err := writeHead(bw, o); err != nil {
					b.Fatal(err)
				}
				bw.Flush()
			}
		})
	}
}

// TestDetachedOwnsWhatItReads: a mirror's copy of the request reads
// nothing the client's connection reuses.
func TestDetachedOwnsWhatItReads(t *testing.T) {
	o, _ := outRequestOf(t, []byte("GET / HTTP/1.1\r\nHost: a\r\nX-Id: 1\r\nX-Forwarded-For: 198.51.100.1\r\n\r\n"), true)
	d := o.detached()
	if d.fields != nil {
		t.Fatal("the copy reads the connection's field list")
	}
	o.in["X-Id"][0] = "2"
	o.xffPrior[0] = "203.0.113.9"
	if d.in["X-Id"][0] != "1" || d.xffPrior[0] != "198.51.100.1" {
		t.Fatalf("the copy shares the request's values: X-Id %q, X-Forwarded-For %q", d.in["X-Id"], d.xffPrior)
	}
}
