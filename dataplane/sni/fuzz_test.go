// This file implements FuzzRead: Read against crypto/tls's server on the
// same bytes, and Read's own invariants.

package sni

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"testing/iotest"
)

// FuzzRead holds Read to crypto/tls. When crypto/tls parses a ClientHello
// from the input, Read must take it too, with the same server name and
// protocols, unless it refuses it for one of the reasons it is stricter
// by design (stricter). When Read takes an input crypto/tls refuses, the
// name and protocols it returned must still be ones crypto/tls takes: it
// may skip checks inside other extensions, never the ones on the fields
// it returns. Read must also give the same answer however the bytes
// arrive, and return only bytes it was given.
func FuzzRead(f *testing.F) {
	for _, c := range slices.Concat(validCases(), invalidCases()) {
		f.Add(c.in)
	}
	for _, c := range goClients(f) {
		f.Add(captureGo(f, c.cfg))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		h, got, err := Read(bytes.NewReader(in), nil, refLimits)
		if !bytes.HasPrefix(in, got) {
			t.Fatalf("returned bytes that were not read")
		}
		switch {
		case err == nil, errors.Is(err, ErrNotTLS), errors.Is(err, ErrTooLarge), errors.Is(err, ErrMalformed),
			err == io.EOF, errors.Is(err, io.ErrUnexpectedEOF):
		default:
			t.Fatalf("unexpected error %v", err)
		}

		// However the bytes arrive, the answer is the same.
		h1, got1, err1 := Read(iotest.OneByteReader(bytes.NewReader(in)), make([]byte, 0, 1), refLimits)
		if !sameResult(h, err, h1, err1) || !bytes.HasPrefix(got, got1) {
			t.Fatalf("whole: %+v, %v; bytewise: %+v, %v", h, err, h1, err1)
		}
		// With the default limits, the answer is the same or ErrTooLarge.
		h2, got2, err2 := Read(bytes.NewReader(in), nil, Limits{})
		if !sameResult(h, err, h2, err2) && !errors.Is(err2, ErrTooLarge) {
			t.Fatalf("refLimits: %+v, %v; default limits: %+v, %v", h, err, h2, err2)
		}
		if len(got2) > (Limits{}).withDefaults().MaxBytes {
			t.Fatalf("read %d bytes, past MaxBytes", len(got2))
		}

		ref := reference(in)
		switch {
		case ref.parsed && err != nil:
			if !stricter(err) {
				t.Fatalf("crypto/tls parsed the hello (%q, %q), Read refused it: %v", ref.serverName, ref.alpn, err)
			}
		case ref.parsed:
			if h.ServerName != ref.serverName || !slices.Equal(h.ALPN, ref.alpn) {
				t.Fatalf("Read: %q %q, crypto/tls: %q %q", h.ServerName, h.ALPN, ref.serverName, ref.alpn)
			}
		case err == nil:
			// crypto/tls refused what Read took: not for anything Read
			// checks, only for the contents of other extensions.
			back := reference(strip(t, got))
			if !back.parsed || back.serverName != h.ServerName || !slices.Equal(back.alpn, h.ALPN) {
				t.Fatalf("Read took %+v, which crypto/tls refuses without other extensions' contents: %v", h, back.err)
			}
		}
	})
}

// strip reassembles the hello Read took from the bytes it returned, and
// returns it in one record with the contents of every extension but
// server_name and ALPN left out, each of their types renamed to one
// crypto/tls does not know (so that a repeated type stays repeated). It is
// test code of its own, trusting the hello's framing only because Read
// took it.
func strip(t *testing.T, replay []byte) []byte {
	var hs []byte
	for len(replay) >= 5 {
		n := min(int(replay[3])<<8|int(replay[4]), len(replay)-5)
		hs = append(hs, replay[5:5+n]...)
		replay = replay[5+n:]
	}
	if len(hs) < 4 {
		t.Fatalf("Read took a hello of %d bytes", len(hs))
	}
	body := hs[4 : 4+(int(hs[1])<<16|int(hs[2])<<8|int(hs[3]))]
	off := 2 + 32
	off += 1 + int(body[off])
	off += 2 + (int(body[off])<<8 | int(body[off+1]))
	off += 1 + int(body[off])
	if off == len(body) {
		return wire(body)
	}
	exts, kept := body[off+2:], [][]byte{}
	renamed := map[int]int{}
	for len(exts) > 0 {
		typ, n := int(exts[0])<<8|int(exts[1]), int(exts[2])<<8|int(exts[3])
		data := exts[4 : 4+n]
		exts = exts[4+n:]
		switch typ {
		case extServerName, extALPN:
			kept = append(kept, ext(typ, data))
		default:
			if _, ok := renamed[typ]; !ok {
				renamed[typ] = 0x1000 + len(renamed)
			}
			kept = append(kept, ext(renamed[typ]))
		}
	}
	return wire(cat(body[:off], v16(kept...)))
}

// sameResult reports whether two Reads returned the same hello, or
// errors of the same kind.
func sameResult(h1 Hello, err1 error, h2 Hello, err2 error) bool {
	if err1 != nil || err2 != nil {
		return errKind(err1) == errKind(err2)
	}
	return h1.ServerName == h2.ServerName && slices.Equal(h1.ALPN, h2.ALPN)
}

func errKind(err error) error {
	for _, k := range []error{ErrNotTLS, ErrTooLarge, ErrMalformed, io.ErrUnexpectedEOF} {
		if errors.Is(err, k) {
			return k
		}
	}
	return err
}
