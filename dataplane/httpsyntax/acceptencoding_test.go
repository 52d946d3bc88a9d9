package httpsyntax

import "testing"

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
