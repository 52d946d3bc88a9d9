// This file implements the table tests of Read: hand-built hellos that
// are taken, and ones that each break one rule, each read whole, one byte
// at a time and in halves.

package sni

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

type readCase struct {
	name  string
	in    []byte
	lim   Limits
	want  Hello
	end   int    // where the hello ends in in, when bytes follow it; 0: len(in)
	err   error  // ErrNotTLS, ErrTooLarge, ErrMalformed, io.EOF or io.ErrUnexpectedEOF
	field string // the field a format error names
}

// validCases are hellos Read takes.
func validCases() []readCase {
	var cs []readCase
	add := func(name string, in []byte, want Hello) {
		cs = append(cs, readCase{name: name, in: in, want: want})
	}
	noExts := fields()
	noExts.exts = nil
	add("no extensions", wire(noExts.body()), Hello{})
	add("empty extensions", wire(fields().body()), Hello{})
	add("sni and alpn", wire(fields(sniExt(hostName("www.example.com")), alpnExt("h2", "http/1.1")).body()),
		Hello{ServerName: "www.example.com", ALPN: []string{"h2", "http/1.1"}})
	add("alpn before sni", wire(fields(alpnExt("http/1.1"), sniExt(hostName("a.example"))).body()),
		Hello{ServerName: "a.example", ALPN: []string{"http/1.1"}})
	add("sni kept as sent", wire(fields(sniExt(hostName("MiXeD.Example.COM"))).body()), Hello{ServerName: "MiXeD.Example.COM"})
	add("sni any bytes", wire(fields(sniExt(hostName("b\xc3\xa4d\x00name"))).body()), Hello{ServerName: "b\xc3\xa4d\x00name"})
	add("sni other name_type skipped", wire(fields(sniExt(cat(u8(7), v16([]byte("x."))), hostName("b.example"))).body()),
		Hello{ServerName: "b.example"})
	add("sni only other name_type", wire(fields(sniExt(cat(u8(1), v16([]byte("x"))))).body()), Hello{})
	add("alpn one byte names", wire(fields(alpnExt("a", "b", "c")).body()), Hello{ALPN: []string{"a", "b", "c"}})
	add("other extensions skipped", wire(fields(ext(0x0a0a), ext(43, v8(u16(0x0304), u16(0x0303))), sniExt(hostName("c.example")),
		ext(0xfe0d, []byte{0, 1, 2}), ext(21, make([]byte, 300)), ext(0xffff)).body()), Hello{ServerName: "c.example"})
	many := [][]byte{sniExt(hostName("many.example"))}
	for i := range 200 {
		many = append(many, ext(1000+i))
	}
	add("200 extensions", wire(fields(many...).body()), Hello{ServerName: "many.example"})
	shortSID := fields()
	shortSID.sessionID = v8()
	add("empty session id", wire(shortSID.body()), Hello{})
	oneSuite := fields()
	oneSuite.suites = v16(u16(0x002f))
	add("one cipher suite", wire(oneSuite.body()), Hello{})
	oddVersion := fields()
	oddVersion.version = u16(0x7f7f)
	add("legacy_version not checked", wire(oddVersion.body()), Hello{})
	for _, v := range []int{0x0301, 0x0302, 0x0303} {
		add("record version "+hex(v), record(typeHandshake, v, handshake(fields(sniExt(hostName("v.example"))).body())),
			Hello{ServerName: "v.example"})
	}
	sni := Hello{ServerName: "frag.example", ALPN: []string{"h2"}}
	msg := handshake(fields(sniExt(hostName("frag.example")), alpnExt("h2")).body())
	add("two records", records(msg, 100), sni)
	add("header split over records", cat(records(msg[:2], 2), records(msg[2:], 1000)), sni)
	add("header whole, body in the next record", cat(records(msg[:4], 4), records(msg[4:], 1000)), sni)
	tiny := fields()
	tiny.sessionID = v8()
	small := handshake(tiny.body()) // 49 bytes
	add("one-byte records", records(small, 1), Hello{})
	add("mixed record versions", cat(record(typeHandshake, 0x0301, small[:10]), record(typeHandshake, 0x0303, small[10:])), Hello{})

	// Bytes after the hello are the client's next bytes.
	after := func(name string, in []byte, end int, want Hello) {
		cs = append(cs, readCase{name: name, in: in, end: end, want: want})
	}
	h := handshake(fields(sniExt(hostName("t.example"))).body())
	after("trailing bytes in the record", record(typeHandshake, 0x0301, cat(h, []byte("next"))), 5+len(h), Hello{ServerName: "t.example"})
	after("records after the hello", cat(wire(fields().body()), record(typeChangeCipherSpec, 0x0303, u8(1)), record(23, 0x0303, []byte("early"))),
		len(wire(fields().body())), Hello{})
	frag := cat(records(h[:50], 50), record(typeHandshake, 0x0303, cat(h[50:], []byte{0x17, 0x03})))
	after("trailing bytes in the last fragment", frag, len(frag)-2, Hello{ServerName: "t.example"})
	return cs
}

func hex(v int) string { return fmt.Sprintf("%#04x", v) }

// invalidCases are inputs Read refuses, each for one reason.
func invalidCases() []readCase {
	var cs []readCase
	bad := func(name string, in []byte, err error, field string) {
		cs = append(cs, readCase{name: name, in: in, err: err, field: field})
	}
	ok := handshake(fields(sniExt(hostName("ok.example"))).body())

	// Not TLS, told from the first bytes.
	bad("http request", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), ErrNotTLS, "record type")
	bad("http2 preface", []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), ErrNotTLS, "record type")
	bad("proxy protocol", []byte("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\n"), ErrNotTLS, "record type")
	bad("sslv2 hello", cat([]byte{0x80, 0x2e, 0x01, 0x00, 0x02}, make([]byte, 0x2b)), ErrNotTLS, "record type")
	bad("zero byte", []byte{0}, ErrNotTLS, "record type")
	bad("handshake type byte, major 0", []byte{22, 0, 1, 0, 5}, ErrNotTLS, "record version")
	bad("handshake type byte, then text", []byte("\x16GET"), ErrNotTLS, "record version")

	// The record layer.
	bad("alert first", cat(record(typeAlert, 0x0301, []byte{1, 0}), wire(fields().body())), ErrMalformed, "record type")
	bad("change_cipher_spec first", cat(record(typeChangeCipherSpec, 0x0303, u8(1)), wire(fields().body())), ErrMalformed, "record type")
	bad("application_data first", record(typeApplicationData, 0x0303, []byte("hi")), ErrMalformed, "record type")
	bad("heartbeat first", record(typeHeartbeat, 0x0303, []byte{1, 0, 0}), ErrMalformed, "record type")
	bad("alert inside the hello", cat(records(ok[:20], 20), record(typeAlert, 0x0303, []byte{1, 0}), records(ok[20:], 1000)), ErrMalformed, "record type")
	bad("ccs inside the hello", cat(records(ok[:20], 20), record(typeChangeCipherSpec, 0x0303, u8(1)), records(ok[20:], 1000)), ErrMalformed, "record type")
	bad("unknown type inside the hello", cat(records(ok[:20], 20), record(0x99, 0x0303, u8(1))), ErrMalformed, "record type")
	bad("ssl3 record version", record(typeHandshake, 0x0300, ok), ErrMalformed, "record version")
	bad("tls1.3 record version 0x0304", record(typeHandshake, 0x0304, ok), ErrMalformed, "record version")
	bad("ssl3 record version in the second record", cat(records(ok[:20], 20), record(typeHandshake, 0x0300, ok[20:])), ErrMalformed, "record version")
	bad("major 2 in the second record", cat(records(ok[:20], 20), record(typeHandshake, 0x0203, ok[20:])), ErrMalformed, "record version")
	bad("empty record", cat(record(typeHandshake, 0x0301, nil), wire(fields().body())), ErrMalformed, "record length")
	bad("empty record inside the hello", cat(records(ok[:20], 20), record(typeHandshake, 0x0301, nil)), ErrMalformed, "record length")
	bad("record length 16385", cat(u8(typeHandshake), u16(0x0301), u16(16385), ok), ErrTooLarge, "record length")
	bad("record length 65535", cat(u8(typeHandshake), u16(0x0301), u16(65535)), ErrTooLarge, "record length")
	bad("65 records", records(handshake(fields().body()), 1)[:65*6], ErrTooLarge, "records")

	// The handshake layer.
	bad("server_hello", record(typeHandshake, 0x0303, cat(u8(2), ok[1:])), ErrMalformed, "handshake type")
	bad("hello_request", record(typeHandshake, 0x0303, []byte{0, 0, 0, 0}), ErrMalformed, "handshake type")
	bad("hello of 16385 bytes", record(typeHandshake, 0x0301, cat(u8(1), u24(16385))), ErrTooLarge, "handshake length")
	bad("hello of 16 MiB", record(typeHandshake, 0x0301, cat(u8(1), u24(1<<24-1))), ErrTooLarge, "handshake length")
	bad("empty hello", wire(nil), ErrMalformed, "legacy_version")

	// The body, field by field.
	body := fields(sniExt(hostName("ok.example"))).body()
	cut := func(name string, n int, field string) { bad(name, wire(body[:n]), ErrMalformed, field) }
	cut("legacy_version cut", 1, "legacy_version")
	cut("random cut", 2+31, "random")
	cut("session id length missing", 2+32, "legacy_session_id")
	cut("session id cut", 2+32+10, "legacy_session_id")
	cut("cipher_suites length cut", 2+32+33+1, "cipher_suites")
	cut("cipher_suites cut", 2+32+33+3, "cipher_suites")
	cut("compression length missing", 2+32+33+6, "legacy_compression_methods")
	cut("compression cut", 2+32+33+6+1, "legacy_compression_methods")
	cut("extensions length cut", 2+32+33+6+2+1, "extensions")
	cut("extensions cut", len(body)-1, "extensions")
	field := func(name string, f helloFields, field string) { bad(name, wire(f.body()), ErrMalformed, field) }
	f := fields()
	f.sessionID = v8(make([]byte, 33))
	field("session id of 33 bytes", f, "legacy_session_id")
	f = fields()
	f.suites = v16()
	field("no cipher suites", f, "cipher_suites")
	f.suites = v16(u16(0x1301), u8(0))
	field("odd cipher_suites", f, "cipher_suites")
	f = fields()
	f.methods = v8()
	field("no compression methods", f, "legacy_compression_methods")
	f = fields(sniExt(hostName("x.example")))
	f.exts = cat(f.exts, u8(0))
	field("byte after the extensions", f, "extensions")
	f = fields()
	f.exts = u8(0)
	field("one byte for the extensions", f, "extensions")
	field("extension type cut", fields(u8(0)), "extension")
	field("extension length cut", fields(u16(5), u8(0)), "extension")
	field("extension data cut", fields(u16(5), u16(4), u16(0)), "extension")
	field("duplicate unknown extension", fields(ext(0x1234), sniExt(hostName("d.example")), ext(0x1234)), "extension")
	field("duplicate server_name", fields(sniExt(hostName("d.example")), sniExt(hostName("d.example"))), "extension")
	field("duplicate alpn", fields(alpnExt("h2"), alpnExt("h2")), "extension")
	many := [][]byte{}
	for i := range 40 {
		many = append(many, ext(0xfe00+i))
	}
	field("duplicate past the 32nd extension", fields(append(many, ext(0xfe00+33))...), "extension")
	field("duplicate of the 1st past the 32nd", fields(append(many, ext(0xfe00))...), "extension")

	// server_name.
	sniBad := func(name string, data []byte) { field(name, fields(ext(extServerName, data)), "server_name") }
	sniBad("sni no list", nil)
	sniBad("sni list length cut", u8(0))
	sniBad("sni list past the extension", v16(hostName("x"))[:4])
	sniBad("sni empty list", v16())
	sniBad("sni bytes after the list", cat(v16(hostName("x.example")), u8(0)))
	sniBad("sni name length cut", v16(u8(0), u8(0)))
	sniBad("sni name past the list", v16(u8(0), u16(10), []byte("short")))
	sniBad("sni empty name", v16(u8(0), u16(0)))
	sniBad("sni empty name of another type", v16(u8(5), u16(0), hostName("x.example")))
	sniBad("sni two host names", v16(hostName("a.example"), hostName("b.example")))
	sniBad("sni trailing dot", v16(hostName("a.example.")))
	sniBad("sni only a dot", v16(hostName(".")))

	// ALPN.
	alpnBad := func(name string, data []byte) { field(name, fields(ext(extALPN, data)), "alpn") }
	alpnBad("alpn no list", nil)
	alpnBad("alpn empty list", v16())
	alpnBad("alpn list past the extension", v16(v8([]byte("h2")))[:3])
	alpnBad("alpn bytes after the list", cat(v16(v8([]byte("h2"))), u8(0)))
	alpnBad("alpn empty name", v16(v8([]byte("h2")), v8()))
	alpnBad("alpn name past the list", v16(u8(5), []byte("h2")))

	// The connection ends.
	cs = append(cs,
		readCase{name: "nothing", in: nil, err: io.EOF},
		readCase{name: "one byte", in: []byte{22}, err: io.ErrUnexpectedEOF},
		readCase{name: "record header", in: []byte{22, 3, 1, 0, 40}, err: io.ErrUnexpectedEOF},
		readCase{name: "hello cut", in: wire(body)[:60], err: io.ErrUnexpectedEOF},
		readCase{name: "second record missing", in: records(ok, 30)[:35], err: io.ErrUnexpectedEOF},
	)

	// Limits.
	cs = append(cs,
		readCase{name: "MaxHello", in: wire(body), lim: Limits{MaxHello: len(body) - 1}, err: ErrTooLarge, field: "handshake length"},
		readCase{name: "MaxRecords", in: records(ok, 10), lim: Limits{MaxRecords: len(ok)/10 - 1}, err: ErrTooLarge, field: "records"},
		readCase{name: "MaxBytes hello in one record", in: wire(body), lim: Limits{MaxBytes: len(wire(body)) - 1}, err: ErrTooLarge, field: "handshake length"},
		readCase{name: "MaxBytes hello in records", in: records(ok, 10), lim: Limits{MaxBytes: len(ok) + 4 + 5}, err: ErrTooLarge, field: "handshake length"},
		readCase{name: "MaxBytes record headers", in: records(ok, 10), lim: Limits{MaxBytes: len(ok) + 30}, err: ErrTooLarge, field: "input"},
	)
	return cs
}

// readers are the ways a case's bytes arrive.
var readers = []struct {
	name string
	wrap func(io.Reader) io.Reader
}{
	{"whole", func(r io.Reader) io.Reader { return r }},
	{"bytewise", iotest.OneByteReader},
	{"halves", iotest.HalfReader},
	{"eof with data", iotest.DataErrReader},
}

func TestRead(t *testing.T) {
	for _, c := range slices.Concat(validCases(), invalidCases()) {
		for _, rd := range readers {
			t.Run(c.name+"/"+rd.name, func(t *testing.T) {
				checkCase(t, c, rd.wrap(bytes.NewReader(c.in)), rd.name == "bytewise")
			})
		}
	}
}

// checkCase reads c from r. When exact, r gives one byte a read, and
// Read must stop right at the hello's end.
func checkCase(t *testing.T, c readCase, r io.Reader, exact bool) {
	t.Helper()
	h, got, err := Read(r, make([]byte, 0, 7), c.lim)
	if !bytes.HasPrefix(c.in, got) {
		t.Fatalf("the bytes returned are not what was read:\n got %x\nfrom %x", got, c.in)
	}
	if lim := c.lim.withDefaults(); len(got) > lim.MaxBytes {
		t.Errorf("read %d bytes, more than MaxBytes %d", len(got), lim.MaxBytes)
	}
	if c.err != nil {
		if !errors.Is(err, c.err) {
			t.Fatalf("err = %v, want %v", err, c.err)
		}
		var fe *formatError
		if errors.As(err, &fe) && fe.field != c.field {
			t.Errorf("err = %v: field %q, want %q", err, fe.field, c.field)
		}
		return
	}
	if err != nil {
		t.Fatalf("err = %v", err)
	}
	if h.ServerName != c.want.ServerName || !slices.Equal(h.ALPN, c.want.ALPN) || (h.ALPN == nil) != (c.want.ALPN == nil) {
		t.Errorf("got %+v, want %+v", h, c.want)
	}
	end := c.end
	if end == 0 {
		end = len(c.in)
	}
	if len(got) < end {
		t.Errorf("returned %d bytes, but the hello ends at %d", len(got), end)
	}
	if exact && len(got) != end {
		t.Errorf("read one byte at a time: returned %d bytes, the hello ends at %d", len(got), end)
	}
}

// TestNotTLSFromFirstByte: a client that is not speaking TLS is told
// apart from its first byte or two, without waiting for more.
func TestNotTLSFromFirstByte(t *testing.T) {
	for _, first := range [][]byte{[]byte("G"), []byte("P"), {0x80}, {0}, {22, 'E'}} {
		r := io.MultiReader(bytes.NewReader(first), blockingReader{t})
		_, got, err := Read(iotest.OneByteReader(r), nil, Limits{})
		if !errors.Is(err, ErrNotTLS) || !bytes.Equal(got, first) {
			t.Errorf("%q: err = %v, read %q", first, err, got)
		}
	}
	// So is a record of another type, from its first byte.
	_, _, err := Read(io.MultiReader(bytes.NewReader([]byte{typeAlert}), blockingReader{t}), nil, Limits{})
	if !errors.Is(err, ErrMalformed) {
		t.Errorf("alert: err = %v", err)
	}
	// And a handshake message of another type.
	_, _, err = Read(io.MultiReader(bytes.NewReader([]byte{22, 3, 1, 0, 50, 2}), blockingReader{t}), nil, Limits{})
	if !errors.Is(err, ErrMalformed) {
		t.Errorf("server_hello: err = %v", err)
	}
}

// blockingReader fails the test if it is read: a client that sent its
// first bytes and waits.
type blockingReader struct{ t *testing.T }

func (b blockingReader) Read([]byte) (int, error) {
	b.t.Error("Read waited for more bytes than it needed")
	return 0, io.ErrClosedPipe
}

// TestReadBuffer: Read reads into the buffer it is given, from its start,
// and grows it only when the hello does not fit.
func TestReadBuffer(t *testing.T) {
	in := wire(fields(sniExt(hostName("buf.example")), alpnExt("h2")).body())
	buf := make([]byte, 3, 4096)
	_, got, err := Read(bytes.NewReader(in), buf, Limits{})
	if err != nil || &got[0] != &buf[:1][0] || !bytes.Equal(got, in) {
		t.Fatalf("err = %v, the bytes are not read into the buffer given", err)
	}
	small := make([]byte, 0, 8)
	_, got, err = Read(bytes.NewReader(in), small, Limits{})
	if err != nil || !bytes.Equal(got, in) {
		t.Fatalf("err = %v, got %x", err, got)
	}
	_, got, err = Read(bytes.NewReader(in), nil, Limits{})
	if err != nil || !bytes.Equal(got, in) {
		t.Fatalf("nil buffer: err = %v, got %x", err, got)
	}
}

// TestErrorMessages: errors name the field at fault and say what is
// wrong with it.
func TestErrorMessages(t *testing.T) {
	for in, want := range map[string]string{
		"GET /":                        "sni: not TLS: record type: 0x47 is no TLS content type",
		"\x15\x03\x01\x00\x02\x01\x00": "sni: malformed ClientHello: record type: alert record before the ClientHello",
		"\x16\x03\x01\x40\x01":         "sni: ClientHello too large: record length: 16385, more than 2^14",
		"\x16\x03\x00\x00\x05":         "sni: malformed ClientHello: record version: 0x0300, want 0x0301 to 0x0303",
		string(wire(cat(fields().body()[:34], v8(make([]byte, 33))))): "sni: malformed ClientHello: legacy_session_id: 33 bytes, more than 32",
	} {
		_, _, err := Read(strings.NewReader(in), nil, Limits{})
		if err == nil || err.Error() != want {
			t.Errorf("%q: err = %v, want %s", in, err, want)
		}
	}
}

// TestNoProgress: a reader that returns nothing, again and again, is
// given up on.
func TestNoProgress(t *testing.T) {
	_, _, err := Read(iotest.OneByteReader(io.MultiReader(bytes.NewReader([]byte{22, 3}), emptyReader{})), nil, Limits{})
	if !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("err = %v", err)
	}
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }
