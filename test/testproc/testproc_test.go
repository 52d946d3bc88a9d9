package testproc

import "testing"

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
