package httpsyntax

import "testing"

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
