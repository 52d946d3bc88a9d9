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
// trie and the entry to fall back to, the next less specific one that serves
// every host this one serves (-1 for none).
type hostRef struct {
	root uint32
	next int32
}

// hostIndex finds the most specific host entry for a request host: exact
// names in a map, wildcards in a trie of labels read right to left, and the
// catch-all for rules without hostnames.
type hostIndex struct {
	exact    hostTable
	wild     wildNode
	catchAll int32 // -1 when no rule lacks hostnames
	entries  []hostRef
}

// wildNode is one label of the reversed-label trie: the node reached by
// "com" then "example" holds the entry of "*.example.com", if there is one.
type wildNode struct {
	children map[string]*wildNode
	entry    int32 // -1 for none
}

// lookupHost returns the most specific entry serving host. host must be
// lower case, without port or trailing dot (see plainHost and hostKey). It
// takes a string or bytes so neither caller has to convert.
func lookupHost[H ~string | ~[]byte](x *hostIndex, host H) (hostRef, bool) {
	if e, ok := get(&x.exact, host); ok {
		return e, true
	}
	if i := lookupWild(&x.wild, host); i >= 0 {
		return x.entries[i], true
	}
	if x.catchAll >= 0 {
		return x.entries[x.catchAll], true
	}
	return hostRef{}, false
}

// lookupWild walks host's labels from the right and returns the deepest
// wildcard entry whose suffix leaves at least one character in front of its
// dot, or -1.
func lookupWild[H ~string | ~[]byte](n *wildNode, host H) int32 {
	best := int32(-1)
	for end := len(host); ; {
		i := lastDot(host[:end])
		n = n.children[string(host[i+1:end])]
		if n == nil {
			return best
		}
		// host[i] is the dot in front of the suffix host[i+1:].
		if n.entry >= 0 && i >= 1 {
			best = n.entry
		}
		if i < 0 {
			return best
		}
		end = i
	}
}

// child returns the node for label, creating it.
func (n *wildNode) child(label string) *wildNode {
	c := n.children[label]
	if c == nil {
		if n.children == nil {
			n.children = make(map[string]*wildNode)
		}
		c = &wildNode{entry: -1}
		n.children[label] = c
	}
	return c
}

// link calls set(entry, fallback) for every wildcard entry, where fallback
// is the nearest shorter wildcard above it or the given one: any host under
// "*.a.example.com" is also under "*.example.com".
func (n *wildNode) link(fallback int32, set func(entry, next int32)) {
	if n.entry >= 0 {
		set(n.entry, fallback)
		fallback = n.entry
	}
	for _, c := range n.children {
		c.link(fallback, set)
	}
}

func lastDot[H ~string | ~[]byte](b H) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '.' {
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
		if c := host[i]; 'A' <= c && c <= 'Z' || c == ':' || c == '[' {
			return "", false
		}
	}
	host = strings.TrimSuffix(host, ".")
	return host, len(host) <= maxHostLen
}

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
	lower := strings.ToLower(h)
	name := strings.TrimPrefix(lower, "*.")
	if name == "" || len(lower) > maxHostLen {
		return "", fmt.Errorf("hostname %q: must be 1 to %d characters", h, maxHostLen)
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return "", fmt.Errorf("hostname %q: IP addresses are not allowed", h)
	}
	for label := range strings.SplitSeq(name, ".") {
		if err := checkLabel(label); err != nil {
			return "", fmt.Errorf("hostname %q: %w", h, err)
		}
	}
	return lower, nil
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
