package compiled

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// Robustness and property targets for the pure route-filter helpers of
// this package: replacePrefix (URLRewrite and RequestRedirect path
// modifiers), redirectLocation and originMatches (HTTPCORSFilter).

// ---- FuzzReplacePrefix ----

func trimSlashesRight(s string) string {
	return strings.TrimRight(s, "/")
}

// underPrefix reports whether path is under the PathPrefix value prefix,
// element by element and ignoring the prefix's trailing slashes.
func underPrefix(path, prefix string) bool {
	p := trimSlashesRight(prefix)
	return path == p || strings.HasPrefix(path, p+"/")
}

func FuzzReplacePrefix(f *testing.F) {
	for _, s := range [][3]string{
		{"/foo/bar", "/foo", "/xyz"},
		{"/foo", "/foo/", "/xyz/"},
		{"/foo/", "/foo", ""},
		{"/", "/", "/"},
		{"/foobar", "/foo", "/x"},
		{"/a//b", "/a", "/"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, path, prefix, repl string) {
		got := replacePrefix(path, prefix, repl) // must not panic, whatever the input
		if !strings.HasPrefix(path, "/") || !strings.HasPrefix(prefix, "/") || (repl != "" && !strings.HasPrefix(repl, "/")) {
			return // outside the documented domain
		}
		if got == "" || got[0] != '/' {
			t.Fatalf("replacePrefix(%q, %q, %q) = %q: not an absolute path", path, prefix, repl, got)
		}
		// Replacing a prefix by itself (trailing slashes aside) is the identity.
		if id := replacePrefix(path, prefix, prefix+"/"); id != path {
			t.Fatalf("replacePrefix(%q, %q, %q) = %q, want the path unchanged", path, prefix, prefix+"/", id)
		}
		if !underPrefix(path, prefix) {
			if got != path {
				t.Fatalf("replacePrefix(%q, %q, %q) = %q, but the path is not under the prefix and must be unchanged", path, prefix, repl, got)
			}
			return
		}
		p, r := trimSlashesRight(prefix), trimSlashesRight(repl)
		rest := path[len(p):]
		// The result is the trimmed replacement, then the rest of the path.
		if !strings.HasPrefix(got, r) {
			t.Fatalf("replacePrefix(%q, %q, %q) = %q does not begin with the replacement %q", path, prefix, repl, got, r)
		}
		if !strings.HasSuffix(got, rest) {
			t.Fatalf("replacePrefix(%q, %q, %q) = %q does not end with the rest %q", path, prefix, repl, got, rest)
		}
		if want := len(r) + len(rest); len(got) != want && !(want == 0 && got == "/") {
			t.Fatalf("replacePrefix(%q, %q, %q) = %q has length %d, want %d", path, prefix, repl, got, len(got), want)
		}
		// No "//" is made where replacement and rest meet.
		if r != "" && len(got) > len(r) && got[len(r)-1] == '/' && got[len(r)] == '/' {
			t.Fatalf("replacePrefix(%q, %q, %q) = %q joins with \"//\"", path, prefix, repl, got)
		}
		// The result is under the replacement, so the edit can be undone,
		// except when everything was stripped to "/".
		if !underPrefix(got, repl) && r != "" {
			t.Fatalf("replacePrefix(%q, %q, %q) = %q is not under the replacement", path, prefix, repl, got)
		}
		if r != "" || rest != "" {
			if back := replacePrefix(got, repl, prefix); back != path {
				t.Fatalf("replacePrefix(%q, %q, %q) = %q, and back gives %q, want %q", path, prefix, repl, got, back, path)
			}
		}
	})
}

// ---- FuzzRedirectLocation ----

// refHostOK reports whether host is a DNS name of ASCII letters, digits and
// '-', or an IP address without zone: what redirectLocation is given.
func refHostOK(host string) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Zone() == ""
	}
	if host == "" || strings.HasPrefix(host, ".") || strings.HasSuffix(host, ".") || strings.Contains(host, "..") {
		return false
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func FuzzRedirectLocation(f *testing.F) {
	f.Add("https", "example.org", 443, "/a/b", "q=1")
	f.Add("http", "::1", 8080, "/", "")
	f.Add("HTTP", "10.0.0.1", 80, "/a%20b", "x=%2F&y")
	f.Fuzz(func(t *testing.T, scheme, host string, port int, rawPath, rawQuery string) {
		_ = redirectLocation(scheme, host, port, rawPath, rawQuery) // must not panic

		// Build valid parts from the raw ones: an escaped path and query.
		if !strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") {
			scheme = "http"
		}
		if !refHostOK(host) {
			return
		}
		port = (port%65536 + 65536) % 65536
		path := (&url.URL{Path: "/" + strings.TrimPrefix(rawPath, "/")}).EscapedPath()
		query := url.QueryEscape(rawQuery)

		loc := redirectLocation(scheme, host, port, path, query)
		u, err := url.Parse(loc)
		if err != nil {
			t.Fatalf("redirectLocation(%q, %q, %d, %q, %q) = %q does not parse: %v", scheme, host, port, path, query, loc, err)
		}
		if u.Scheme != strings.ToLower(scheme) {
			t.Fatalf("%q: scheme %q, want %q", loc, u.Scheme, scheme)
		}
		if u.Hostname() != host {
			t.Fatalf("%q: host %q, want %q", loc, u.Hostname(), host)
		}
		wantPort := strconv.Itoa(port)
		if port == 0 || (strings.EqualFold(scheme, "http") && port == 80) || (strings.EqualFold(scheme, "https") && port == 443) {
			wantPort = ""
		}
		if u.Port() != wantPort {
			t.Fatalf("%q: port %q, want %q", loc, u.Port(), wantPort)
		}
		wantPath, _ := url.PathUnescape(path)
		if u.Path != wantPath || u.EscapedPath() != path {
			t.Fatalf("%q: path %q (escaped %q), want %q (%q)", loc, u.Path, u.EscapedPath(), wantPath, path)
		}
		if u.RawQuery != query || u.Fragment != "" || u.User != nil || u.Opaque != "" {
			t.Fatalf("%q: query %q fragment %q user %v opaque %q; want query %q only", loc, u.RawQuery, u.Fragment, u.User, u.Opaque, query)
		}
	})
}

// ---- FuzzOriginMatches ----

func asciiCase(s string, upper bool) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case upper && 'a' <= c && c <= 'z':
			b[i] = c - 32
		case !upper && 'A' <= c && c <= 'Z':
			b[i] = c + 32
		}
	}
	return string(b)
}

// refOrigin parses a serialised origin with net/url, strictly: scheme http
// or https, a host of non-empty labels of letters, digits, '-' and '_' or
// an IPv6 literal, an optional port 1–65535, and nothing else. It is
// stricter than originMatches where the two could disagree on spelling (a
// port with leading zeros), so every origin it accepts must be valid there.
func refOrigin(s string) (scheme, hostname, port string, ok bool) {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.User != nil || u.Path != "" || u.RawPath != "" || u.ForceQuery || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(s, "#?") {
		return "", "", "", false
	}
	scheme = strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" || !strings.HasPrefix(strings.ToLower(s), scheme+"://") {
		return "", "", "", false
	}
	hostname, port = u.Hostname(), u.Port()
	if strings.HasSuffix(u.Host, ":") || strings.Contains(u.Host, "%") {
		return "", "", "", false
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return "", "", "", false
		}
	}
	if strings.HasPrefix(u.Host, "[") {
		a, err := netip.ParseAddr(hostname)
		if err != nil || !a.Is6() || a.Zone() != "" || strings.Contains(hostname, "%") {
			return "", "", "", false
		}
		return scheme, hostname, port, true
	}
	if hostname == "" || len(hostname) > 253 {
		return "", "", "", false
	}
	for _, label := range strings.Split(hostname, ".") {
		if label == "" {
			return "", "", "", false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return "", "", "", false
			}
		}
	}
	return scheme, hostname, port, true
}

func FuzzOriginMatches(f *testing.F) {
	f.Add("https://*.bar.com", "https://xpto.www.bar.com")
	f.Add("https://www.foo.com", "https://www.foo.com:443")
	f.Add("http://foo.com:8080", "http://FOO.com:8080")
	f.Add("*", "null")
	f.Add("https://[::1]", "https://[::1]:443")
	f.Fuzz(func(t *testing.T, pattern, origin string) {
		got := originMatches(pattern, origin) // must not panic
		if !originMatches("*", origin) {
			t.Fatalf("originMatches(\"*\", %q) = false", origin)
		}
		// Case does not matter, in the pattern or in the origin.
		for _, v := range [][2]string{
			{asciiCase(pattern, true), origin},
			{pattern, asciiCase(origin, true)},
			{asciiCase(pattern, false), asciiCase(origin, true)},
		} {
			if originMatches(v[0], v[1]) != got {
				t.Fatalf("originMatches(%q, %q) = %v but originMatches(%q, %q) = %v", pattern, origin, got, v[0], v[1], !got)
			}
		}
		// An origin matches itself exactly when it is a valid origin; a
		// valid one is what url.Parse reads as scheme and host only.
		self := originMatches(origin, origin)
		scheme, hostname, port, ok := refOrigin(origin)
		if ok && !self {
			t.Fatalf("valid origin %q does not match itself", origin)
		}
		if self && origin != "*" {
			if _, err := url.Parse(origin); err != nil {
				t.Fatalf("origin %q matches itself but does not parse: %v", origin, err)
			}
			if i := strings.Index(origin, "://"); i < 0 || strings.ContainsAny(origin[i+3:], "/?#@") {
				t.Fatalf("origin %q matches itself but is not scheme://host[:port]", origin)
			}
		}
		if !ok {
			return
		}
		// A missing port is the scheme's default one.
		if port == "" {
			def := "80"
			if scheme == "https" {
				def = "443"
			}
			if originMatches(pattern, origin+":"+def) != got {
				t.Fatalf("originMatches(%q, %q) = %v, but with port %s %v", pattern, origin, got, def, !got)
			}
			if !originMatches(origin, origin+":"+def) || !originMatches(origin+":"+def, origin) {
				t.Fatalf("%q and %q do not match each other", origin, origin+":"+def)
			}
		}
		// A wildcard for the first label(s) matches; it never matches the
		// bare suffix.
		if !strings.Contains(hostname, ":") {
			if dot := strings.IndexByte(hostname, '.'); dot > 0 {
				suffix := hostname[dot+1:]
				wild := scheme + "://*." + suffix
				bare := scheme + "://" + suffix
				if port != "" {
					wild += ":" + port
					bare += ":" + port
				}
				if !originMatches(wild, origin) {
					t.Fatalf("originMatches(%q, %q) = false", wild, origin)
				}
				if originMatches(wild, bare) {
					t.Fatalf("originMatches(%q, %q) = true", wild, bare)
				}
			}
			anyHost := scheme + "://*"
			if port != "" {
				anyHost += ":" + port
			}
			if !originMatches(anyHost, origin) {
				t.Fatalf("originMatches(%q, %q) = false", anyHost, origin)
			}
		}
	})
}
