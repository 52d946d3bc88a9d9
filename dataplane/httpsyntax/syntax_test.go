package httpsyntax

import (
	"strings"
	"testing"
)

func TestHostWithoutPort(t *testing.T) {
	cases := map[string]string{
		"example.org":      "example.org",
		"example.org:8080": "example.org",
		"example.org:":     "example.org",
		"[::1]:8080":       "[::1]",
		"[::1]":            "[::1]",
		"[::1":             "[::1",
		"::1":              "::1",
		"2001:db8::1":      "2001:db8::1",
		"10.0.0.1:80":      "10.0.0.1",
		"":                 "",
	}
	for in, want := range cases {
		if got := HostWithoutPort(in); got != want {
			t.Errorf("HostWithoutPort(%q) = %q, want %q", in, got, want)
		}
	}
}

// validFieldValueBytewise is RFC 9110 §5.5's rule for a field value as
// plainly as it can be written: ValidFieldValue must agree with it.
func validFieldValueBytewise(b []byte) bool {
	for _, c := range b {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// Every byte value, alone and at each place of the first and second
// word of a longer value, is judged as byte by byte.
func TestValidFieldValueEveryByteEveryPlace(t *testing.T) {
	for c := range 256 {
		for _, n := range []int{1, 7, 8, 9, 16, 23} {
			for at := range n {
				b := []byte(strings.Repeat("a", n))
				b[at] = byte(c)
				want := validFieldValueBytewise(b)
				if got := ValidFieldValue(b); got != want {
					t.Fatalf("ValidFieldValue(%q) = %v, want %v", b, got, want)
				}
				if got := ValidFieldValue(string(b)); got != want {
					t.Fatalf("ValidFieldValue(string %q) = %v, want %v", b, got, want)
				}
			}
		}
	}
	// A tab early leaves the rest to the bytewise check, which must
	// still find a bad byte far after it.
	if ValidFieldValue("\t" + strings.Repeat("x", 40) + "\n") {
		t.Fatal("a newline after a tab passed")
	}
	if !ValidFieldValue("a\tb" + strings.Repeat("\x80\xff ~", 10)) {
		t.Fatal("tabs and obs-text were refused")
	}
}

func FuzzValidFieldValue(f *testing.F) {
	for _, s := range []string{"", "text/html", "a\tb", "a\r\nb", "\x7f", strings.Repeat("ab\x80", 9) + "\x00", strings.Repeat("Mozilla/5.0 ", 9)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := validFieldValueBytewise(b)
		if got := ValidFieldValue(b); got != want {
			t.Fatalf("ValidFieldValue(%q) = %v, want %v", b, got, want)
		}
		if got := ValidFieldValue(string(b)); got != want {
			t.Fatalf("ValidFieldValue(string %q) = %v, want %v", b, got, want)
		}
	})
}

// A browser's User-Agent, the longest of the values a proxy checks on
// most requests.
func BenchmarkValidFieldValue(b *testing.B) {
	v := []byte("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36")
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		if !ValidFieldValue(v) {
			b.Fatal("refused")
		}
	}
}
