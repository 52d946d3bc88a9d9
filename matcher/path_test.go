package matcher

import "testing"

func TestNormalizePath(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "/",
		"/":                 "/",
		"/a/b":              "/a/b",
		"/a//b/":            "/a/b/",
		"//a":               "/a",
		"///":               "/",
		"/a//../b":          "/b",
		"/a/..//b":          "/b",
		"//./a":             "/a",
		"/a%2F%2Fb":         "/a%2F%2Fb",
		"/%7euser":          "/~user",
		"/%7Euser":          "/~user",
		"/%41%42%63":        "/ABc",
		"/a%2fb":            "/a%2Fb",
		"/a%2Fb":            "/a%2Fb",
		"/caf%c3%a9":        "/caf%C3%A9",
		"/café":             "/caf%C3%A9",
		"/a b":              "/a%20b",
		"/100%":             "/100%25",
		"/%zz":              "/%25zz",
		"/%4":               "/%254",
		"/a\\b":             "/a%5Cb",
		"/a/./b":            "/a/b",
		"/a/../b":           "/b",
		"/a/b/..":           "/a/",
		"/a/b/.":            "/a/b/",
		"/../a":             "/a",
		"/..":               "/",
		"/.":                "/",
		"/a/%2e%2E/b":       "/b",
		"/a/%2e/b":          "/a/b",
		"/a/.%2e/b":         "/b",
		"/a/...":            "/a/...",
		"/a/.b":             "/a/.b",
		"/a/..b/c":          "/a/..b/c",
		"/!$&'()*+,;=:@-._": "/!$&'()*+,;=:@-._",
		".":                 "/",
	} {
		if got := NormalizePath(in); got != want {
			t.Errorf("NormalizePath(%q) = %q, want %q", in, got, want)
		}
		if again := NormalizePath(want); again != want {
			t.Errorf("NormalizePath(%q) = %q: not idempotent", want, again)
		}
	}
}
