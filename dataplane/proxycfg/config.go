// This file defines the config's types and DecodeConfig.

package proxycfg

import (
	"encoding/json"
	"fmt"
	"time"
)

// SchemaVersion names the wire format of Config. A proxy refuses a config
// with another schema rather than guess at fields it does not know.
const SchemaVersion = "tunnelgate.dev/dataplane/v1"

// Config is everything a proxy serves: listeners with their routes, and
// the clusters (endpoint sets) the routes send traffic to. The proxy
// compiles it into the structures requests use (dataplane.Proxy.Load).
//
// Every name in a Config is opaque to the proxy except where it is shown
// to users (metrics labels, error messages), so translate chooses them:
// "namespace/name" for routes, "namespace/service:port" for clusters.
//
// A Config is in normal form: every setting the proxy acts on is written
// out, and the proxy applies no defaults. Where the Gateway API has a
// default (a rule without matches matches every path, a redirect is a
// 302, a CORS answer may be cached 5 seconds), translate writes it; the
// proxy refuses a config that leaves one out, naming the field. So one
// layer decides what an absent field means, and the config a proxy
// serves says everything it does.
type Config struct {
	// Schema must be SchemaVersion.
	Schema string `json:"schema"`
	// Version names this config: the proxy reports it on the admin
	// listener, in logs and in metrics, and names it when it asks the
	// controller for a newer config. It is computed from the content by
	// Encoder (or ContentVersion), the one definition of a version: 32 hex
	// digits of a hash of every other field, so configs with the same
	// content have the same version wherever they were made. translate
	// leaves it empty; the config server publishes every config with its
	// version, whatever this said, and standalone mode sets it on each
	// config it loads, as `tunnelgate proxy -config` does with its file
	// (a version written in the file is replaced).
	Version string `json:"version"`
	// Listeners are the Gateway listeners this proxy serves. A request is
	// given to the listener whose hostname matches its Host most
	// specifically (exact, then the longest wildcard, then no hostname).
	Listeners []Listener `json:"listeners"`
	// Routes are HTTPRoutes, GRPCRoutes, TCPRoutes and TLSRoutes, already
	// bound to listeners.
	Routes []Route `json:"routes"`
	// Clusters are the backends' endpoint sets, referenced by name.
	Clusters []Cluster `json:"clusters"`
	// SessionKeys sign and check session-persistence cookies and headers:
	// the first signs new tokens, and a token signed by any of them is
	// accepted (a token names its key), so a key rotates by going first
	// while the one it replaces stays for as long as its tokens may be in
	// use. Each should be at least 16 random bytes. All proxies serving
	// one Gateway must share them, or a pinned client bounces between
	// replicas. Without keys each proxy makes one at start, and pins last
	// only as long as that process.
	SessionKeys [][]byte `json:"sessionKeys,omitempty"`
	// AccessTeams are the Cloudflare Access teams whose tokens protected
	// rules (Rule.Access) verify, each with its published signing keys.
	AccessTeams []AccessTeam `json:"accessTeams,omitempty"`
}

// AccessTeam is one Cloudflare Access team: its domain and its signing
// keys.
type AccessTeam struct {
	// Domain is the team's domain, "<team>.cloudflareaccess.com"; its
	// tokens' issuer is "https://" and the domain.
	Domain string `json:"domain"`
	// Keys is the team's certs document, its JSON Web Key Set, as
	// Cloudflare publishes it at https://<domain>/cdn-cgi/access/certs.
	Keys string `json:"keys"`
}

// Listener is one Gateway listener (or ListenerSet entry). Listeners with
// the same hostname and port are merged.
type Listener struct {
	// Name is shown in metrics and errors, e.g. "ns/gateway/http".
	Name string `json:"name"`
	// Hostname is exact, a wildcard ("*.example.com") or empty for any host.
	Hostname string `json:"hostname,omitempty"`
	// Port is the Gateway listener's port. Direct listeners (standalone,
	// in-cluster) serve only the listeners of their port; the origin
	// listener for cloudflared serves every port, choosing by hostname.
	Port int `json:"port,omitempty"`
	// Protocol is HTTP, HTTPS, TCP or TLS. TCP and TLS listeners take
	// stream routes only (Route.Stream), and HTTP and HTTPS listeners
	// the others. Where every port is served
	// at once (the origin listener, a plain listener for all ports), a
	// request is first given to the listeners of the scheme the client
	// used, so the common pair "HTTP on 80 redirects, HTTPS on 443 serves"
	// works for one hostname; a host with listeners of the other scheme
	// only is served by those.
	Protocol string `json:"protocol"`
	// Address is the Gateway's own IP address, when the controller gives
	// each Gateway one. A proxy serving gateway addresses
	// (Listeners.Gateways) opens Address:Port and answers there with the
	// listeners of that address and port only, so one Gateway's routes
	// never answer on another's address.
	Address string `json:"address,omitempty"`
	// Certificates terminate TLS, chosen by the client's SNI among the
	// listeners of one socket (each listener's hostname). An HTTPS
	// listener has them on its Gateway address, where the origin
	// listeners ignore them: there TLS ended at Cloudflare's edge. A TLS
	// listener with certificates terminates (the Gateway API's TLS mode
	// Terminate) wherever it is served, its origin ports included, and
	// its routes relay the plaintext; without them it passes the
	// client's TLS through. The TLS listeners of one socket all have
	// certificates or none have.
	Certificates []Certificate `json:"certificates,omitempty"`
	// ClientValidation asks the clients of an HTTPS listener on its
	// Gateway address for a certificate at the handshake (the Gateway's
	// spec.tls.frontend). The Gateway API sets it per port, so the
	// listeners of one address and port carry the same one. Where no
	// handshake with the client happens here (the origin listeners behind
	// the tunnel, plain direct listeners), a listener that requires a
	// valid certificate fails closed: 403.
	ClientValidation *ClientValidation `json:"clientValidation,omitempty"`
	// EncodedSlashes is what an encoded slash or backslash in a request
	// path ("%2F", "%5C", or '\' as sent) means on this listener:
	// SlashesReject, SlashesDecode or SlashesKeep; empty for the proxy's
	// own default (its -encoded-slashes flag, SlashesReject unless set).
	// Listeners merged by hostname take the strictest of theirs.
	EncodedSlashes string `json:"encodedSlashes,omitempty"`
	// HealthCheck, when set, has the proxy answer a load balancer
	// monitor's requests itself: a request for one of the listener's
	// hosts that carries the check's path and token gets the state of
	// the routes serving that host (200 while each can send to a
	// backend, 503 when one cannot), not a route's answer. The
	// controller sets it for a load balanced hostname. Only the origin
	// listeners answer it (docs/proxy.md, "Health answers for load
	// balancer monitors"); HTTP and HTTPS listeners only.
	HealthCheck *HealthCheck `json:"healthCheck,omitempty"`
}

// HealthCheck is how a load balancer monitor's request is told from any
// other (Listener.HealthCheck). A request with the path but without the
// token is routed as every other: an application's own path of that name
// keeps working, and whoever lacks the token learns nothing.
type HealthCheck struct {
	// Path is the monitor's path, absolute and in the normal form the
	// router compares ("/.tunnelgate/health"). A request's query is not
	// compared.
	Path string `json:"path"`
	// Header is the name of the request header field the monitor sends
	// Token in: a token (RFC 9110 §5.1), compared without case.
	Header string `json:"header"`
	// Token is the value Header must have, at least MinHealthTokenLen
	// bytes. It is a secret, like SessionKeys: whoever has it may read
	// the health of the listener's hosts, and nothing else.
	Token string `json:"token"`
}

// MinHealthTokenLen is the shortest HealthCheck.Token a proxy takes.
const MinHealthTokenLen = 16

// What an encoded slash in a request path means (Listener.EncodedSlashes).
// A backend that decodes "%2F" into '/' (Python's http.server, Go's
// http.FileServer, many frameworks) would serve "/admin%2Fsecret" as
// "/admin/secret", which a router that keeps the escape reads as one
// path element "admin%2Fsecret", matched by "/" and not by "/admin".
const (
	// SlashesReject answers 400 to a path with one: the router and every
	// backend agree on what the rest name.
	SlashesReject = "Reject"
	// SlashesDecode reads each as '/' before routing (then merges
	// slashes and removes dot segments again), and forwards the result.
	SlashesDecode = "Decode"
	// SlashesKeep keeps them escaped, as data inside a path element, for
	// applications whose paths carry them (a name with a '/' in it); a
	// backend that decodes them may then serve what another rule, or
	// Cloudflare Access on it, covers.
	SlashesKeep = "Keep"
)

// ClientValidation is how an HTTPS listener checks client certificates.
type ClientValidation struct {
	// CACertificates are the PEM certificates of the CAs a client
	// certificate must chain to.
	CACertificates string `json:"caCertificates"`
	// AllowInsecureFallback admits clients whose certificate is missing
	// or does not verify (the Gateway API's AllowInsecureFallback mode);
	// without it the handshake fails for them.
	AllowInsecureFallback bool `json:"allowInsecureFallback,omitempty"`
}

// Certificate is a PEM certificate chain and its private key.
type Certificate struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
}

// Listener protocols.
const (
	ListenerHTTP  = "HTTP"
	ListenerHTTPS = "HTTPS"
	// ListenerTCP relays each connection whole to a backend of the one
	// TCPRoute on the listener.
	ListenerTCP = "TCP"
	// ListenerTLS relays each TLS connection whole, not terminated, to a
	// backend of the TLSRoute whose hostnames take the server name of the
	// connection's ClientHello (the Gateway API's TLS mode Passthrough).
	ListenerTLS = "TLS"
)

// RouteKind is the kind of the Gateway API route a route came from. For
// HTTP routes it shapes error responses (gRPC clients get a grpc-status,
// not an HTML body); TCPRoutes and TLSRoutes are stream routes.
type RouteKind string

const (
	KindHTTP RouteKind = "HTTPRoute"
	KindGRPC RouteKind = "GRPCRoute"
	KindTCP  RouteKind = "TCPRoute"
	KindTLS  RouteKind = "TLSRoute"
)

// Stream reports whether routes of kind k are stream routes: TCPRoutes
// and TLSRoutes, which relay connections, not requests.
func (k RouteKind) Stream() bool { return k == KindTCP || k == KindTLS }

// Route is one Gateway API route with its rules, attached to listeners.
//
// A stream route (a TCPRoute or TLSRoute, RouteKind.Stream) relays whole
// connections: it attaches to listeners of protocol TCP (a TCPRoute) or
// TLS (a TLSRoute) only, and has exactly one rule, which has Backends and
// nothing else (no matches, filters, timeouts or Access): each connection
// goes to one backend chosen by weight, and a backend's share with a
// Status is refused (the connection is closed before anything is
// relayed), as the Gateway API asks of a backend that does not resolve.
// Its backends name clusters of protocol ProtoTCP.
type Route struct {
	Kind      RouteKind `json:"kind"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	// Created breaks precedence ties: the older route wins.
	Created time.Time `json:"created"`
	// Listeners are the names of the listeners the route is attached to.
	Listeners []string `json:"listeners"`
	// Hostnames are the route's hostnames after intersection with each
	// listener's; empty means every host the listener accepts. A
	// TLSRoute's are the server names (SNI) it takes; a TCPRoute has
	// none.
	Hostnames []string `json:"hostnames,omitempty"`
	Rules     []Rule   `json:"rules"`
	// OriginPort is, for a stream route served through a tunnel, the port
	// the proxy opens for it beside its origin listeners (on their
	// host), where cloudflared sends the route's streams: cloudflared
	// passes an origin the visitor's bytes alone, with no hostname, so
	// each such route needs a port of its own. 0 for a route not served
	// through a tunnel, and for HTTP routes. A config holds each port
	// once.
	OriginPort int `json:"originPort,omitempty"`
}

// Rule is one route rule: how to match, what to do, where to send.
type Rule struct {
	// Name is the rule's sectionName, when it has one.
	Name string `json:"name,omitempty"`
	// Matches are ORed; there is at least one. A rule for every request
	// has one match with the path PathPrefix "/".
	Matches []Match `json:"matches"`
	// Filters run in order on every request the rule matches.
	Filters []Filter `json:"filters,omitempty"`
	// Backends share traffic by weight. None (or all weights zero) and no
	// redirect answers 500, as the spec requires.
	Backends []BackendRef `json:"backends,omitempty"`
	// FailStatus, when set, answers every request of this rule with that
	// status: translate uses it to fail closed on a filter or setting it
	// cannot honour (500).
	FailStatus         int                 `json:"failStatus,omitempty"`
	Timeouts           *Timeouts           `json:"timeouts,omitempty"`
	Retry              *Retry              `json:"retry,omitempty"`
	SessionPersistence *SessionPersistence `json:"sessionPersistence,omitempty"`
	// Access, when set, lets through only requests carrying a Cloudflare
	// Access token it accepts; the others get 403 (gRPC: PERMISSION_DENIED).
	Access *Access `json:"access,omitempty"`
}

// Access is what a protected rule asks of a request's Cloudflare Access
// token (Cf-Access-Jwt-Assertion, else the CF_Authorization cookie).
type Access struct {
	// Team is the Domain of one of Config.AccessTeams, whose keys sign
	// the tokens.
	Team string `json:"team"`
	// Audiences are the Access applications' AUD tags: a token must be
	// issued for one.
	Audiences []string `json:"audiences"`
	// Emails, EmailDomains, Groups and ServiceTokens (client IDs), when
	// any is set, are who may pass: a token must match one entry of one
	// of them.
	Emails        []string `json:"emails,omitempty"`
	EmailDomains  []string `json:"emailDomains,omitempty"`
	Groups        []string `json:"groups,omitempty"`
	ServiceTokens []string `json:"serviceTokens,omitempty"`
	// The request headers the backend gets the token's identity in: its
	// email, subject (the user's ID), groups (comma-separated) and
	// service token client ID. Any copy the client sent is removed; an
	// empty name sends none.
	EmailHeader        string `json:"emailHeader,omitempty"`
	SubjectHeader      string `json:"subjectHeader,omitempty"`
	GroupsHeader       string `json:"groupsHeader,omitempty"`
	ServiceTokenHeader string `json:"serviceTokenHeader,omitempty"`
}

// Match is one entry of a rule's matches. All conditions must hold.
type Match struct {
	// Path is required; the other conditions are optional.
	Path    *PathMatch   `json:"path"`
	Method  string       `json:"method,omitempty"`
	Headers []ValueMatch `json:"headers,omitempty"`
	Query   []ValueMatch `json:"query,omitempty"`
	// Precedence ranks matches that tie on host, path kind and prefix
	// length, higher first (matcher.Rule.Precedence). 0 for HTTPRoutes;
	// translate sets it for GRPCRoute method matches.
	Precedence int `json:"precedence,omitempty"`
}

// Path match types, spelled as in the Gateway API.
const (
	PathPrefix = "PathPrefix"
	PathExact  = "Exact"
	PathRegex  = "RegularExpression"
)

// PathMatch compares the normalised request path.
type PathMatch struct {
	Type  string `json:"type"` // PathPrefix, Exact or RegularExpression
	Value string `json:"value"`
}

// Value match types for headers and query parameters.
const (
	MatchExact = "Exact"
	MatchRegex = "RegularExpression"
)

// ValueMatch compares one header or query parameter.
type ValueMatch struct {
	Type  string `json:"type"` // Exact or RegularExpression
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Filter types, spelled as in the Gateway API.
const (
	FilterRequestHeaderModifier  = "RequestHeaderModifier"
	FilterResponseHeaderModifier = "ResponseHeaderModifier"
	FilterRequestRedirect        = "RequestRedirect"
	FilterURLRewrite             = "URLRewrite"
	FilterRequestMirror          = "RequestMirror"
	FilterCORS                   = "CORS"
)

// Filter is one route or backend filter. Exactly the field named by Type
// is set.
type Filter struct {
	Type                   string          `json:"type"`
	RequestHeaderModifier  *HeaderModifier `json:"requestHeaderModifier,omitempty"`
	ResponseHeaderModifier *HeaderModifier `json:"responseHeaderModifier,omitempty"`
	RequestRedirect        *Redirect       `json:"requestRedirect,omitempty"`
	URLRewrite             *Rewrite        `json:"urlRewrite,omitempty"`
	RequestMirror          *Mirror         `json:"requestMirror,omitempty"`
	CORS                   *CORS           `json:"cors,omitempty"`
}

// Clusters yields the cluster the filter names, if any, and reports
// whether yield asked for more. A filter type whose settings name a
// cluster is walked here (Rule.Clusters), or its cluster is left out of
// the configs of planes (TestClustersYieldsEveryClusterField).
func (f *Filter) Clusters(yield func(name string) bool) bool {
	if f.RequestMirror != nil {
		return yield(f.RequestMirror.Cluster)
	}
	return true
}

// Header is a name and a value.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// HeaderModifier edits headers: Set replaces, Add appends, Remove deletes.
// Names are case-insensitive.
type HeaderModifier struct {
	Set    []Header `json:"set,omitempty"`
	Add    []Header `json:"add,omitempty"`
	Remove []string `json:"remove,omitempty"`
}

// Path modifier types, spelled as in the Gateway API.
const (
	ReplaceFullPath   = "ReplaceFullPath"
	ReplacePrefixPath = "ReplacePrefixMatch"
)

// PathModifier replaces the whole path or the prefix the rule matched.
type PathModifier struct {
	Type               string `json:"type"` // ReplaceFullPath or ReplacePrefixMatch
	ReplaceFullPath    string `json:"replaceFullPath,omitempty"`
	ReplacePrefixMatch string `json:"replacePrefixMatch,omitempty"`
}

// Redirect answers with a redirect instead of proxying. Unset fields but
// StatusCode keep the request's own value; StatusCode is required.
type Redirect struct {
	Scheme     string        `json:"scheme,omitempty"`
	Hostname   string        `json:"hostname,omitempty"`
	Path       *PathModifier `json:"path,omitempty"`
	Port       int           `json:"port,omitempty"`
	StatusCode int           `json:"statusCode"`
}

// Rewrite changes the request before it is proxied.
type Rewrite struct {
	Hostname string        `json:"hostname,omitempty"`
	Path     *PathModifier `json:"path,omitempty"`
}

// Mirror copies requests to another cluster and ignores the answers. With
// neither Percent nor Fraction every request is mirrored.
type Mirror struct {
	Cluster  string    `json:"cluster"`
	Percent  *int      `json:"percent,omitempty"`
	Fraction *Fraction `json:"fraction,omitempty"`
}

// Fraction is Numerator/Denominator; both are required.
type Fraction struct {
	Numerator   int `json:"numerator"`
	Denominator int `json:"denominator"`
}

// CORS is the HTTPCORSFilter.
type CORS struct {
	AllowOrigins     []string `json:"allowOrigins,omitempty"`
	AllowCredentials bool     `json:"allowCredentials,omitempty"`
	AllowMethods     []string `json:"allowMethods,omitempty"`
	AllowHeaders     []string `json:"allowHeaders,omitempty"`
	ExposeHeaders    []string `json:"exposeHeaders,omitempty"`
	// MaxAge is in seconds, at least 1.
	MaxAge int `json:"maxAge"`
}

// BackendRef is one weighted destination of a rule.
type BackendRef struct {
	// Cluster names an entry of Config.Clusters. Empty only with Status.
	Cluster string `json:"cluster,omitempty"`
	// Weight is the relative share of traffic; 0 receives none.
	Weight int `json:"weight"`
	// Status, when set, answers this backend's share of requests with that
	// status instead of proxying: 500 for a ref that does not resolve, 502
	// for a backend that wants TLS but has no BackendTLSPolicy.
	Status int `json:"status,omitempty"`
	// Filters run after the rule's filters, for this backend only.
	Filters []Filter `json:"filters,omitempty"`
}

// Timeouts bound the time to response headers; a streaming body is not cut
// off once headers have arrived.
type Timeouts struct {
	// Request bounds the whole exchange up to response headers, retries
	// and backoff included.
	Request Duration `json:"request,omitempty"`
	// BackendRequest bounds each attempt to a backend.
	BackendRequest Duration `json:"backendRequest,omitempty"`
}

// Retry is HTTPRouteRetry.
type Retry struct {
	// Codes are the response statuses that are retried. Connection
	// failures (dial errors, a reset before any response) are always
	// retried when Attempts allows.
	Codes []int `json:"codes,omitempty"`
	// Attempts is the number of retries after the first try.
	Attempts int `json:"attempts"`
	// Backoff is the least wait before each retry; it doubles per retry
	// up to ten times itself, with jitter.
	Backoff Duration `json:"backoff,omitempty"`
}

// Session persistence types and cookie lifetimes, spelled as in the
// Gateway API.
const (
	SessionCookie = "Cookie"
	SessionHeader = "Header"

	LifetimeSession   = "Session"
	LifetimePermanent = "Permanent"
)

// SessionPersistence pins a client to one endpoint.
type SessionPersistence struct {
	// Name is the cookie or header name.
	Name string `json:"name"`
	Type string `json:"type"` // Cookie or Header
	// AbsoluteTimeout ends a session this long after it began.
	AbsoluteTimeout Duration `json:"absoluteTimeout,omitempty"`
	// IdleTimeout ends a session not used for this long.
	IdleTimeout Duration `json:"idleTimeout,omitempty"`
	// Lifetime is Session (a browser-session cookie) or Permanent (the
	// cookie carries Max-Age from AbsoluteTimeout).
	Lifetime string `json:"lifetime"`
	// Path is the cookie's Path attribute; empty is "/".
	Path string `json:"path,omitempty"`
}

// Cluster protocols.
const (
	// ProtoHTTP1 is cleartext HTTP/1.1.
	ProtoHTTP1 = "http1"
	// ProtoH2C is cleartext HTTP/2 with prior knowledge (gRPC's default).
	ProtoH2C = "h2c"
	// ProtoTLS is HTTP over TLS: HTTP/2 when TLS.H2 is set and the server
	// agrees in ALPN, else HTTP/1.1.
	ProtoTLS = "tls"
	// ProtoTCP is bytes relayed as they come, for stream routes (a TLS
	// passthrough connection's TLS is the client's, end to end). Only
	// stream routes name clusters of this protocol. With TLS settings,
	// the connections the proxy terminated (on a TLS listener with
	// certificates) reach the cluster over TLS, re-encrypted with those
	// settings (H2 aside: no ALPN is offered); connections it did not
	// terminate are relayed to it as they come.
	ProtoTCP = "tcp"
)

// Cluster is a named set of endpoints that share one protocol and TLS
// identity: one Service port, ServiceImport or ExternalBackend.
type Cluster struct {
	Name     string `json:"name"`
	Protocol string `json:"protocol"` // ProtoHTTP1, ProtoH2C, ProtoTLS or ProtoTCP
	// Endpoints are the ready addresses. None answers 503.
	Endpoints []Endpoint   `json:"endpoints"`
	TLS       *TLSSettings `json:"tls,omitempty"`
}

// Endpoint is one address to dial: "ip:port" or "dns-name:port".
type Endpoint struct {
	Address string `json:"address"`
}

// TLSSettings is how the proxy speaks TLS to a cluster (BackendTLSPolicy).
type TLSSettings struct {
	// SNI is the server name sent and, unless SANs are given, verified.
	SNI string `json:"sni"`
	// CAPEM holds the trusted CA certificates. Empty means the system
	// roots (BackendTLSPolicy's wellKnownCACertificates: System).
	CAPEM string `json:"caPEM,omitempty"`
	// SANs, when set, replace the SNI check: the certificate must carry
	// one of these DNS names or URIs.
	SANDNSNames []string `json:"sanDNSNames,omitempty"`
	SANURIs     []string `json:"sanURIs,omitempty"`
	// ClientCertPEM and ClientKeyPEM are the proxy's client certificate,
	// sent when the backend asks.
	ClientCertPEM string `json:"clientCertPEM,omitempty"`
	ClientKeyPEM  string `json:"clientKeyPEM,omitempty"`
	// H2 offers HTTP/2 in ALPN (gRPC over TLS needs it).
	H2 bool `json:"h2,omitempty"`
	// MinVersion is the least TLS version, "1.2" (when empty) or "1.3".
	MinVersion string `json:"minVersion,omitempty"`
}

// TLS versions TLSSettings.MinVersion takes.
const (
	TLS12 = "1.2"
	TLS13 = "1.3"
)

// Duration is a time.Duration written as Go spells it ("1.5s", "250ms").
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string such as "10s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"10s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

// DecodeConfig reads a JSON config strictly: an unknown field is an
// error, since a field this proxy does not know is a setting it would
// silently ignore.
func DecodeConfig(b []byte, cfg *Config) error {
	if err := decodeStrict(b, cfg); err != nil {
		return fmt.Errorf("decoding config: %w", err)
	}
	return nil
}
