// This file implements Equal for every type.

package proxycfg

import (
	"slices"
	"time"
)

// Every type of a Config has an Equal method, so that whoever keeps work
// done for one config (the config server keeps each route's and
// cluster's JSON) can tell by content, not by where the value lives,
// whether the next config carries the same thing.
//
// Equal is strict: values that are Equal encode to the same JSON. So a
// nil slice or pointer differs from an empty one (JSON writes null and
// []), and times are equal when they are the same instant at the same
// UTC offset (what RFC 3339 writes). Each Equal is nil-safe: two nil
// pointers are equal, a nil and a non-nil one are not. Values in the
// same memory are equal without a look at their content, which makes
// comparing a config with one that shares most of its slices (as
// translate's outputs do) cheap.
//
// TestEqualComparesEveryField fails when a field or type is added
// without its comparison.

// Equal reports whether c and o are the same config.
func (c *Config) Equal(o *Config) bool {
	if c == o {
		return true
	}
	if c == nil || o == nil {
		return false
	}
	return c.Schema == o.Schema && c.Version == o.Version &&
		equalSlices(c.Listeners, o.Listeners, (*Listener).Equal) &&
		equalSlices(c.Routes, o.Routes, (*Route).Equal) &&
		equalSlices(c.Clusters, o.Clusters, (*Cluster).Equal) &&
		equalSessionKeys(c.SessionKeys, o.SessionKeys) &&
		equalSlices(c.AccessTeams, o.AccessTeams, (*AccessTeam).Equal)
}

// EqualRouting reports whether c and o are Equal but, at most, in their
// versions and their clusters' definitions: the clusters must still have
// the same names in the same order. A proxy serving c can serve o by
// replacing clusters alone, since everything it compiles (listeners,
// routes, the session keys, and clusters by their place in the list)
// is the same.
func (c *Config) EqualRouting(o *Config) bool {
	if c == nil || o == nil {
		return c == o
	}
	return c.EqualFrame(o) && equalSlices(c.Routes, o.Routes, (*Route).Equal)
}

// EqualFrame reports whether c and o are EqualRouting but, at most, in
// their routes: the same schema, listeners, session keys, Access teams,
// and cluster names in the same order. A proxy serving c may serve o by
// compiling the routes that differ alone.
func (c *Config) EqualFrame(o *Config) bool {
	if c == nil || o == nil {
		return c == o
	}
	return c.Schema == o.Schema &&
		equalSlices(c.Listeners, o.Listeners, (*Listener).Equal) &&
		equalSlices(c.Clusters, o.Clusters, func(a, b *Cluster) bool { return a.Name == b.Name }) &&
		equalSessionKeys(c.SessionKeys, o.SessionKeys) &&
		equalSlices(c.AccessTeams, o.AccessTeams, (*AccessTeam).Equal)
}

// Equal reports whether t and o are the same Access team.
func (t *AccessTeam) Equal(o *AccessTeam) bool {
	if t == o {
		return true
	}
	if t == nil || o == nil {
		return false
	}
	return t.Domain == o.Domain && t.Keys == o.Keys
}

// Equal reports whether a and o ask the same of a token.
func (a *Access) Equal(o *Access) bool {
	if a == o {
		return true
	}
	if a == nil || o == nil {
		return false
	}
	return a.Team == o.Team && equalValues(a.Audiences, o.Audiences) && equalValues(a.Emails, o.Emails) &&
		equalValues(a.EmailDomains, o.EmailDomains) && equalValues(a.Groups, o.Groups) &&
		equalValues(a.ServiceTokens, o.ServiceTokens) &&
		a.EmailHeader == o.EmailHeader && a.SubjectHeader == o.SubjectHeader &&
		a.GroupsHeader == o.GroupsHeader && a.ServiceTokenHeader == o.ServiceTokenHeader
}

// Equal reports whether l and o are the same listener.
func (l *Listener) Equal(o *Listener) bool {
	if l == o {
		return true
	}
	if l == nil || o == nil {
		return false
	}
	return l.Name == o.Name && l.Hostname == o.Hostname && l.Port == o.Port && l.Protocol == o.Protocol &&
		l.Address == o.Address && equalSlices(l.Certificates, o.Certificates, (*Certificate).Equal) &&
		l.ClientValidation.Equal(o.ClientValidation) && l.EncodedSlashes == o.EncodedSlashes &&
		l.HealthCheck.Equal(o.HealthCheck)
}

// Equal reports whether h and o are the same health check.
func (h *HealthCheck) Equal(o *HealthCheck) bool {
	if h == nil || o == nil {
		return h == o
	}
	return *h == *o
}

// Equal reports whether v and o are the same validation.
func (v *ClientValidation) Equal(o *ClientValidation) bool {
	if v == nil || o == nil {
		return v == o
	}
	return *v == *o
}

// Equal reports whether c and o are the same certificate and key.
func (c *Certificate) Equal(o *Certificate) bool {
	if c == nil || o == nil {
		return c == o
	}
	return *c == *o
}

// Equal reports whether r and o are the same route.
func (r *Route) Equal(o *Route) bool {
	if r == o {
		return true
	}
	if r == nil || o == nil {
		return false
	}
	return r.Kind == o.Kind && r.Namespace == o.Namespace && r.Name == o.Name && equalTimes(r.Created, o.Created) &&
		equalValues(r.Listeners, o.Listeners) && equalValues(r.Hostnames, o.Hostnames) &&
		equalSlices(r.Rules, o.Rules, (*Rule).Equal) && r.OriginPort == o.OriginPort
}

// Equal reports whether r and o are the same rule.
func (r *Rule) Equal(o *Rule) bool {
	if r == o {
		return true
	}
	if r == nil || o == nil {
		return false
	}
	return r.Name == o.Name && equalSlices(r.Matches, o.Matches, (*Match).Equal) &&
		equalSlices(r.Filters, o.Filters, (*Filter).Equal) &&
		equalSlices(r.Backends, o.Backends, (*BackendRef).Equal) &&
		r.FailStatus == o.FailStatus && r.Timeouts.Equal(o.Timeouts) && r.Retry.Equal(o.Retry) &&
		r.SessionPersistence.Equal(o.SessionPersistence) && r.Access.Equal(o.Access)
}

// Equal reports whether m and o are the same match.
func (m *Match) Equal(o *Match) bool {
	if m == o {
		return true
	}
	if m == nil || o == nil {
		return false
	}
	return m.Path.Equal(o.Path) && m.Method == o.Method &&
		equalSlices(m.Headers, o.Headers, (*ValueMatch).Equal) && equalSlices(m.Query, o.Query, (*ValueMatch).Equal) &&
		m.Precedence == o.Precedence
}

// Equal reports whether p and o are the same path match.
func (p *PathMatch) Equal(o *PathMatch) bool {
	if p == nil || o == nil {
		return p == o
	}
	return *p == *o
}

// Equal reports whether v and o are the same header or query match.
func (v *ValueMatch) Equal(o *ValueMatch) bool {
	if v == nil || o == nil {
		return v == o
	}
	return *v == *o
}

// Equal reports whether f and o are the same filter.
func (f *Filter) Equal(o *Filter) bool {
	if f == o {
		return true
	}
	if f == nil || o == nil {
		return false
	}
	return f.Type == o.Type && f.RequestHeaderModifier.Equal(o.RequestHeaderModifier) &&
		f.ResponseHeaderModifier.Equal(o.ResponseHeaderModifier) && f.RequestRedirect.Equal(o.RequestRedirect) &&
		f.URLRewrite.Equal(o.URLRewrite) && f.RequestMirror.Equal(o.RequestMirror) && f.CORS.Equal(o.CORS)
}

// Equal reports whether h and o are the same header.
func (h *Header) Equal(o *Header) bool {
	if h == nil || o == nil {
		return h == o
	}
	return *h == *o
}

// Equal reports whether h and o make the same edits.
func (h *HeaderModifier) Equal(o *HeaderModifier) bool {
	if h == o {
		return true
	}
	if h == nil || o == nil {
		return false
	}
	return equalSlices(h.Set, o.Set, (*Header).Equal) && equalSlices(h.Add, o.Add, (*Header).Equal) &&
		equalValues(h.Remove, o.Remove)
}

// Equal reports whether p and o are the same path modifier.
func (p *PathModifier) Equal(o *PathModifier) bool {
	if p == nil || o == nil {
		return p == o
	}
	return *p == *o
}

// Equal reports whether r and o are the same redirect.
func (r *Redirect) Equal(o *Redirect) bool {
	if r == o {
		return true
	}
	if r == nil || o == nil {
		return false
	}
	return r.Scheme == o.Scheme && r.Hostname == o.Hostname && r.Path.Equal(o.Path) && r.Port == o.Port &&
		r.StatusCode == o.StatusCode
}

// Equal reports whether r and o are the same rewrite.
func (r *Rewrite) Equal(o *Rewrite) bool {
	if r == o {
		return true
	}
	if r == nil || o == nil {
		return false
	}
	return r.Hostname == o.Hostname && r.Path.Equal(o.Path)
}

// Equal reports whether m and o mirror alike.
func (m *Mirror) Equal(o *Mirror) bool {
	if m == o {
		return true
	}
	if m == nil || o == nil {
		return false
	}
	return m.Cluster == o.Cluster && equalPointers(m.Percent, o.Percent) && m.Fraction.Equal(o.Fraction)
}

// Equal reports whether f and o are the same fraction, as written (1/2
// and 2/4 differ).
func (f *Fraction) Equal(o *Fraction) bool {
	if f == nil || o == nil {
		return f == o
	}
	return *f == *o
}

// Equal reports whether c and o are the same CORS filter.
func (c *CORS) Equal(o *CORS) bool {
	if c == o {
		return true
	}
	if c == nil || o == nil {
		return false
	}
	return equalValues(c.AllowOrigins, o.AllowOrigins) && c.AllowCredentials == o.AllowCredentials &&
		equalValues(c.AllowMethods, o.AllowMethods) && equalValues(c.AllowHeaders, o.AllowHeaders) &&
		equalValues(c.ExposeHeaders, o.ExposeHeaders) && c.MaxAge == o.MaxAge
}

// Equal reports whether b and o are the same backend.
func (b *BackendRef) Equal(o *BackendRef) bool {
	if b == o {
		return true
	}
	if b == nil || o == nil {
		return false
	}
	return b.Cluster == o.Cluster && b.Weight == o.Weight && b.Status == o.Status &&
		equalSlices(b.Filters, o.Filters, (*Filter).Equal)
}

// Equal reports whether t and o are the same timeouts.
func (t *Timeouts) Equal(o *Timeouts) bool {
	if t == nil || o == nil {
		return t == o
	}
	return *t == *o
}

// Equal reports whether r and o retry alike.
func (r *Retry) Equal(o *Retry) bool {
	if r == o {
		return true
	}
	if r == nil || o == nil {
		return false
	}
	return equalValues(r.Codes, o.Codes) && r.Attempts == o.Attempts && r.Backoff == o.Backoff
}

// Equal reports whether s and o persist sessions alike.
func (s *SessionPersistence) Equal(o *SessionPersistence) bool {
	if s == nil || o == nil {
		return s == o
	}
	return *s == *o
}

// Equal reports whether c and o are the same cluster: name, protocol,
// endpoints in order and TLS settings.
func (c *Cluster) Equal(o *Cluster) bool {
	if c == o {
		return true
	}
	if c == nil || o == nil {
		return false
	}
	return c.Name == o.Name && c.Protocol == o.Protocol &&
		equalSlices(c.Endpoints, o.Endpoints, (*Endpoint).Equal) && c.TLS.Equal(o.TLS)
}

// Equal reports whether e and o are the same endpoint.
func (e *Endpoint) Equal(o *Endpoint) bool {
	if e == nil || o == nil {
		return e == o
	}
	return *e == *o
}

// Equal reports whether t and o are the same TLS settings.
func (t *TLSSettings) Equal(o *TLSSettings) bool {
	if t == o {
		return true
	}
	if t == nil || o == nil {
		return false
	}
	return t.SNI == o.SNI && t.CAPEM == o.CAPEM && equalValues(t.SANDNSNames, o.SANDNSNames) &&
		equalValues(t.SANURIs, o.SANURIs) && t.ClientCertPEM == o.ClientCertPEM &&
		t.ClientKeyPEM == o.ClientKeyPEM && t.H2 == o.H2 && t.MinVersion == o.MinVersion
}

// equalSlices reports whether a and b are both nil or both not, and
// their elements are equal in order.
func equalSlices[T any](a, b []T, equal func(*T, *T) bool) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	if len(a) > 0 && &a[0] == &b[0] {
		return true // one array
	}
	for i := range a {
		if !equal(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

// equalValues is equalSlices for elements == compares.
func equalValues[T comparable](a, b []T) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
}

// equalSessionKeys reports whether a and b hold the same keys in the same
// order, nil apart from empty as everywhere in Equal.
func equalSessionKeys(a, b [][]byte) bool {
	return equalSlices(a, b, func(x, y *[]byte) bool { return equalValues(*x, *y) })
}

// equalPointers reports whether a and b are both nil or point to equal
// values.
func equalPointers[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// equalTimes reports whether a and b are written alike in JSON: the same
// instant at the same UTC offset (the location's name is not written).
func equalTimes(a, b time.Time) bool {
	if !a.Equal(b) {
		return false
	}
	if a.Location() == b.Location() {
		return true
	}
	_, ao := a.Zone()
	_, bo := b.Zone()
	return ao == bo
}
