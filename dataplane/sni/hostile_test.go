// This file implements the tests of hostile clients: lengths meant to
// make Read hold or wait for more than it should, records by the
// thousand, input that never ends.

package sni

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"
)

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += n
	return n, err
}

// endless repeats pattern forever.
type endless struct {
	pattern []byte
	off     int
}

func (e *endless) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = e.pattern[e.off]
		e.off = (e.off + 1) % len(e.pattern)
	}
	return len(b), nil
}

// TestHostileRecordLength: a record of 16385 bytes is refused from its
// header, before its payload is read.
func TestHostileRecordLength(t *testing.T) {
	r := &countingReader{r: io.MultiReader(bytes.NewReader([]byte{22, 3, 1, 0x40, 0x01}), &endless{pattern: []byte{1}})}
	_, got, err := Read(r, make([]byte, 0, 5), Limits{})
	if !errors.Is(err, ErrTooLarge) || len(got) != 5 {
		t.Fatalf("err = %v after %d bytes", err, len(got))
	}
}

// TestHostileHelloLength: a hello declaring 16 MiB is refused from its
// length, without a buffer of that size.
func TestHostileHelloLength(t *testing.T) {
	head := []byte{22, 3, 1, 0x40, 0x00, 1, 0xff, 0xff, 0xff}
	buf := make([]byte, 0, 64)
	_, got, err := Read(io.MultiReader(bytes.NewReader(head), &endless{pattern: []byte{0}}), buf, Limits{})
	if !errors.Is(err, ErrTooLarge) || len(got) != 9 || cap(got) != cap(buf) {
		t.Fatalf("err = %v after %d bytes, buffer of %d", err, len(got), cap(got))
	}
	// Raising MaxHello does not raise MaxBytes past what was asked.
	_, got, err = Read(io.MultiReader(bytes.NewReader(head), &endless{pattern: []byte{0}}), nil, Limits{MaxHello: 1 << 24, MaxBytes: 64 << 10})
	if !errors.Is(err, ErrTooLarge) || len(got) != 9 {
		t.Fatalf("MaxHello 16 MiB, MaxBytes 64 KiB: err = %v after %d bytes", err, len(got))
	}
}

// TestHostileTinyRecords: 10,000 one-byte handshake records are refused
// at the 65th record by default; with the limit raised, a hello of
// 10,000 bytes sent that way is reassembled, in time linear in its size.
func TestHostileTinyRecords(t *testing.T) {
	f := fields(sniExt(hostName("tiny.example")), ext(21, make([]byte, 10000-4-81-4-17)))
	msg := handshake(f.body())
	if len(msg) != 10000 {
		t.Fatalf("the hello is %d bytes, want 10000", len(msg))
	}
	in := records(msg, 1)

	r := &countingReader{r: bytes.NewReader(in)}
	_, got, err := Read(r, nil, Limits{})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("default limits: err = %v", err)
	}
	if len(got) > (Limits{}).withDefaults().MaxBytes {
		t.Errorf("read %d bytes, past MaxBytes", len(got))
	}

	start := time.Now()
	h, got, err := Read(bytes.NewReader(in), nil, Limits{MaxRecords: 10000, MaxBytes: len(in)})
	if err != nil || h.ServerName != "tiny.example" || !bytes.Equal(got, in) {
		t.Fatalf("MaxRecords 10000: %+v, %v", h, err)
	}
	t.Logf("10,000 one-byte records read in %v", time.Since(start))
	_, _, err = Read(bytes.NewReader(in), nil, Limits{MaxRecords: 9999, MaxBytes: len(in)})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("MaxRecords 9999: err = %v", err)
	}
}

// TestHostileEndless: input that never ends is read no further than
// MaxBytes, whatever its shape.
func TestHostileEndless(t *testing.T) {
	hello16k := cat([]byte{1}, u24(16384))
	for _, c := range []struct {
		name string
		r    io.Reader
		lim  Limits
	}{
		{"one-byte records", &endless{pattern: []byte{22, 3, 1, 0, 1, 1}}, Limits{}},
		{"one-byte records, records unbounded", &endless{pattern: []byte{22, 3, 1, 0, 1, 1}}, Limits{MaxRecords: 1 << 30}},
		{"small MaxBytes", io.MultiReader(bytes.NewReader(record(typeHandshake, 0x0301, hello16k)[:9]), &endless{pattern: []byte{0}}), Limits{MaxBytes: 1000}},
		{"records of a big hello", io.MultiReader(bytes.NewReader(record(typeHandshake, 0x0301, hello16k)), &endless{pattern: []byte{22, 3, 3, 0, 1, 0}}),
			Limits{MaxRecords: 1 << 20, MaxBytes: 20000}},
	} {
		r := &countingReader{r: c.r}
		_, got, err := Read(r, nil, c.lim)
		max := c.lim.withDefaults().MaxBytes
		if !errors.Is(err, ErrTooLarge) || r.n > max || len(got) != r.n {
			t.Errorf("%s: err = %v after %d bytes (MaxBytes %d)", c.name, err, r.n, max)
		}
	}
}

// TestHostileManyExtensions: thousands of extensions are checked for
// duplicates in linear time.
func TestHostileManyExtensions(t *testing.T) {
	var exts [][]byte
	for i := range 4000 {
		exts = append(exts, ext(0x100+i))
	}
	in := wire(fields(exts...).body())
	start := time.Now()
	_, _, err := Read(bytes.NewReader(in), nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	dup := wire(fields(append(exts, ext(0x100+3999))...).body())
	if _, _, err := Read(bytes.NewReader(dup), nil, Limits{}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("duplicate: err = %v", err)
	}
	t.Logf("4,000 extensions in %v", time.Since(start))
}

// TestHostileNotTLS: an SSLv2-compatible hello and an HTTP request are
// ErrNotTLS.
func TestHostileNotTLS(t *testing.T) {
	for _, in := range [][]byte{
		// An SSLv2-compatible CLIENT-HELLO (RFC 5246 appendix E.2) for TLS 1.0.
		cat([]byte{0x80, 0x2e, 0x01, 0x03, 0x01, 0x00, 0x15, 0x00, 0x00, 0x00, 0x10}, make([]byte, 0x15+0x10)),
		[]byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"),
		[]byte("CONNECT example.com:443 HTTP/1.1\r\n\r\n"),
	} {
		_, _, err := Read(bytes.NewReader(in), nil, Limits{})
		if !errors.Is(err, ErrNotTLS) {
			t.Errorf("%q: err = %v", in[:8], err)
		}
	}
}
