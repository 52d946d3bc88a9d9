// This file implements the TXT records that say which DNS records are
// ours.

package cloudflare

import (
	"strings"
)

// A hostname's records are ours when a TXT record beside them says so:
//
//	_tunnelgate.app.example.com  TXT  "heritage=tunnelgate,owner=<owner>,tunnel=<id>"
//
// It cannot sit on the hostname itself: a name with a CNAME may hold no
// other record. A wildcard's goes on _tunnelgate-wildcard.<parent>, since
// "*" may only be the first label.
const (
	ownershipPrefix         = "_tunnelgate."
	ownershipWildcardPrefix = "_tunnelgate-wildcard."
	heritage                = "tunnelgate"
)

// ownershipName is the name of hostname's ownership record.
func ownershipName(hostname string) string {
	if rest, ok := strings.CutPrefix(hostname, "*."); ok {
		return ownershipWildcardPrefix + rest
	}
	return ownershipPrefix + hostname
}

// hostnameOfOwnership inverts ownershipName; ok is false for other names.
func hostnameOfOwnership(name string) (string, bool) {
	if rest, ok := strings.CutPrefix(name, ownershipWildcardPrefix); ok {
		return "*." + rest, true
	}
	return strings.CutPrefix(name, ownershipPrefix)
}

// ownershipContent is the TXT content, quoted as DNS presents TXT data.
func ownershipContent(owner, tunnelID string) string {
	return `"heritage=` + heritage + `,owner=` + owner + `,tunnel=` + tunnelID + `"`
}

// ownership is a parsed ownership record.
type ownership struct {
	owner, tunnel string
}

// parseOwnership reads TXT content written by ownershipContent, quoted or
// not; ok is false for any other TXT record.
func parseOwnership(content string) (ownership, bool) {
	content = strings.TrimSpace(content)
	content = strings.TrimSuffix(strings.TrimPrefix(content, `"`), `"`)
	var o ownership
	ours := false
	for _, field := range strings.Split(content, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(field), "=")
		switch k {
		case "heritage":
			ours = v == heritage
		case "owner":
			o.owner = v
		case "tunnel":
			o.tunnel = v
		}
	}
	return o, ours && o.owner != ""
}
