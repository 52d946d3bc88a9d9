package dataplane

import "testing"

// What an untrusted listener drops, and what every listener drops, by
// name: every Cf-* header and forwarding header, however spelt, and the
// underscore spellings of the headers the proxy writes itself.
func TestForgeableHeaderNames(t *testing.T) {
	for _, tc := range []struct {
		key            string
		forgeable, own bool
	}{
		{"Cf-Connecting-Ip", true, false},
		{"Cf-Access-Authenticated-User-Email", true, false},
		{"Cf-Access-Jwt-Assertion", true, false},
		{"Cf-Pseudo-Ipv4", true, false},
		{"Cf-Ipcity", true, false},
		{"Cf_connecting_ip", true, false},
		{"CF_Visitor", true, false},
		{"Forwarded", true, false},
		{"X-Real-Ip", true, false},
		{"X_real_ip", true, false},
		{"True_client_ip", true, false},
		{"Cdn-Loop", true, false},
		{"X-Forwarded-Host", true, false},
		{"X_forwarded_port", true, false},
		{"X_forwarded_for", true, true},
		{"X-Forwarded_Proto", true, true},
		{"X-Forwarded-For", true, false}, // replaced, not dropped: see skipOutgoing
		{"Cfx", false, false},
		{"Cf", false, false},
		{"Cache-Control", false, false},
		{"X-Forwarded-Fox", false, false},
		{"Accept", false, false},
	} {
		if got := forgeable(tc.key); got != tc.forgeable {
			t.Errorf("forgeable(%q) = %v", tc.key, got)
		}
		if got := ownAlias(tc.key); got != tc.own {
			t.Errorf("ownAlias(%q) = %v", tc.key, got)
		}
	}
}
