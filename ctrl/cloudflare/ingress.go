// This file builds and compares a tunnel's ingress document.

package cloudflare

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// Document is a tunnel's remotely managed ingress configuration, the
// "config" of PUT /accounts/{account}/cfd_tunnel/{tunnel}/configurations.
// cloudflared tries its rules in order and takes the first whose hostname
// (and path) match, so the last must match everything.
type Document struct {
	Ingress []Rule `json:"ingress"`
}

// Rule is one ingress rule.
type Rule struct {
	Hostname      string         `json:"hostname,omitempty"`
	Service       string         `json:"service"`
	OriginRequest *OriginRequest `json:"originRequest,omitempty"`
}

// OriginRequest are the settings of a rule's origin connection that we
// set. Durations would be integer seconds; we set none.
type OriginRequest struct {
	// HTTP2Origin makes cloudflared speak HTTP/2 to the origin, which it
	// does only over TLS with ALPN h2: gRPC needs it.
	HTTP2Origin      bool   `json:"http2Origin,omitempty"`
	OriginServerName string `json:"originServerName,omitempty"`
	CAPool           string `json:"caPool,omitempty"`
	// Access makes cloudflared check each request's or stream's Access
	// token before it dials the origin.
	Access *AccessCheck `json:"access,omitempty"`
}

// AccessCheck is a rule's originRequest.access, cloudflared's
// config.AccessConfig: with Required, cloudflared refuses (403) a request
// or stream without a Cf-Access-Jwt-Assertion token, and fails one whose
// token does not verify against the team's keys
// (https://<teamName>.cloudflareaccess.com/cdn-cgi/access/certs) or
// carries none of the AUD tags. cloudflared installs the check only for a
// rule that sets it (not from the document's top-level originRequest),
// and fails every token against an empty teamName, so a rule never has
// one.
type AccessCheck struct {
	Required bool     `json:"required"`
	TeamName string   `json:"teamName"`
	AudTag   []string `json:"audTag"`
}

// catchAll answers hostnames the tunnel receives but no route serves (a
// stale DNS record, say). cloudflared requires a last rule with no
// hostname.
const catchAll = "http_status:404"

// origin is where the cloudflared sidecar reaches the proxy beside it.
type origin struct {
	port, tlsPort int32
	socket        string
	serverName    string
	caPool        string
}

func originOf(s *v1alpha1.OriginSettings) origin {
	o := origin{port: v1alpha1.DefaultOriginPort, tlsPort: v1alpha1.DefaultOriginTLSPort, serverName: v1alpha1.DefaultOriginServerName, caPool: v1alpha1.DefaultOriginCAPool}
	if s == nil {
		return o
	}
	if s.Port != 0 {
		o.port = s.Port
	}
	o.socket = s.Socket
	if s.TLSPort != 0 {
		o.tlsPort = s.TLSPort
	}
	if s.ServerName != "" {
		o.serverName = s.ServerName
	}
	if s.CAPool != "" {
		o.caPool = s.CAPool
	}
	return o
}

// plain is the service of the plain origin listener: its unix socket, or
// its port on loopback. cloudflared answers every WebSocket to a unix:
// service 502 (cloudflare/cloudflared#560): the chart's proxies default
// to the port, and a plane's own tunnel, whose proxies listen on the
// socket, carries no WebSocket (docs/data-planes.md).
func (o origin) plain() string {
	if o.socket != "" {
		return "unix:" + o.socket
	}
	return fmt.Sprintf("http://localhost:%d", o.port)
}

// BuildDocument is the ingress document of a tunnel serving hostnames:
// each to the proxy's plain origin listener, or, when a GRPCRoute serves
// it, to the TLS listener over HTTP/2 (HTTP routes on the same hostname
// work there too), or, when a TCPRoute or TLSRoute serves it, to the
// proxy's origin port for that route (streamRule); then the catch-all.
// Exact hostnames come before wildcards, and a wildcard before any
// shorter one it contains, so the first match is the most specific, as
// in Gateway API.
//
// A stream hostname whose rule cannot be written safely is left out, so
// it falls to the catch-all; buildDocument says why.
func BuildDocument(hostnames []translate.Hostname, s *v1alpha1.OriginSettings) Document {
	doc, _ := buildDocument(hostnames, s)
	return doc
}

// buildDocument is BuildDocument, and a message for each hostname it
// left out.
func buildDocument(hostnames []translate.Hostname, s *v1alpha1.OriginSettings) (doc Document, refused []string) {
	o := originOf(s)
	hs := slices.Clone(hostnames)
	slices.SortFunc(hs, func(a, b translate.Hostname) int { return compareSpecificity(a.Name, b.Name) })
	doc = Document{Ingress: make([]Rule, 0, len(hs)+1)}
	for _, h := range hs {
		r := Rule{Hostname: h.Name, Service: o.plain()}
		switch {
		case h.Stream != nil:
			var err error
			if r, err = streamRule(h.Name, h.Stream); err != nil {
				refused = append(refused, err.Error())
				continue
			}
		case h.GRPC:
			r.Service = fmt.Sprintf("https://localhost:%d", o.tlsPort)
			r.OriginRequest = &OriginRequest{HTTP2Origin: true, OriginServerName: o.serverName, CAPool: o.caPool}
		}
		doc.Ingress = append(doc.Ingress, r)
	}
	doc.Ingress = append(doc.Ingress, Rule{Service: catchAll})
	return doc, refused
}

// streamSchemes are the services a stream hostname may name: cloudflared
// carries each as TCP to host:port. Its other stream service, bastion,
// lets the visitor choose the destination, and is never written.
var streamSchemes = []string{"tcp", "ssh", "rdp"}

// streamRule is the rule of a hostname a TCPRoute or TLSRoute serves:
// its streams go to the route's origin port on loopback, where the proxy
// beside cloudflared listens (as for HTTP), checked by cloudflared for an
// Access token when the route is behind Access. It refuses a scheme
// other than streamSchemes, a port out of range, and an Access check
// without a team name or AUD tag (which would fail every stream).
func streamRule(hostname string, st *translate.StreamService) (Rule, error) {
	if !slices.Contains(streamSchemes, st.Scheme) {
		return Rule{}, fmt.Errorf("hostname %s (%s): stream scheme %q is not one of %s: not routed", hostname, st.Route, st.Scheme, strings.Join(streamSchemes, ", "))
	}
	if st.Port <= 0 || st.Port > 65535 {
		return Rule{}, fmt.Errorf("hostname %s (%s): origin port %d is out of range: not routed", hostname, st.Route, st.Port)
	}
	r := Rule{Hostname: hostname, Service: fmt.Sprintf("%s://localhost:%d", st.Scheme, st.Port)}
	if a := st.Access; a != nil {
		if a.TeamName == "" || len(a.Audiences) == 0 {
			return Rule{}, fmt.Errorf("hostname %s (%s): Access check without a team name or AUD tag (cloudflared would fail every stream): not routed", hostname, st.Route)
		}
		r.OriginRequest = &OriginRequest{Access: &AccessCheck{Required: true, TeamName: a.TeamName, AudTag: slices.Clone(a.Audiences)}}
	}
	return r, nil
}

// compareSpecificity orders exact hostnames first (by name), then
// wildcards, longest suffix first.
func compareSpecificity(a, b string) int {
	wa, wb := strings.HasPrefix(a, "*."), strings.HasPrefix(b, "*.")
	switch {
	case wa != wb:
		if wa {
			return 1
		}
		return -1
	case wa && len(a) != len(b):
		return len(b) - len(a)
	}
	return strings.Compare(a, b)
}

// SameDocument says whether the config Cloudflare holds (raw JSON, as GET
// returns it) routes exactly as want. Fields at their zero value are
// ignored on both sides, since Cloudflare may echo defaults we never set
// (an empty originRequest, warp-routing off); anything else differing,
// including a setting someone added in the dashboard, means the document
// must be written again.
func SameDocument(remote json.RawMessage, want Document) bool {
	var got map[string]any
	if len(remote) == 0 || json.Unmarshal(remote, &got) != nil {
		return false
	}
	delete(got, "warp-routing") // deprecated and ignored by cloudflared
	b, err := json.Marshal(want)
	if err != nil {
		return false
	}
	var w map[string]any
	if err := json.Unmarshal(b, &w); err != nil {
		return false
	}
	return reflect.DeepEqual(prune(got), prune(w))
}

// prune drops zero values (false, 0, "", null, and objects and arrays
// left empty) from decoded JSON.
func prune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if p := prune(e); p != nil {
				out[k] = p
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			p := prune(e)
			if p == nil {
				p = map[string]any{} // keep positions: rule order matters
			}
			out = append(out, p)
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case bool:
		if !x {
			return nil
		}
	case float64:
		if x == 0 {
			return nil
		}
	case string:
		if x == "" {
			return nil
		}
	case nil:
		return nil
	}
	return v
}
