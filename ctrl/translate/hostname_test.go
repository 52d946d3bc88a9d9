package translate

import "testing"

func TestValidHostname(t *testing.T) {
	for h, want := range map[string]bool{
		"example.com": true, "a.b-c.example.com": true, "*.example.com": true, "localhost": true,
		"EXAMPLE.com": true, "x1.example": true,
		"": false, "*": false, "*.": false, "a..b": false, ".a": false, "a.": false, "-a.com": false,
		"a-.com": false, "a_b.com": false, "10.0.0.1": false, "*.*.example.com": false,
		"foo.*.com": false, "a b": false, "ex:80": false,
	} {
		if got := validHostname(h); got != want {
			t.Errorf("validHostname(%q) = %v, want %v", h, got, want)
		}
	}
}

func TestIntersectHost(t *testing.T) {
	for _, c := range []struct {
		a, b, want string
		ok         bool
	}{
		{"foo.example.com", "foo.example.com", "foo.example.com", true},
		{"*.example.com", "foo.example.com", "foo.example.com", true},
		{"foo.example.com", "*.example.com", "foo.example.com", true},
		{"*.example.com", "a.b.example.com", "a.b.example.com", true},
		{"*.example.com", "*.a.example.com", "*.a.example.com", true},
		{"*.a.example.com", "*.example.com", "*.a.example.com", true},
		{"*.example.com", "example.com", "", false},
		{"*.example.com", "fooexample.com", "", false},
		{"foo.example.com", "bar.example.com", "", false},
		{"*.example.com", "*.example.org", "", false},
	} {
		got, ok := intersectHost(c.a, c.b)
		if got != c.want || ok != c.ok {
			t.Errorf("intersectHost(%q, %q) = %q, %v; want %q, %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for s, want := range map[string]string{"1h": "1h0m0s", "1h30m": "1h30m0s", "500ms": "500ms", "10s": "10s", "0s": "0s", "1h2m3s4ms": "1h2m3.004s"} {
		d, err := parseDuration(s)
		if err != nil || d.String() != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %s", s, d, err, want)
		}
	}
	for _, s := range []string{"", "1", "h", "1d", "123456s", "1h1m1s1ms1h", "1.5s", "-1s", "1 s", "1us"} {
		if _, err := parseDuration(s); err == nil {
			t.Errorf("parseDuration(%q) succeeded", s)
		}
	}
}
