// This file checks hostnames.

package translate

// validHostname reports whether h is a hostname the Gateway API accepts on
// a listener or a route: DNS labels of letters, digits and hyphens (RFC
// 1123), optionally led by a "*." wildcard, no IP address, at most 253
// bytes. The CRDs check this in a cluster; standalone YAML skips the API
// server, and a bad hostname must fail its own object, not the whole config.
func validHostname(h string) bool {
	if len(h) > 2 && h[0] == '*' && h[1] == '.' {
		h = h[2:]
	}
	if h == "" || len(h) > 253 {
		return false
	}
	labelLen, allDigits := 0, true
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c == '.':
			if labelLen == 0 || h[i-1] == '-' {
				return false
			}
			labelLen = 0
			continue
		case c >= '0' && c <= '9':
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			allDigits = false
		case c == '-':
			if labelLen == 0 {
				return false
			}
			allDigits = false
		default:
			return false
		}
		if labelLen++; labelLen > 63 {
			return false
		}
	}
	// An IPv4 address is all digits and dots; the spec forbids IPs here.
	return labelLen > 0 && h[len(h)-1] != '-' && !allDigits
}
