// This file defines the Rule and the Request.

package matcher

import (
	"net/http"
	"time"
)

// PathKind says how a rule's path is compared with the request path.
type PathKind uint8

const (
	// PathPrefix matches element by element: "/abc" matches "/abc", "/abc/"
	// and "/abc/def" but not "/abcd". A trailing "/" in the value is ignored.
	PathPrefix PathKind = iota
	// PathExact matches the whole path, byte for byte.
	PathExact
	// PathRegex matches when an RE2 expression matches the whole path.
	PathRegex
)

// String returns the Gateway API spelling of the kind.
func (k PathKind) String() string {
	switch k {
	case PathPrefix:
		return "PathPrefix"
	case PathExact:
		return "Exact"
	case PathRegex:
		return "RegularExpression"
	}
	return "PathKind(?)"
}

// Path is a rule's path condition. Every rule states one: the Gateway
// API's default for an absent path is EveryPath, and the caller writes it.
type Path struct {
	Kind  PathKind
	Value string
}

// EveryPath matches every path, with the lowest path precedence.
var EveryPath = Path{Kind: PathPrefix, Value: "/"}

// ValueMatch is one header or query parameter condition. Exact values are
// compared byte for byte; a Regex value is an RE2 expression that must match
// the whole value.
type ValueMatch struct {
	Name  string
	Value string
	Regex bool
}

// Key orders rules that tie on every request-derived criterion, in the order
// the Gateway API gives: the oldest route first, then "{namespace}/{name}"
// alphabetically, then rule order, then match order within the rule.
type Key struct {
	Created   time.Time
	Namespace string
	Name      string
	Rule      int
	Match     int
}

// Rule is one HTTPRoute match (one entry of a rule's matches list) with the
// hostnames it serves and an opaque reference returned when it wins.
type Rule[T any] struct {
	// Hostnames are exact ("foo.example.com") or wildcard ("*.example.com").
	// None means every host, with the lowest host precedence.
	Hostnames []string
	Path      Path
	// Method, when set, must equal the request method (case-sensitive).
	Method string
	// Headers must all match; names are case-insensitive. Only the first
	// condition per name counts, as the spec says; later ones are ignored.
	Headers []ValueMatch
	// Query must all match; names are case-sensitive. Only the first
	// condition per name counts.
	Query []ValueMatch
	// Precedence ranks rules that tie on host, path kind and prefix length,
	// before method and conditions: higher first. HTTPRoutes leave it 0.
	// GRPCRoute translation sets it on regular expressions (whose prefix
	// length is 0) so that more characters of matched gRPC service, then
	// of method, win, as the GRPCRoute spec orders them.
	Precedence int
	Key        Key
	Ref        T
}

// Request is what Match needs to know about a request.
type Request struct {
	// Host is the Host header or :authority; a port and one trailing dot are
	// ignored, case does not matter.
	Host string
	// Path is the escaped request path, normalised by NormalizePath.
	Path string
	// Method is the request method, e.g. "GET".
	Method string
	// Header is the request header with canonical keys, as net/http keeps it.
	Header http.Header
	// RawQuery is the query string without the leading "?", still escaped.
	RawQuery string
}
