// This file implements stream routes compiled: their checks, and the choice of a route and a backend for a connection.

package dataplane

import (
	"crypto/tls"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/matcher"
)

// Stream routes (TCPRoutes and TLSRoutes, proxycfg.RouteKind.Stream)
// relay whole connections, not requests, so they take no part in the
// HTTP side of a compiled config: no rule, match or view holds them, and
// TCP and TLS listeners are in no view (views.go). A whole compile
// checks them and builds a streamTable beside the HTTP side:
//
//   - each stream route's one rule has backends and nothing else; each
//     backend names a cluster of protocol tcp, or carries a Status (its
//     share of connections is refused); a TCPRoute attaches only to TCP
//     listeners and has no hostnames, a TLSRoute only to TLS listeners;
//     HTTP routes never attach to TCP or TLS listeners, nor name a tcp
//     cluster;
//   - every OriginPort is within [1, 65535], held once, and none of the
//     origin listeners' own ports;
//   - each socket of its own (gateways.go) whose listeners are TCP or TLS
//     gets a streamSocket: its TCP route (the first in config order), or
//     its TLS listeners by server name, each with its TLSRoutes by
//     server name, and, when they carry certificates, the TLS
//     configuration that terminates there (buildServerTLS: a certificate
//     chosen by SNI among them, no ALPN);
//   - a TLSRoute with an OriginPort whose listeners carry certificates
//     terminates there with theirs; its listeners all carry them or
//     none does.
//
// A config patched (patch.go) keeps the served streamTable: a change to
// a stream route or to a TCP or TLS listener is compiled whole.

// isStreamListener reports whether l takes stream routes.
func isStreamListener(l *proxycfg.Listener) bool {
	return l.Protocol == proxycfg.ListenerTCP || l.Protocol == proxycfg.ListenerTLS
}

// streamTable is what a config's stream routes compiled to; immutable.
type streamTable struct {
	// routes are the stream routes by identity.
	routes map[proxycfg.RouteID]*streamRoute
	// sockets are the sockets of their own whose listeners are TCP or
	// TLS, with what each serves.
	sockets map[gatewayAddr]*streamSocket
	// origin are the routes served through a tunnel, by OriginPort.
	origin map[int]*streamRoute
}

// streamRoute is one stream route compiled.
type streamRoute struct {
	id proxycfg.RouteID
	// name is "namespace/name", its label in metrics and the access log.
	name     string
	backends []streamBackend
	total    int // the backends' weights summed
	stats    *observe.StreamStats
	// terminate is the TLS configuration its origin port terminates
	// with: its listeners' certificates; nil when they have none.
	terminate *tls.Config
}

// streamBackend is one backend of a stream route: a cluster, or a share
// refused (a backend with a Status).
type streamBackend struct {
	slot   *clusterSlot // nil when refused
	weight int
}

// pick chooses a backend by weight; false when the route has no weight
// at all.
func (r *streamRoute) pick() (streamBackend, bool) {
	if r.total <= 0 {
		return streamBackend{}, false
	}
	n := rand.IntN(r.total)
	for _, b := range r.backends {
		if n < b.weight {
			return b, true
		}
		n -= b.weight
	}
	return streamBackend{}, false // unreachable: n < total
}

// streamSocket is what one socket of its own of TCP or TLS listeners
// serves.
type streamSocket struct {
	tls bool
	// terminate is a TLS socket's TLS configuration when its listeners
	// carry certificates: the proxy terminates, and relays the
	// plaintext; nil passes the client's TLS through.
	terminate *tls.Config
	// tcp is a TCP socket's route: the first in config order attached to
	// one of its listeners.
	tcp *streamRoute
	// listeners are a TLS socket's listeners by their hostnames, each
	// with its routes by server name. A server name goes to the listener
	// whose hostname takes it most closely, and only that listener's
	// routes may take it, as for HTTP: so a route is served for the
	// intersection of its hostnames with its listener's, while a route's
	// own hostnames still rank it among the others there (a
	// TLSRoute "*.com" on a listener "*.example.com" takes
	// other.example.com, never other.com).
	listeners hostTable[sniTable]
	// byListener are the listeners' route tables, by listener name.
	byListener map[string]*sniTable
}

// route is the TLSRoute for server name name: the route its listener's
// table chooses; nil when no listener or route takes it, or the client
// sent none.
func (s *streamSocket) route(name string) *streamRoute {
	if l := s.listeners.lookup(name); l != nil {
		return l.lookup(name)
	}
	return nil
}

// sniTable chooses a TLSRoute by server name.
type sniTable = hostTable[streamRoute]

// hostTable chooses by server name: the exact hostname, then the longest
// wildcard, then the one filed for every name. Among those filed under
// the same hostname the first (in config order, the older) wins.
type hostTable[T any] struct {
	exact map[string]*T
	// wild are the wildcards' by suffix: "*.example.com" is
	// ".example.com", which takes one label or more before it.
	wild  map[string]*T
	every *T
}

// add files v under hostname h ("" for every server name), unless one
// came first there, and returns the one filed there.
func (t *hostTable[T]) add(h string, v *T) *T {
	h = normalHost(h)
	var m *map[string]*T
	switch {
	case h == "":
		if t.every == nil {
			t.every = v
		}
		return t.every
	case strings.HasPrefix(h, "*."):
		m, h = &t.wild, h[1:]
	default:
		m = &t.exact
	}
	if *m == nil {
		*m = map[string]*T{}
	}
	if (*m)[h] == nil {
		(*m)[h] = v
	}
	return (*m)[h]
}

// lookup is the one filed for server name name; nil when none takes it
// or the client sent none.
func (t *hostTable[T]) lookup(name string) *T {
	name = normalHost(name)
	if name == "" {
		return nil
	}
	if v := t.exact[name]; v != nil {
		return v
	}
	if t.wild != nil {
		for i := 0; i < len(name); i++ { // the first dot is the longest suffix
			if name[i] == '.' && i > 0 {
				if v := t.wild[name[i:]]; v != nil {
					return v
				}
			}
		}
	}
	return t.every
}

// normalHost is a hostname as tables hold it: lower case, without a
// trailing dot.
func normalHost(h string) string {
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// streamRoutes checks the config's stream routes and builds its
// streamTable; problems go to c.errs, each naming its route. c.byName,
// c.clusterIDs and c.cc.filed are set; originPorts are the ports of the
// origin listeners this proxy serves, which no OriginPort may take.
func (c *compiler) streamRoutes(originPorts []int) {
	t := &streamTable{routes: map[proxycfg.RouteID]*streamRoute{}, sockets: map[gatewayAddr]*streamSocket{}, origin: map[int]*streamRoute{}}
	c.cc.streams = t
	for i := range c.cfg.Listeners {
		l := &c.cfg.Listeners[i]
		e, ok := c.cc.filed.gatewayAt[l.Name]
		if !ok || !isStreamListener(l) {
			continue
		}
		s := t.sockets[e]
		if s == nil {
			s = &streamSocket{tls: l.Protocol == proxycfg.ListenerTLS}
			t.sockets[e] = s
		}
		if s.tls && l.Protocol == proxycfg.ListenerTLS {
			if s.byListener == nil {
				s.byListener = map[string]*sniTable{}
			}
			s.byListener[l.Name] = s.listeners.add(l.Hostname, &sniTable{})
		}
	}
	for e, s := range t.sockets {
		if !s.tls {
			continue
		}
		in := func(l *proxycfg.Listener) bool {
			a, ok := c.cc.filed.gatewayAt[l.Name]
			return ok && a == e && l.Protocol == proxycfg.ListenerTLS && len(l.Certificates) > 0
		}
		if !slices.ContainsFunc(c.cfg.Listeners, func(l proxycfg.Listener) bool { return in(&l) }) {
			continue
		}
		conf, err := terminatingTLS(c.cfg.Listeners, in, e.String())
		if err != nil {
			c.fail("%v", err)
			continue
		}
		s.terminate = conf
	}
	for ri := range c.cfg.Routes {
		r := &c.cfg.Routes[ri]
		if !r.Kind.Stream() || r.Name == "" { // routes() reports a route without name
			continue
		}
		sr := c.streamRoute(r)
		if sr == nil {
			continue
		}
		if t.routes[sr.id] != nil {
			c.fail("%s: defined twice", r.ID())
			continue
		}
		t.routes[sr.id] = sr
		c.originPort(t, r, sr, originPorts)
		c.fileStream(t, r, sr)
	}
}

// streamRoute checks one stream route and compiles it; nil when it has a
// problem, reported.
func (c *compiler) streamRoute(r *proxycfg.Route) *streamRoute {
	where := r.ID().String()
	n := len(c.errs)
	if len(r.Rules) != 1 {
		c.fail("%s: has %d rules; a stream route has exactly one", where, len(r.Rules))
		return nil
	}
	ru := &r.Rules[0]
	for _, bad := range []struct {
		field string
		set   bool
	}{
		{"matches", len(ru.Matches) > 0},
		{"filters", len(ru.Filters) > 0},
		{"failStatus", ru.FailStatus != 0},
		{"timeouts", ru.Timeouts != nil},
		{"retry", ru.Retry != nil},
		{"sessionPersistence", ru.SessionPersistence != nil},
		{"access", ru.Access != nil},
	} {
		if bad.set {
			c.fail("%s rules[0]: %s on a stream route, which has backends only", where, bad.field)
		}
	}
	sr := &streamRoute{id: r.ID(), name: r.Namespace + "/" + r.Name}
	for i := range ru.Backends {
		b := &ru.Backends[i]
		switch id, ok := c.clusterIDs[b.Cluster]; {
		case b.Weight < 0:
			c.fail("%s rules[0] backends[%d]: weight %d is negative", where, i, b.Weight)
		case len(b.Filters) > 0:
			c.fail("%s rules[0] backends[%d]: filters on a stream route's backend", where, i)
		case b.Status != 0:
			sr.backends = append(sr.backends, streamBackend{weight: b.Weight})
		case !ok:
			c.fail("%s rules[0] backends[%d]: cluster %q is not defined", where, i, b.Cluster)
		case c.cfg.Clusters[id].Protocol != proxycfg.ProtoTCP:
			c.fail("%s rules[0] backends[%d]: cluster %q is of protocol %q; a stream route's are %q", where, i, b.Cluster, c.cfg.Clusters[id].Protocol, proxycfg.ProtoTCP)
		default:
			sr.backends = append(sr.backends, streamBackend{slot: c.cc.clusters[id], weight: b.Weight})
		}
		sr.total += max(b.Weight, 0)
	}
	if r.Kind == proxycfg.KindTCP && len(r.Hostnames) > 0 {
		c.fail("%s: hostnames on a TCPRoute, which takes connections without a name", where)
	}
	for _, h := range r.Hostnames {
		hostOnly := matcher.Rule[int]{Hostnames: []string{h}, Path: matcher.EveryPath}
		if err := hostOnly.Validate(); err != nil {
			c.fail("%s: %v", where, err)
		}
	}
	want := proxycfg.ListenerTCP
	if r.Kind == proxycfg.KindTLS {
		want = proxycfg.ListenerTLS
	}
	for _, ln := range r.Listeners {
		switch l := c.byName[ln]; {
		case l == nil:
			c.fail("%s: listener %q is not defined", where, ln)
		case l.Protocol != want:
			c.fail("%s: listener %q is %s; a %s attaches to %s listeners only", where, ln, l.Protocol, r.Kind, want)
		}
	}
	if len(c.errs) > n {
		return nil
	}
	return sr
}

// terminatingTLS is the TLS configuration that terminates streams for
// the listeners in picks, named where in errors: their certificates,
// chosen by SNI as an HTTPS socket's are, without ALPN (the plaintext is
// the route's business).
func terminatingTLS(ls []proxycfg.Listener, in func(*proxycfg.Listener) bool, where string) (*tls.Config, error) {
	certs, err := buildCertificates(ls, in)
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certificateBySNI(certs, where)}, nil
}

// originPort checks r's OriginPort and files sr under it. A TLSRoute's
// origin port terminates with its listeners' certificates, when they
// carry them.
func (c *compiler) originPort(t *streamTable, r *proxycfg.Route, sr *streamRoute, originPorts []int) {
	port := r.OriginPort
	if port != 0 && r.Kind == proxycfg.KindTLS {
		var withCerts, without []string
		for _, ln := range r.Listeners {
			if l := c.byName[ln]; l != nil && len(l.Certificates) > 0 {
				withCerts = append(withCerts, ln)
			} else {
				without = append(without, ln)
			}
		}
		switch {
		case len(withCerts) > 0 && len(without) > 0:
			c.fail("%s: originPort %d serves listener %q, which terminates TLS, and listener %q, which passes it through; one port cannot do both", r.ID(), port, withCerts[0], without[0])
			return
		case len(withCerts) > 0:
			conf, err := terminatingTLS(c.cfg.Listeners, func(l *proxycfg.Listener) bool { return slices.Contains(withCerts, l.Name) }, "originPort "+strconv.Itoa(port))
			if err != nil {
				c.fail("%s: %v", r.ID(), err)
				return
			}
			sr.terminate = conf
		}
	}
	switch {
	case port == 0:
	case port < 0 || port > 65535:
		c.fail("%s: originPort %d out of range", r.ID(), port)
	case slices.Contains(originPorts, port):
		c.fail("%s: originPort %d is an origin listener's own port", r.ID(), port)
	case t.origin[port] != nil:
		c.fail("%s: originPort %d is %s's too", r.ID(), port, t.origin[port].id)
	default:
		t.origin[port] = sr
	}
}

// fileStream files sr under the sockets of its own of r's listeners: a
// TCP socket takes its first route; a TLS socket's listener takes each
// under its hostnames or, when it has none, for every name the listener
// takes.
func (c *compiler) fileStream(t *streamTable, r *proxycfg.Route, sr *streamRoute) {
	for _, ln := range r.Listeners {
		s := t.sockets[c.cc.filed.gatewayAt[ln]]
		if s == nil {
			continue // not placed on a socket of its own
		}
		if !s.tls {
			if s.tcp == nil {
				s.tcp = sr
			}
			continue
		}
		tbl := s.byListener[ln]
		if tbl == nil {
			continue // a TCP listener on a TLS socket: refused (gateways.go)
		}
		if len(r.Hostnames) == 0 {
			tbl.add("", sr)
		}
		for _, h := range r.Hostnames {
			tbl.add(h, sr)
		}
	}
}

// checkHTTPRoute reports what of an HTTP route only stream routes may
// do: attach to a TCP or TLS listener, or name a tcp cluster.
func (c *compiler) checkHTTPRoute(r *proxycfg.Route) {
	for _, ln := range r.Listeners {
		if l := c.byName[ln]; l != nil && isStreamListener(l) {
			c.fail("route %s/%s: listener %q is %s, which takes stream routes only", r.Namespace, r.Name, ln, l.Protocol)
		}
	}
	for i := range r.Rules {
		for name := range r.Rules[i].Clusters {
			if c.tcpCluster(name) {
				c.fail("route %s/%s rules[%d]: cluster %q is of protocol %q, which only stream routes name", r.Namespace, r.Name, i, name, proxycfg.ProtoTCP)
			}
		}
	}
}

// tcpCluster reports whether the config's cluster name is of protocol
// tcp.
func (c *compiler) tcpCluster(name string) bool {
	if c.tcpClusters == nil {
		c.tcpClusters = map[string]bool{}
		for i := range c.cfg.Clusters {
			if c.cfg.Clusters[i].Protocol == proxycfg.ProtoTCP {
				c.tcpClusters[c.cfg.Clusters[i].Name] = true
			}
		}
	}
	return c.tcpClusters[name]
}
