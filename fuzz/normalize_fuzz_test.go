package fuzz

import (
	"net/url"
	"strings"
	"testing"
	"unsafe"

	"github.com/tunnelgate/tunnelgate/matcher"
)

// rfcRemoveDotSegments is RFC 3986 §5.2.4 step by step.
func rfcRemoveDotSegments(in string) string {
	removeLast := func(out string) string {
		if i := strings.LastIndexByte(out, '/'); i >= 0 {
			return out[:i]
		}
		return ""
	}
	var out string
	for in != "" {
		switch {
		case strings.HasPrefix(in, "../"): // A
			in = in[3:]
		case strings.HasPrefix(in, "./"): // A
			in = in[2:]
		case strings.HasPrefix(in, "/./"): // B
			in = in[2:]
		case in == "/.": // B
			in = "/"
		case strings.HasPrefix(in, "/../"): // C
			in = in[3:]
			out = removeLast(out)
		case in == "/..": // C
			in = "/"
			out = removeLast(out)
		case in == "." || in == "..": // D
			in = ""
		default: // E: move the first segment, with its leading "/", to out
			j := strings.IndexByte(in[1:], '/') + 1
			if j == 0 {
				j = len(in)
			}
			out += in[:j]
			in = in[j:]
		}
	}
	return out
}

// mergeSlashes replaces each run of '/' with one.
func mergeSlashes(s string) string {
	for strings.Contains(s, "//") {
		s = strings.ReplaceAll(s, "//", "/")
	}
	return s
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isUpperHex(c byte) bool {
	return '0' <= c && c <= '9' || 'A' <= c && c <= 'F'
}

func isUnreservedByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0
}

// isPathLiteral: the bytes NormalizePath leaves literal.
func isPathLiteral(c byte) bool {
	return isUnreservedByte(c) || strings.IndexByte("!$&'()*+,;=:@/", c) >= 0
}

func unhexByte(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// checkCanonical requires every byte of s to be a path literal or the start
// of a %XX escape with upper-case hex that does not encode an unreserved
// byte.
func checkCanonical(t *testing.T, in, s string) {
	t.Helper()
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			if !isPathLiteral(c) {
				t.Fatalf("NormalizePath(%q) = %q: byte %q at %d should be escaped", in, s, c, i)
			}
			continue
		}
		if i+2 >= len(s) || !isUpperHex(s[i+1]) || !isUpperHex(s[i+2]) {
			t.Fatalf("NormalizePath(%q) = %q: %% at %d not followed by two upper-case hex digits", in, s, i)
		}
		if b := unhexByte(s[i+1])<<4 | unhexByte(s[i+2]); isUnreservedByte(b) {
			t.Fatalf("NormalizePath(%q) = %q: escape of unreserved %q at %d", in, s, b, i)
		}
		i += 2
	}
}

// hasStrayPercent reports a '%' not followed by two hex digits.
func hasStrayPercent(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && (i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2])) {
			return true
		}
	}
	return false
}

func FuzzNormalizePath(f *testing.F) {
	f.Add("/")
	f.Fuzz(func(t *testing.T, p string) {
		n := matcher.NormalizePath(p)
		if nn := matcher.NormalizePath(n); nn != n {
			t.Fatalf("not idempotent: NormalizePath(%q) = %q, again %q", p, n, nn)
		}
		if strings.HasPrefix(p, "/") && !strings.HasPrefix(n, "/") {
			t.Fatalf("NormalizePath(%q) = %q loses the leading slash", p, n)
		}
		if p == "" && n != "/" {
			t.Fatalf(`NormalizePath("") = %q, want "/"`, n)
		}
		if n == "" {
			t.Fatalf("NormalizePath(%q) is empty", p)
		}
		checkCanonical(t, p, n)
		// Nothing changed: p itself comes back, not a copy.
		if n == p && p != "" && unsafe.StringData(n) != unsafe.StringData(p) {
			t.Fatalf("NormalizePath(%q) returned an equal copy instead of its argument", p)
		}
		if strings.Contains(n, "//") {
			t.Fatalf("NormalizePath(%q) = %q keeps repeated slashes", p, n)
		}
		// Escaping is only a change of spelling: decoding the result gives
		// the decoded input with its slashes merged, then dot segments
		// removed. Exact when the input has no
		// escaped slash (which would become a separator once decoded) and
		// no stray '%' (which PathUnescape rejects).
		in := p
		if in == "" {
			in = "/"
		}
		if !hasStrayPercent(in) && !strings.Contains(strings.ToUpper(in), "%2F") {
			du, err := url.PathUnescape(in)
			if err != nil {
				t.Fatalf("PathUnescape(%q): %v", in, err)
			}
			dn, err := url.PathUnescape(n)
			if err != nil {
				t.Fatalf("PathUnescape(NormalizePath(%q) = %q): %v", p, n, err)
			}
			want := rfcRemoveDotSegments(mergeSlashes(du))
			if want == "" {
				// Only relative inputs ("." or "a/..") lose every byte;
				// NormalizePath never returns "" and gives "/" instead.
				want = "/"
			}
			if dn != want {
				t.Fatalf("NormalizePath(%q) = %q decodes to %q, want remove_dot_segments(%q) = %q", p, n, dn, du, want)
			}
		}
	})
}

func TestRFCRemoveDotSegments(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// RFC 3986 §5.2.4 examples.
		{"/a/b/c/./../../g", "/a/g"},
		{"mid/content=5/../6", "mid/6"},
		{"", ""},
		{"/", "/"},
		{"/..", "/"},
		{"/../a", "/a"},
		{"/a/..", "/"},
		{"/a/.", "/a/"},
		{"/a//../b", "/a/b"},
		{"../a", "a"},
		{"./a", "a"},
		{".", ""},
		{"/a/b/..", "/a/"},
		{"/.a/..b/", "/.a/..b/"},
	} {
		if got := rfcRemoveDotSegments(c.in); got != c.want {
			t.Errorf("rfcRemoveDotSegments(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestNormalizePathExamples(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "/"},
		{"/", "/"},
		{"/%7euser", "/~user"},
		{"/%7Euser", "/~user"},
		{"/%61", "/a"},
		{"/a%2fb", "/a%2Fb"},
		{"/a%2Fb", "/a%2Fb"},
		{"/a%3f", "/a%3F"},
		{"/a%", "/a%25"},
		{"/a%2", "/a%252"},
		{"/a%zz", "/a%25zz"},
		{"/a b", "/a%20b"},
		{"/a?b", "/a%3Fb"},
		{"/a#b", "/a%23b"},
		{"/\xff", "/%FF"},
		{"/a/./b", "/a/b"},
		{"/a/../b", "/b"},
		{"/a/%2E%2E/b", "/b"},
		{"/a/%2e/b", "/a/b"},
		{"/../a", "/a"},
		{"/a//b", "/a/b"},
		{"//admin/secret", "/admin/secret"},
		{"/a//../b", "/b"},
		{"/a/b/..", "/a/"},
		{"/!$&'()*+,;=:@", "/!$&'()*+,;=:@"},
	} {
		if got := matcher.NormalizePath(c.in); got != c.want {
			t.Errorf("NormalizePath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
