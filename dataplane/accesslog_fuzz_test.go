package dataplane

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
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
