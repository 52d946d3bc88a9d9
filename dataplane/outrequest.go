// This file writes the request as it leaves for a backend.

package dataplane

import (
	"bufio"
	"net/http"

	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
)

// outRequest is the request as it leaves for an upstream: the incoming
// request's header map is read, never modified, and the proxy's changes
// (header filters, forwarding headers, hop-by-hop removal) are applied as
// the head is written.
type outRequest struct {
	method string
	// target is the origin-form request target: path and "?query".
	target string
	host   string
	in     http.Header
	// fields, when the request came through the origin server, are in's
	// fields in the order the client sent them: the head is written from
	// them, without walking the map. nil otherwise.
	fields *http1.Fields
	plan   *compiled.HeaderPlan
	// untrusted drops forwarding headers a client could forge (see
	// forwarded.go); nil on a listener that trusts its peer.
	untrusted bool
	// xffPrior are the X-Forwarded-For values kept from the request; peer
	// is appended after them. xfp is X-Forwarded-Proto.
	xffPrior  []string
	peer, xfp string
	// contentLength is the body length: 0 none, -1 unknown (sent chunked).
	contentLength int64
	// upgrade is the protocol of a WebSocket handshake, else "".
	upgrade string
	// identityNames are the headers only the proxy writes (access.go): a
	// client's are never forwarded. On a protected rule, access names its
	// identity headers, which the proxy writes with identity, and token is
	// the verified token, written as Cf-Access-Jwt-Assertion; nil and ""
	// on other rules.
	identityNames *identityNames
	access        *compiled.AccessHeaders
	identity      *cfaccess.Identity
	token         string
	// cookie replaces the client's Cookie fields when cookieSet: they held
	// a CF_Authorization cookie, which only a protected rule's verified
	// token may be (accessCookies). Empty with cookieSet sends none.
	cookie    string
	cookieSet bool
	// traceparent and tracestate, when tracing, carry the attempt's span
	// context (W3C Trace Context) in place of the client's.
	traceparent, tracestate string
}

// detached returns a copy of o that owns what it reads, for a request
// sent after the client's has ended (a mirror): the header map and the
// forwarded-for values are copied, and the server's fields, which its
// connection reuses for its next request, are left for the map.
func (o *outRequest) detached() outRequest {
	d := *o
	d.in = o.in.Clone()
	d.xffPrior = append([]string(nil), o.xffPrior...)
	d.fields = nil
	return d
}

// writeHead writes the request line and header section. Headers follow
// RFC 9110 §7.6.1: hop-by-hop fields, and those named in Connection, are
// not forwarded; framing (Content-Length, Transfer-Encoding) is the proxy's
// own, since the body is re-framed. Field values need no check here: every
// listener's server refuses control characters in the client's, and
// compile refuses them in the config's. Nothing is written when the
// request line is refused (http1.ErrRequestLine).
func writeHead(bw *bufio.Writer, o *outRequest) error {
	if err := http1.WriteRequestLine(bw, o.method, o.target, o.host); err != nil {
		return err
	}
	conn := o.in["Connection"]
	if o.fields != nil {
		for i := range o.fields.Len() {
			if k, v := o.fields.At(i); o.forwards(k, conn) {
				http1.WriteField(bw, k, v)
			}
		}
	} else {
		for k, vs := range o.in {
			if !o.forwards(k, conn) {
				continue
			}
			for _, v := range vs {
				http1.WriteField(bw, k, v)
			}
		}
	}
	if o.cookieSet && o.cookie != "" && o.keepsCookie() {
		http1.WriteField(bw, "Cookie", o.cookie)
	}
	if o.peer != "" && !o.plan.Replaces("X-Forwarded-For") {
		bw.WriteString("X-Forwarded-For: ")
		for _, v := range o.xffPrior {
			bw.WriteString(v)
			bw.WriteString(", ")
		}
		bw.WriteString(o.peer)
		bw.WriteString("\r\n")
	}
	if o.xfp != "" && !o.plan.Replaces("X-Forwarded-Proto") {
		http1.WriteField(bw, "X-Forwarded-Proto", o.xfp)
	}
	if o.identity != nil {
		for _, f := range identityFields(o.access, o.identity) {
			if f[0] != "" {
				http1.WriteField(bw, f[0], f[1])
			}
		}
		http1.WriteField(bw, accessHeader, o.token)
	}
	{
		ops := o.plan.Ops()
		for i := range ops {
			op := &ops[i]
			for _, v := range op.Values {
				http1.WriteField(bw, op.Name, v)
			}
		}
	}
	if o.traceparent != "" {
		http1.WriteField(bw, "Traceparent", o.traceparent)
		if o.tracestate != "" {
			http1.WriteField(bw, "Tracestate", o.tracestate)
		}
	}
	if o.upgrade != "" {
		http1.WriteField(bw, "Connection", "Upgrade")
		http1.WriteField(bw, "Upgrade", o.upgrade)
	}
	http1.EndHead(bw, o.contentLength)
	return nil
}

// forwards reports whether the incoming field k goes out as it came:
// not hop-by-hop or named in Connection (conn, its values), not one the
// proxy writes itself, not a forgeable one from an untrusted peer, and
// not set or removed by the header plan. HTTP/1.1 and HTTP/2 forwarding
// both ask it.
func (o *outRequest) forwards(k string, conn []string) bool {
	if skipOutgoing(k) || ownAlias(k) || (o.untrusted && forgeable(k)) {
		return false
	}
	if o.identityNames.has(k) {
		return false // only the proxy's, from a verified token
	}
	if o.cookieSet && k == "Cookie" {
		return false // replaced by o.cookie
	}
	if o.traceparent != "" && (k == "Traceparent" || k == "Tracestate") {
		return false // replaced by the attempt's own
	}
	if len(conn) > 0 && httpsyntax.HasToken(conn, k) {
		return false
	}
	touched, keep := o.plan.Touches(k)
	return !touched || keep
}

// keepsCookie reports whether the header plan leaves the client's Cookie
// to be forwarded, which o.cookie then stands for.
func (o *outRequest) keepsCookie() bool {
	touched, keep := o.plan.Touches("Cookie")
	return !touched || keep
}

// skipOutgoing lists incoming fields the proxy never copies: hop-by-hop
// ones, framing, Host (written first), Expect (the proxy's server side has
// already answered 100-continue by reading the body), and the forwarding
// headers it rewrites.
func skipOutgoing(k string) bool {
	switch k {
	case "Host", "Content-Length", "Expect", "X-Forwarded-For", "X-Forwarded-Proto":
		return true
	}
	return httpsyntax.HopByHop(k)
}
