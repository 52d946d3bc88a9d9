package httpsyntax

import (
	"strings"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"identity"}, false},
		{[]string{"gzip"}, true},
		{[]string{"GZIP"}, true},
		{[]string{"x-gzip"}, true},
		{[]string{"deflate, gzip;q=1.0, *;q=0.5"}, true},
		{[]string{"br", "gzip"}, true}, // several fields are one list (RFC 9110 §5.3)
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0.000"}, false},
		{[]string{"gzip;Q=0.001"}, true},
		{[]string{"gzip;q=nonsense"}, false},
		{[]string{"gzip;q=2"}, false},
		{[]string{"*"}, true},
		{[]string{"*;q=0"}, false},
		{[]string{"gzip;q=0, *"}, false}, // gzip named: the star does not cover it
		{[]string{"br;q=1, identity;q=0.5"}, false},
	} {
		if got := AcceptsGzip(c.values); got != c.want {
			t.Errorf("AcceptsGzip(%q) = %v, want %v", c.values, got, c.want)
		}
	}
}

// FuzzAcceptsGzip reads arbitrary Accept-Encoding values. Whatever they
// are, it answers (never panics), and the answer is the same whether the
// list comes in one field or one field per element (RFC 9110 §5.3: a
// repeated field is one comma-separated list).
func FuzzAcceptsGzip(f *testing.F) {
	for _, s := range []string{"", "gzip", "x-gzip;q=0.5", "deflate, gzip;q=1.0, *;q=0.5", "gzip;q=0, *", "*;q=0", "gzip;q=nonsense", "br;q=1, identity;q=0.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		one := AcceptsGzip([]string{v})
		if split := AcceptsGzip(strings.Split(v, ",")); split != one {
			t.Fatalf("%q: %v as one field, %v as one field per element", v, one, split)
		}
	})
}
