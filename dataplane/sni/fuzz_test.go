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
			// crypto/tls refused what Read took: not for the fields Read returns.
			back := reference(canonical(h))
			if !back.parsed || back.serverName != h.ServerName || !slices.Equal(back.alpn, h.ALPN) {
				t.Fatalf("Read took %+v, which crypto/tls refuses: %v", h, back.err)
			}
		}
	})
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
