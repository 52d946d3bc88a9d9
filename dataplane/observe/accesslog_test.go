package observe

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// Whatever a client puts in a host, path or method, the access log's
// string is valid JSON that decodes to the same text (bytes that are not
// UTF-8 become U+FFFD).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "/plain", `"quoted"`, `back\slash`, "ctl\x00\x1f\x7f", "é中🙂", "\xff\xfe", "tab\tnl\nlf\r", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendJSONString([]byte("x"), s)
		if b[0] != 'x' {
			t.Fatal("overwrote what was there")
		}
		var got string
		if err := json.Unmarshal(b[1:], &got); err != nil {
			t.Fatalf("%q encodes to invalid JSON %s: %v", s, b[1:], err)
		}
		// Each byte that is not UTF-8 becomes one U+FFFD.
		var want strings.Builder
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				want.WriteRune(utf8.RuneError)
			} else {
				want.WriteString(s[i : i+n])
			}
			i += n
		}
		if got != want.String() {
			t.Fatalf("%q decodes to %q, want %q", s, got, want.String())
		}
	})
}

// lineStart and lineEnd are a request's arrival and end in the lines
// below: 1.234 ms apart, in a zone the log converts to UTC.
var (
	lineStart = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600))
	lineEnd   = lineStart.Add(1234567 * time.Nanosecond)
)

// A line's bytes are fixed: log readers parse them. Keys come in one
// order; those without a value are left out.
func TestLineJSON(t *testing.T) {
	full := Line{
		Start: lineStart, End: lineEnd.Add(777 * time.Nanosecond),
		ClientIP: "192.0.2.7", Host: "h\xfe.example", Method: "G\"T", Path: "/\"q\"\\\xff\x01\t", Proto: "HTTP/1.1",
		Status: 300, Bytes: 1000, Route: "default/sh\"op", Rule: "3", Backend: "app", Endpoint: "10.0.0.1:80", Retries: 2,
		TraceID: trace.TraceID{1, 2, 3, 0xab, 0xcd, 15: 0xff},
	}
	bare := Line{
		Start: lineStart, End: lineEnd, ClientIP: "203.0.113.1", Host: "h.example", Method: "GET",
		Path: "/a?b=c", Proto: "HTTP/1.1", Status: 200,
	}
	respelt := bare
	respelt.Path, respelt.ClientPath = "/admin/x?b=c", "//admin/./x?b=c"
	for _, tc := range []struct {
		line Line
		want string
	}{
		{respelt, `{"time":"2026-01-02T02:04:05.123456789Z","client_ip":"203.0.113.1","host":"h.example","method":"GET","path":"/admin/x?b=c","client_path":"//admin/./x?b=c","proto":"HTTP/1.1","status":200,"bytes":0,"duration_ms":1.234}` + "\n"},
		{full, `{"time":"2026-01-02T02:04:05.123456789Z","client_ip":"192.0.2.7","host":"h\ufffd.example","method":"G\"T","path":"/\"q\"\\\ufffd\u0001\t","proto":"HTTP/1.1","status":300,"bytes":1000,"duration_ms":1.235,"route":"default/sh\"op","rule":"3","backend":"app","endpoint":"10.0.0.1:80","retries":2,"trace_id":"010203abcd00000000000000000000ff"}` + "\n"},
		{bare, `{"time":"2026-01-02T02:04:05.123456789Z","client_ip":"203.0.113.1","host":"h.example","method":"GET","path":"/a?b=c","proto":"HTTP/1.1","status":200,"bytes":0,"duration_ms":1.234}` + "\n"},
	} {
		if got := string(tc.line.AppendJSON(nil)); got != tc.want {
			t.Errorf("line\n got %s\nwant %s", got, tc.want)
		}
	}
}

// Write drops the query with OmitQuery and leaves the caller's Line as
// it was; Close writes what is queued, and a closed log samples nothing.
func TestAccessLogWrite(t *testing.T) {
	var out testproc.SyncBuffer
	l := NewAccessLog(&out, AccessLogOptions{OmitQuery: true})
	ln := Line{Start: lineStart, End: lineEnd, Path: "/p?token=secret", ClientPath: "//p?token=secret", Status: 200}
	if !l.Sampled() {
		t.Fatal("a log sampling everything left a request out")
	}
	l.Write(&ln)
	l.Close()
	if ln.Path != "/p?token=secret" {
		t.Errorf("Write changed the caller's path to %q", ln.Path)
	}
	if got := out.String(); !strings.Contains(got, `"path":"/p","client_path":"//p",`) || strings.Count(got, "\n") != 1 {
		t.Errorf("logged %q, want one line with path /p and client_path //p", got)
	}
	if l.Written() != 1 || l.Dropped() != 0 {
		t.Errorf("written %d dropped %d, want 1 and 0", l.Written(), l.Dropped())
	}
	if l.Sampled() {
		t.Error("a closed log sampled a request")
	}
}
