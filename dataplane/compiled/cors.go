// This file compiles and applies CORS.

package compiled

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// CORS header names, in canonical form so they index an http.Header
// directly.
const (
	corsHdrOrigin           = "Origin"
	corsHdrReqMethod        = "Access-Control-Request-Method"
	corsHdrReqHeaders       = "Access-Control-Request-Headers"
	corsHdrAllowOrigin      = "Access-Control-Allow-Origin"
	corsHdrAllowCredentials = "Access-Control-Allow-Credentials"
	corsHdrAllowMethods     = "Access-Control-Allow-Methods"
	corsHdrAllowHeaders     = "Access-Control-Allow-Headers"
	corsHdrExposeHeaders    = "Access-Control-Expose-Headers"
	corsHdrMaxAge           = "Access-Control-Max-Age"
	corsHdrVary             = "Vary"
)

// Constant header values. Like the precomputed values of a compiled cors,
// they are stored into response headers as they are, so they are shared:
// every one has len == cap (an append copies) and nothing may change their
// elements.
var (
	corsValStar   = []string{"*"}
	corsValTrue   = []string{"true"}
	corsValOrigin = []string{"Origin"}
	// corsValMethods echo the standard methods without allocating.
	corsValMethods = map[string][]string{
		"GET": {"GET"}, "HEAD": {"HEAD"}, "POST": {"POST"}, "PUT": {"PUT"},
		"DELETE": {"DELETE"}, "CONNECT": {"CONNECT"}, "OPTIONS": {"OPTIONS"},
		"TRACE": {"TRACE"}, "PATCH": {"PATCH"},
	}
)

// Origin forms and wildcards.
const (
	corsOriginExact  uint8 = iota // host compared whole
	corsOriginSuffix              // "*.example.com": host ends in ".example.com"
	corsOriginAny                 // "*" as the whole host: any host
)

// corsOrigin is a parsed origin or allowOrigins pattern. Its strings are parts
// of the text it was parsed from.
type corsOrigin struct {
	scheme string // "http" or "https"
	// host is the host as written (case kept), an IPv6 literal with its
	// brackets; for corsOriginSuffix it is the suffix with its leading '.'.
	host string
	port int // explicit or the scheme's default
	wild uint8
}

// parseOrigin parses "<scheme>://<host>[:<port>]" as the Origin header and
// the Gateway API's CORSOrigin spell it. The scheme is http or https (any
// case); the host is dot-separated non-empty labels of letters, digits, '-'
// and '_' (253 bytes at most, no trailing dot), or an IPv6 literal in
// brackets; the port has 1–5 digits and is 1–65535. Nothing may follow: no
// path, not even "/", no userinfo, query or fragment. With pattern set the
// host may also be "*" or begin with "*." (the Gateway API wildcards).
// Every valid origin is thus a valid pattern.
func parseOrigin(s string, pattern bool) (o corsOrigin, ok bool) {
	i := strings.Index(s, "://")
	if i < 0 {
		return corsOrigin{}, false
	}
	switch {
	case strings.EqualFold(s[:i], "http"):
		o.scheme, o.port = "http", 80
	case strings.EqualFold(s[:i], "https"):
		o.scheme, o.port = "https", 443
	default:
		return corsOrigin{}, false
	}
	rest := s[i+3:]
	var host string
	if strings.HasPrefix(rest, "[") {
		j := strings.IndexByte(rest, ']')
		if j < 0 || !corsIPv6Literal(rest[1:j]) {
			return corsOrigin{}, false
		}
		host, rest = rest[:j+1], rest[j+1:]
	} else {
		j := strings.IndexByte(rest, ':')
		if j < 0 {
			j = len(rest)
		}
		host, rest = rest[:j], rest[j:]
		switch {
		case pattern && host == "*":
			o.wild = corsOriginAny
		case pattern && strings.HasPrefix(host, "*."):
			if !corsDNSName(host[2:]) {
				return corsOrigin{}, false
			}
			o.wild = corsOriginSuffix
			host = host[1:]
		case !corsDNSName(host):
			return corsOrigin{}, false
		}
	}
	o.host = host
	if rest != "" {
		if rest[0] != ':' || len(rest) < 2 || len(rest) > 6 {
			return corsOrigin{}, false
		}
		p := 0
		for k := 1; k < len(rest); k++ {
			c := rest[k]
			if c < '0' || c > '9' {
				return corsOrigin{}, false
			}
			p = p*10 + int(c-'0')
		}
		if p < 1 || p > 65535 {
			return corsOrigin{}, false
		}
		o.port = p
	}
	return o, true
}

// corsDNSName reports whether s is dot-separated non-empty labels of ASCII
// letters, digits, '-' and '_', 253 bytes at most. It is looser than a
// PreciseHostname on purpose: browsers send such origins (underscores,
// labels with leading '-'), and an origin that parses can be allowed by
// name.
func corsDNSName(s string) bool {
	if s == "" || len(s) > 253 || s[0] == '.' || s[len(s)-1] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
		case c == '.':
			if s[i-1] == '.' {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// corsIPv6Literal reports whether s, the inside of "[...]", is an IPv6
// address without zone. Origins are then compared as text (folding case),
// as browsers serialise addresses one way.
func corsIPv6Literal(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6() && a.Zone() == ""
}

// matches reports whether the request origin o is allowed by pattern p:
// same scheme, same port (a missing port is the scheme's default, so
// "https://a.com" and "https://a.com:443" are one origin) and the host
// compared case-insensitively, whole, by suffix for "*.example.com" (the
// wildcard is a greedy match of one or more labels to its left, so
// "a.b.example.com" matches and "example.com" does not) or not at all for
// a "*" host.
func (p *corsOrigin) matches(o *corsOrigin) bool {
	if p.scheme != o.scheme || p.port != o.port {
		return false
	}
	switch p.wild {
	case corsOriginAny:
		return true
	case corsOriginSuffix:
		return len(o.host) > len(p.host) && strings.EqualFold(o.host[len(o.host)-len(p.host):], p.host)
	}
	return strings.EqualFold(o.host, p.host)
}

// originMatches reports whether the request's Origin header value origin is
// allowed by the allowOrigins entry pattern of an HTTPCORSFilter.
//
// A lone "*" allows every origin, whatever it is, including "null" and
// malformed values. Any other pattern is "<scheme>://<host>[:<port>]",
// whose host may be "*" (any host) or begin with "*." (any one or more
// labels before the rest); it allows an origin with the same scheme, the
// same port (a missing port is 80 for http and 443 for https, on either
// side) and the same host compared case-insensitively. The "null" origin
// (sandboxed documents, file: URLs, some redirects) and malformed values
// are allowed by a lone "*" only; an invalid pattern allows nothing.
//
// originMatches does not allocate.
func originMatches(pattern, origin string) bool {
	if pattern == "*" {
		return true
	}
	p, ok := parseOrigin(pattern, true)
	if !ok {
		return false
	}
	o, ok := parseOrigin(origin, false)
	if !ok {
		return false
	}
	return p.matches(&o)
}

// CORS is a compiled HTTPCORSFilter. Header values that do not depend on
// the request are computed once; handle stores these slices into response
// headers as they are, so they are shared by every response: each has
// len == cap (so an append by a later stage copies) and no one may change
// their elements.
type CORS struct {
	origins     []corsOrigin
	anyOrigin   bool // allowOrigins holds "*"
	credentials bool
	// starOrigin: a lone "*" without credentials answers with
	// "Access-Control-Allow-Origin: *" on every response, so the answer
	// never depends on the request's Origin.
	starOrigin bool

	methods   []string // joined allowMethods; nil when none or wildcard
	anyMethod bool
	headers   []string // joined allowHeaders; nil when none or wildcard
	anyHeader bool
	expose    []string // joined exposeHeaders, or "*"; nil for none
	maxAge    []string
}

// compileCORS validates c and precomputes its header values. Origins must
// be "*" or parse as in originMatches; methods and header names must be
// RFC 9110 tokens or "*". A "*" among other values (which the Gateway API
// forbids) makes the list a wildcard. MaxAge must be at least 1 second:
// translate writes the Gateway API's default of 5.
func compileCORS(c *proxycfg.CORS) (*CORS, error) {
	if c == nil {
		return nil, errors.New("cors: missing filter body")
	}
	out := &CORS{credentials: c.AllowCredentials}
	for _, s := range c.AllowOrigins {
		if s == "*" {
			out.anyOrigin = true
			continue
		}
		o, ok := parseOrigin(s, true)
		if !ok {
			return nil, fmt.Errorf("cors: allowOrigins entry %q is not \"*\" or <scheme>://<host>[:<port>] with scheme http or https", s)
		}
		out.origins = append(out.origins, o)
	}
	if out.anyOrigin {
		out.origins = nil
		out.starOrigin = !out.credentials
	}

	var err error
	if out.methods, out.anyMethod, err = corsList("allowMethods", c.AllowMethods); err != nil {
		return nil, err
	}
	if out.headers, out.anyHeader, err = corsList("allowHeaders", c.AllowHeaders); err != nil {
		return nil, err
	}
	expose, anyExpose, err := corsList("exposeHeaders", c.ExposeHeaders)
	if err != nil {
		return nil, err
	}
	switch {
	case !anyExpose:
		out.expose = expose
	case !out.credentials:
		out.expose = corsValStar
		// With credentials a "*" would be read as a header named "*", and
		// the response headers are not known here: expose nothing beyond
		// the CORS-safelisted ones.
	}

	switch {
	case c.MaxAge < 1:
		return nil, fmt.Errorf("cors: maxAge %d is not a positive number of seconds (the Gateway API's default is 5)", c.MaxAge)
	default:
		out.maxAge = []string{strconv.Itoa(c.MaxAge)}
	}
	return out, nil
}

// corsList validates a list of methods or header names and joins it with
// ", " into a one-element slice. It reports a "*" entry as wildcard (the
// joined value is then nil), and an empty list as nil.
func corsList(field string, vals []string) (joined []string, wildcard bool, err error) {
	for _, v := range vals {
		if v == "*" {
			wildcard = true
			continue
		}
		if !httpsyntax.IsToken(v) {
			return nil, false, fmt.Errorf("cors: %s entry %q is not a token or \"*\"", field, v)
		}
	}
	if wildcard || len(vals) == 0 {
		return nil, wildcard, nil
	}
	return []string{strings.Join(vals, ", ")}, false, nil
}

// corsTokenList reports whether s is a comma-separated list of tokens with
// optional spaces and tabs around them; empty elements are allowed, as in
// RFC 9110's #rule, but at least one token must be there.
func corsTokenList(s string) bool {
	seen := false
	for elem := range httpsyntax.ListElems(s) {
		if !httpsyntax.IsToken(elem) {
			return false
		}
		seen = true
	}
	return seen
}

// Handle applies the filter to a request. reqHeader is the request's
// header (canonical keys), method its method, out the response header the
// filter adds to. It reports whether the request is a preflight: OPTIONS
// with an Origin and an Access-Control-Request-Method. The caller answers a
// preflight itself, 204 with no body, and does not proxy it.
//
// A preflight from an allowed origin gets:
//
//   - Access-Control-Allow-Origin: "*" for a lone "*" without credentials,
//     else the Origin echoed;
//   - Access-Control-Allow-Credentials: true, when allowCredentials is set;
//   - Access-Control-Allow-Methods: the allowMethods list; for "*", "*"
//     without credentials and the requested method echoed with them; none
//     when allowMethods is empty or the requested method is not a token;
//   - Access-Control-Allow-Headers, only when the request has
//     Access-Control-Request-Headers: the allowHeaders list; for "*", the
//     requested headers echoed, with or without credentials (a "*" would
//     not cover Authorization, which browsers want named); none when the
//     requested value is not a token list or allowHeaders is empty;
//   - Access-Control-Expose-Headers, as for other requests;
//   - Access-Control-Max-Age: maxAge, 5 by default.
//
// A preflight from an origin not allowed (or, unless allowOrigins is a lone
// "*" without credentials, with several Origin values) gets no header at
// all: the browser then fails it. Preflights get no Vary,
// since answers to OPTIONS are not cacheable.
//
// Other requests (the actual request, which is proxied) get, when the
// origin is allowed, Access-Control-Allow-Origin as above,
// Access-Control-Allow-Credentials and Access-Control-Expose-Headers (the
// list; for "*" without credentials "*", with credentials nothing). For a
// lone "*" without credentials these are added to every response, Origin
// or not, and without Vary, as the Fetch standard advises for a static
// answer. Otherwise the answer depends on the Origin, so "Vary: Origin" is
// added to every response, even one to a request without Origin, lest a
// cache hand it to a cross-origin request.
//
// Handle allocates nothing for a request without Origin, nor when it adds
// only constant values; echoing a value costs one small slice.
func (c *CORS) Handle(reqHeader http.Header, method string, out http.Header) (preflight bool) {
	originVals := reqHeader[corsHdrOrigin]
	reqMethod := reqHeader[corsHdrReqMethod]
	preflight = method == http.MethodOptions && len(originVals) > 0 && len(reqMethod) > 0 && reqMethod[0] != ""

	if !preflight {
		if c.starOrigin {
			out[corsHdrAllowOrigin] = corsValStar
			if c.expose != nil {
				out[corsHdrExposeHeaders] = c.expose
			}
			return false
		}
		corsAddVaryOrigin(out)
		if !c.allowed(originVals) {
			return false
		}
		out[corsHdrAllowOrigin] = []string{originVals[0]}
		if c.credentials {
			out[corsHdrAllowCredentials] = corsValTrue
		}
		if c.expose != nil {
			out[corsHdrExposeHeaders] = c.expose
		}
		return false
	}

	if !c.starOrigin && !c.allowed(originVals) {
		return true
	}
	if c.starOrigin {
		out[corsHdrAllowOrigin] = corsValStar
	} else {
		out[corsHdrAllowOrigin] = []string{originVals[0]}
	}
	if c.credentials {
		out[corsHdrAllowCredentials] = corsValTrue
	}
	switch {
	case c.methods != nil:
		out[corsHdrAllowMethods] = c.methods
	case c.anyMethod && !c.credentials:
		out[corsHdrAllowMethods] = corsValStar
	case c.anyMethod && httpsyntax.IsToken(reqMethod[0]):
		if v, ok := corsValMethods[reqMethod[0]]; ok {
			out[corsHdrAllowMethods] = v
		} else {
			out[corsHdrAllowMethods] = []string{reqMethod[0]}
		}
	}
	if reqHeaders := reqHeader[corsHdrReqHeaders]; len(reqHeaders) > 0 {
		switch {
		case c.headers != nil:
			out[corsHdrAllowHeaders] = c.headers
		case c.anyHeader:
			if echo, ok := corsEchoList(reqHeaders); ok {
				out[corsHdrAllowHeaders] = echo
			}
		}
	}
	if c.expose != nil {
		out[corsHdrExposeHeaders] = c.expose
	}
	out[corsHdrMaxAge] = c.maxAge
	return true
}

// allowed reports whether the request's Origin values name exactly one
// origin that the filter allows.
func (c *CORS) allowed(originVals []string) bool {
	if len(originVals) != 1 {
		return false
	}
	if c.anyOrigin {
		return true
	}
	o, ok := parseOrigin(originVals[0], false)
	if !ok {
		return false
	}
	for i := range c.origins {
		if c.origins[i].matches(&o) {
			return true
		}
	}
	return false
}

// corsEchoList returns the Access-Control-Request-Headers values as one
// header value to echo, if they form a non-empty token list.
func corsEchoList(vals []string) ([]string, bool) {
	v := vals[0]
	if len(vals) > 1 {
		v = strings.Join(vals, ",")
	}
	if !corsTokenList(v) {
		return nil, false
	}
	return []string{v}, true
}

// corsAddVaryOrigin adds "Origin" to the response's Vary header unless it
// (or "*") is already listed.
func corsAddVaryOrigin(out http.Header) {
	vary := out[corsHdrVary]
	if len(vary) == 0 {
		out[corsHdrVary] = corsValOrigin
		return
	}
	if httpsyntax.HasToken(vary, "*") || httpsyntax.HasToken(vary, "Origin") {
		return
	}
	out[corsHdrVary] = append(vary, "Origin")
}
