// This file implements hostnames and the host index.

package matcher

import (
	"fmt"
	"net/netip"
	"strings"
)

// maxHostLen is the longest DNS name (RFC 1035 §2.3.4). A longer request
// host can only reach the catch-all.
const maxHostLen = 253

// hostRef is a host entry as Match uses it: the root of the entry's path
// trie, where to start walking it, and the entry to fall back to, the next
// less specific one that serves every host this one serves (-1 for none).
//
// start is the root's only child when it has one, as nearly every root
// does (paths begin with "/"): Match starts there and reads the root only
// when the path leaves that edge or the root's own rules are needed, one
// dependent memory access fewer per request.
type hostRef struct {
	root  uint32
	start uint32
	next  int32
}

// hostIndex finds the most specific host entry for a request host.
//
// Exact names and wildcards each live in a hostTable. The wildcards form a
// trie of labels read right to left ("*.a.example.com" sits under com →
// example → a), stored flat: each wildcard is keyed by its suffix
// ("a.example.com"), so finding the deepest wildcard over a host means
// probing the host's suffixes, longest first, and stopping at the first
// entry: one cache line per probe instead of a map lookup per label.
type hostIndex struct {
	exact    hostTable
	wild     hostTable      // keyed by the suffix after "*."
	catchAll int32          // entry of the rules without hostnames, or -1
	entries  paged[hostRef] // every entry, for following next
}

// lookupHost returns the most specific entry serving host. host must be
// lower case, without port or trailing dot (see plainHost and hostKey). It
// takes a string or bytes so neither caller has to convert.
func lookupHost[H ~string | ~[]byte](x *hostIndex, host H) (hostRef, bool) {
	if e, ok := get(&x.exact, host); ok {
		return e, true
	}
	if x.wild.count > 0 {
		for i := wildDot(host, -1); i >= 0; i = wildDot(host, i) {
			if e, ok := get(&x.wild, host[i+1:]); ok {
				return e, true
			}
		}
	}
	if x.catchAll >= 0 {
		return *x.entries.get(uint64(x.catchAll)), true
	}
	return hostRef{}, false
}

// wildDot returns the index of the first dot after index after whose suffix
// a wildcard could serve host: one with at least one character in front, so
// "*.example.com" serves "a.example.com" but not ".example.com". It returns
// -1 when there is none. Successive calls give the suffixes longest first.
func wildDot[H ~string | ~[]byte](host H, after int) int {
	for i := max(after+1, 1); i < len(host); i++ {
		if host[i] == '.' {
			return i
		}
	}
	return -1
}

// plainHost returns host without a trailing dot and true when that is all
// hostKey would change: the usual lower-case host without a port, which can
// then be looked up without copying.
func plainHost(host string) (string, bool) {
	for i := 0; i < len(host); i++ {
		if hostNeedsKey[host[i]] {
			return "", false
		}
	}
	host = strings.TrimSuffix(host, ".")
	return host, len(host) <= maxHostLen
}

// hostNeedsKey marks the bytes plainHost leaves to hostKey: upper case, and
// the ':' and '[' of ports and IPv6 literals.
var hostNeedsKey = func() (t [256]bool) {
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	t[':'], t['['] = true, true
	return t
}()

// hostKey writes the request host as the index compares it into buf: port
// and one trailing dot dropped, ASCII lower case. It returns nil for a host
// too long to be a DNS name, which then only reaches the catch-all.
func hostKey(host string, buf *[maxHostLen]byte) []byte {
	if strings.HasPrefix(host, "[") {
		// An IPv6 literal, "[::1]:8080": keep the brackets, drop the port.
		if i := strings.IndexByte(host, ']'); i >= 0 {
			host = host[:i+1]
		}
	} else if i := strings.IndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	host = strings.TrimSuffix(host, ".")
	if len(host) > maxHostLen {
		return nil
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return buf[:len(host)]
}

// canonicalHostname validates a rule hostname as the Gateway API does (RFC
// 1123 labels, an optional leading "*." wildcard label, no IP addresses) and
// returns it in lower case.
func canonicalHostname(h string) (string, error) {
	// Fold ASCII only: strings.ToLower would turn the Kelvin sign U+212A
	// into "k" and let a non-ASCII name through.
	lower := asciiLower(h)
	name := strings.TrimPrefix(lower, "*.")
	if name == "" || len(lower) > maxHostLen {
		return "", fmt.Errorf("hostname %+q: must be 1 to %d characters", h, maxHostLen)
	}
	// Only dotted digits can parse as an address (IPv6 needs ':', which no
	// label allows); checking first saves building ParseAddr's error.
	if strings.Trim(name, "0123456789.") == "" && isAddr(name) {
		return "", fmt.Errorf("hostname %+q: IP addresses are not allowed", h)
	}
	for label := range strings.SplitSeq(name, ".") {
		if err := checkLabel(label); err != nil {
			return "", fmt.Errorf("hostname %+q: %w", h, err)
		}
	}
	return lower, nil
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func isAddr(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

// checkLabel enforces RFC 1123: 1–63 letters, digits and hyphens, with a
// letter or digit at each end. A "*" anywhere but a leading "*." lands here
// and is refused.
func checkLabel(label string) error {
	if label == "" || len(label) > 63 {
		return fmt.Errorf("label %q must be 1 to 63 characters", label)
	}
	for i := 0; i < len(label); i++ {
		c := label[i]
		alnum := 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(label)-1) {
			return fmt.Errorf("label %q: only a-z, 0-9 and inner '-' are allowed", label)
		}
	}
	return nil
}
