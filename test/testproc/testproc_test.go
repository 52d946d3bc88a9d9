package testproc

import (
	"strings"
	"testing"
)

// FreePort hands out a port once per process, however often the kernel
// offers it again.
func TestFreePortNeverTwice(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}

// PrefixWriter prefixes whole lines only, holding a partial line until
// its newline arrives.
func TestPrefixWriter(t *testing.T) {
	var out strings.Builder
	w := PrefixWriter("etcd: ", &out)
	for _, s := range []string{"one\ntw", "o\n", "three"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got, want := out.String(), "etcd: one\netcd: two\n"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}
