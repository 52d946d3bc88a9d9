package hostile

// Forged forwarding headers. Behind the tunnel, cloudflared vouches for
// the Cf-* headers (the visitor's address, Cloudflare Access identity)
// and backends act on them. A direct client (plain and Gateway
// listeners) can send the same names, so an untrusted listener must drop
// every Cf-* field and every forwarding header a backend may read as the
// client's address, host or scheme. Backends do not all read names the
// way the proxy does: CGI, WSGI, PHP and Rack turn "-" and "_" alike into
// "_", so Cf_Connecting_Ip is Cf-Connecting-Ip to them. Here the backend
// compares names case-insensitively with "_" read as "-".
//
// On an untrusted listener X-Forwarded-For and X-Forwarded-Proto arrive
// once, with the proxy's own values (the peer address, the listener's
// scheme). On a trusted (origin) listener cloudflared's Cf-* headers pass
// unchanged, but underscore spellings of the headers the proxy writes
// itself are dropped everywhere.

import (
	"slices"
	"strings"
	"testing"
)

// spoofed is the value every forged field carries.
const spoofed = "203.0.113.66"

// forgeries are what a direct client sends, names as written on the
// wire (HTTP/2 sends them in lower case).
var forgeries = []string{
	"Cf-Access-Authenticated-User-Email", "Cf-Access-Jwt-Assertion", "Cf-Pseudo-Ipv4", "Cf-Ipcity",
	"Cf-Connecting-Ip", "Cf_Connecting_Ip",
	"X_Forwarded_For", "X_Forwarded_Host", "X_Real_Ip", "True_Client_Ip",
	"Forwarded", "Cdn-Loop", "X-Forwarded-Host", "X-Forwarded-Port",
	"X-Forwarded-For", "X-Forwarded-Proto", "X_Forwarded_Proto",
}

// neverForwarded are the names (normalised: lower case, "-") an untrusted
// listener must not pass on, besides any starting "cf-".
var neverForwarded = []string{"x-forwarded-host", "x-forwarded-port", "x-real-ip", "true-client-ip", "forwarded", "cdn-loop"}

// fromCloudflared are headers cloudflared sets, which a trusted listener
// passes on as they came. (Access's identity headers are not among them:
// only the proxy passes an identity on, identity_test.go.)
var fromCloudflared = []hf{{"Cf-Connecting-Ip", "203.0.113.7"}, {"Cf-Ipcountry", "PT"}, {"Cf-Ray", "8f1e2d3c4b5a6978-LIS"}}

func TestForgedForwardingHeaders(t *testing.T) {
	be := newBackend(t)
	e := newEnv(t, be.addr)
	e.each(func(t *testing.T, p path) {
		send := []hf{{"X_Forwarded_For", spoofed}, {"X_Forwarded_Proto", "https"}}
		if p.trusted {
			send = append(send, fromCloudflared...)
		} else {
			send = nil
			for _, name := range forgeries {
				send = append(send, hf{name, spoofed})
			}
		}
		n := len(be.requests())
		peer := sendFields(t, p, send)
		got := be.since(n)
		if len(got) != 1 {
			t.Fatalf("backend got %d requests, want 1", len(got))
		}
		r := got[0]

		// The proxy's own forwarding headers, once each: on a trusted
		// listener no X-Forwarded-For came before this proxy, and no
		// X-Forwarded-Proto was sent.
		expectOnce(t, r, "x-forwarded-for", peer)
		expectOnce(t, r, "x-forwarded-proto", p.scheme())
		if p.trusted {
			for _, f := range fromCloudflared {
				expectOnce(t, r, normName(f.name), f.value)
			}
			return
		}
		for _, f := range r.fields {
			if n := normName(f.name); strings.HasPrefix(n, "cf-") || slices.Contains(neverForwarded, n) {
				t.Errorf("an untrusted listener forwarded %s: %s", f.name, f.value)
			}
		}
	})
}

// expectOnce checks that r holds exactly one field named name (read as
// normName reads it), with value want.
func expectOnce(t *testing.T, r rawRequest, name, want string) {
	t.Helper()
	got := r.values(name)
	if len(got) != 1 || got[0].value != want {
		t.Errorf("backend got %s fields %q, want one with %q", name, got, want)
	}
}

// sendFields sends GET /x with the extra fields on p, checks the answer
// is 200, and returns the client address the proxy saw.
func sendFields(t *testing.T, p path, fields []hf) (peer string) {
	t.Helper()
	status, peer := sendGET(t, p, fields)
	if status != 200 {
		t.Fatalf("GET /x: %d, want 200", status)
	}
	return peer
}

// sendGET sends GET /x with the extra fields on p, names spelt as given
// on HTTP/1.1 and in lower case on HTTP/2, and returns the answer's
// status and the client address the proxy saw.
func sendGET(t *testing.T, p path, fields []hf) (status int, peer string) {
	t.Helper()
	c := p.dial(t)
	defer c.Close()
	if p.proto == "h1" {
		var b strings.Builder
		b.WriteString("GET /x HTTP/1.1\r\nHost: " + p.addr + "\r\n")
		for _, f := range fields {
			b.WriteString(f.name + ": " + f.value + "\r\n")
		}
		b.WriteString("Connection: close\r\n\r\n")
		res, body, err := exchange1(c, []byte(b.String()), "GET")
		if err != nil {
			t.Fatalf("GET /x: %v %q", err, body)
		}
		return res.StatusCode, peerIP(c)
	}
	lower := make([]hf, len(fields))
	for i, f := range fields {
		lower[i] = hf{strings.ToLower(f.name), f.value}
	}
	return h2dial(t, c).open(p.request("GET", "/x", p.addr, lower...), true).result(t).status, peerIP(c)
}
