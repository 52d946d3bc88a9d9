package sessionkeys

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"testing"
)

func TestPlaneKeys(t *testing.T) {
	keys := [][]byte{keyB, keyA}
	a := PlaneKeys(keys, "ns/a")
	if len(a) != len(keys) {
		t.Fatalf("%d keys derived from %d", len(a), len(keys))
	}
	if again := PlaneKeys(keys, "ns/a"); !equalKeys(a, again) {
		t.Error("not deterministic: another replica would sign with other keys")
	}
	// The definition, spelled out: what every replica must agree on.
	m := hmac.New(sha256.New, keyB)
	m.Write([]byte("tunnelgate session key\x00ns/a"))
	if want := m.Sum(nil); !bytes.Equal(a[0], want) {
		t.Errorf("first key %x, want HMAC-SHA256(current, label+plane) = %x", a[0], want)
	}
	for i, k := range a {
		if len(k) != sha256.Size {
			t.Errorf("key %d: %d bytes, want %d", i, len(k), sha256.Size)
		}
		for j, in := range keys {
			if bytes.Equal(k, in) {
				t.Errorf("derived key %d is input key %d", i, j)
			}
		}
	}
	if bytes.Equal(a[0], a[1]) {
		t.Error("two input keys gave one derived key")
	}
	// Order kept: the signing key's derivation stays first, so a
	// rotation (B, A) -> (C, B) keeps B's derived key, now second.
	if swapped := PlaneKeys([][]byte{keyA, keyB}, "ns/a"); !bytes.Equal(swapped[0], a[1]) || !bytes.Equal(swapped[1], a[0]) {
		t.Error("the derived keys do not follow the order of the input keys")
	}
	for _, other := range []string{"ns/b", "ns/a ", "ns", ""} {
		b := PlaneKeys(keys, other)
		for i := range a {
			if bytes.Equal(a[i], b[i]) {
				t.Errorf("planes %q and %q share key %d", "ns/a", other, i)
			}
		}
	}
	if got := PlaneKeys(nil, "ns/a"); len(got) != 0 {
		t.Errorf("no keys gave %d", len(got))
	}
}

func equalKeys(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
