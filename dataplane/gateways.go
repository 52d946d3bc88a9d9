// This file implements Gateway addresses: their sockets and TLS.

package dataplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/matcher"
)

// Sockets of their own. Beside the origin listeners, a proxy may serve the
// config's listeners on sockets of their own, in one of two modes:
//
//   - Gateway addresses (ServeOptions.Gateways): when the controller gives
//     each Gateway an IP address (Listener.Address), every Gateway is
//     served where its clients expect it: one socket per address and
//     port, answering with that Gateway's listeners only.
//   - Listener ports (Options.ListenerPorts): the proxy of one Gateway's
//     own data plane, behind its Service, serves every listener with a
//     port on that port alone: one socket per port on every local
//     address, answering with that port's listeners.
//
// Either way the sockets open and close as configs come and go, and
// HTTPS listeners terminate TLS there with their certificates, chosen by
// SNI the way requests choose a listener by Host: the exact hostname,
// then the longest wildcard, then a listener without hostname. How
// listeners are placed is decided at compile (placeGatewayListeners), so
// that a config the sockets cannot serve is refused.
//
// The origin listeners (cloudflared's) are unaffected: through the tunnel
// every Gateway of the class shares the edge, and hostnames tell them apart.
//
// A socket of its own of TCP or TLS listeners relays connections whole
// instead of serving HTTP (streamserve.go): it is placed, and checked,
// here like any other, and served there.

// placement is how listeners are given sockets of their own.
type placement struct {
	// byPort: a socket per port on every address, for every listener
	// with a port (Options.ListenerPorts); else a socket per Gateway
	// address and port, for the listeners with an address.
	byPort bool
	// streamHost, when valid, gives each TCP or TLS listener that the
	// above leaves without a socket one at its port on this host
	// (Options.StreamHost: standalone mode's, whose HTTP listeners all
	// share one socket).
	streamHost netip.Addr
}

// gatewayAddr is the address and port of a socket of its own: a Gateway
// address, or no address (the zero netip.Addr) for every local address.
type gatewayAddr struct {
	addr netip.Addr
	port int
}

// String is the address to listen on: "ip:port", or ":port" for every
// local address (IPv4 and, where the host has it, IPv6).
func (e gatewayAddr) String() string {
	if !e.addr.IsValid() {
		return ":" + strconv.Itoa(e.port)
	}
	return netip.AddrPortFrom(e.addr, uint16(e.port)).String()
}

// gatewayEndpoint is what one socket of its own serves.
type gatewayEndpoint struct {
	listeners *listenerSet
	// tls is nil where the listeners are plain HTTP. Handshakes take it
	// from the current config, so new certificates and client CAs apply
	// without reopening the socket.
	tls *tls.Config
}

// placeGatewayListeners finds the socket of each listener placed: by
// Gateway address and port, each listener that has an address; by port,
// each listener that has a port (one without is served only through the
// origin listeners); and, with a stream host, each TCP or TLS listener
// left with a port. It checks that the listeners of one socket agree on
// the protocol (the Gateway API calls a mix a conflict, which translate
// reports) and carry certificates where, and only where, they terminate
// TLS, and, either way, that addresses are IP addresses with a port.
// Sockets are keyed by listener name, the listener's identity
// (proxycfg's package doc), so a patch that keeps a listener keeps its
// place whatever memory the config it came in uses.
func placeGatewayListeners(ls []proxycfg.Listener, how placement) (map[string]gatewayAddr, []error) {
	protocols := map[gatewayAddr]string{}
	at := map[string]gatewayAddr{}
	var errs []error
	for i := range ls {
		l := &ls[i]
		https := l.Protocol == proxycfg.ListenerHTTPS
		if !https && l.Protocol != proxycfg.ListenerTLS && len(l.Certificates) > 0 {
			errs = append(errs, fmt.Errorf("listener %q: certificates on a listener that is neither HTTPS nor TLS", l.Name))
		}
		var e gatewayAddr // port 0: not placed
		if l.Address != "" {
			addr, err := netip.ParseAddr(l.Address)
			if err != nil || addr.Zone() != "" {
				errs = append(errs, fmt.Errorf("listener %q: address %q is not an IP address", l.Name, l.Address))
				continue
			}
			if l.Port < 1 {
				errs = append(errs, fmt.Errorf("listener %q: an address needs a port", l.Name))
				continue
			}
			e = gatewayAddr{addr.Unmap(), l.Port}
		}
		if how.byPort && l.Port > 0 {
			e = gatewayAddr{port: l.Port}
		}
		if e.port == 0 && how.streamHost.IsValid() && isStreamListener(l) && l.Port > 0 {
			e = gatewayAddr{how.streamHost, l.Port}
		}
		if e.port == 0 {
			continue
		}
		if https && len(l.Certificates) == 0 {
			errs = append(errs, fmt.Errorf("listener %q: HTTPS on %s needs a certificate", l.Name, e))
		}
		if !https && l.ClientValidation != nil {
			errs = append(errs, fmt.Errorf("listener %q: client certificate validation on a listener that is not HTTPS", l.Name))
		}
		at[l.Name] = e
		// TLS listeners that terminate and pass through do not share a
		// socket (the Gateway API's mixed mode is not served).
		proto := l.Protocol
		if proto == proxycfg.ListenerTLS && len(l.Certificates) > 0 {
			proto += " (terminating)"
		} else if proto == proxycfg.ListenerTLS {
			proto += " (passthrough)"
		}
		if p, ok := protocols[e]; ok && p != proto {
			errs = append(errs, fmt.Errorf("listener %q: %s on %s, where another listener is %s", l.Name, proto, e, p))
		}
		protocols[e] = proto
	}
	return at, errs
}

// buildGatewayTLS builds the TLS configuration of each HTTPS socket of
// its own: its listeners' certificates and client validation. Every
// proxy checks them, whether it serves sockets of their own or not, so
// that a config one proxy would refuse is refused by all.
func buildGatewayTLS(ls []proxycfg.Listener, at map[string]gatewayAddr) (map[gatewayAddr]*tls.Config, error) {
	out := map[gatewayAddr]*tls.Config{}
	for i := range ls {
		l := &ls[i]
		e, placed := at[l.Name]
		if !placed || l.Protocol != proxycfg.ListenerHTTPS || out[e] != nil {
			continue
		}
		in := func(l *proxycfg.Listener) bool { a, ok := at[l.Name]; return ok && a == e }
		conf, err := buildServerTLS(ls, in, e)
		if err != nil {
			return nil, err
		}
		out[e] = conf
	}
	return out, nil
}

// gatewayEndpoints builds what each socket of its own of HTTP or HTTPS
// listeners serves: its listeners, and for HTTPS the TLS configuration
// compile built. Sockets of TCP and TLS listeners relay streams instead
// (stream.go).
func (f *filing) gatewayEndpoints(k keep) (map[gatewayAddr]*gatewayEndpoint, error) {
	out := map[gatewayAddr]*gatewayEndpoint{}
	for i := range f.listeners {
		e, placed := f.gatewayAt[f.listeners[i].Name]
		if !placed || out[e] != nil || isStreamListener(&f.listeners[i]) {
			continue
		}
		var prev *listenerSet
		if g := k.prev.gateways[e]; g != nil {
			prev = g.listeners
		}
		set, err := f.listenerSet(func(l *proxycfg.Listener) bool { a, ok := f.gatewayAt[l.Name]; return ok && a == e }, k, prev)
		if err != nil {
			return nil, err
		}
		out[e] = &gatewayEndpoint{listeners: set, tls: f.gatewayTLS[e]}
	}
	return out, nil
}

// buildCertificates parses the certificates of one address's listeners
// into a table chosen by server name. A listener's first certificate
// serves it; a listener without hostname is the default.
func buildCertificates(ls []proxycfg.Listener, in func(*proxycfg.Listener) bool) (*matcher.Table[*tls.Certificate], error) {
	var rules []matcher.Rule[*tls.Certificate]
	seen := map[string]bool{}
	for i := range ls {
		l := &ls[i]
		if !in(l) {
			continue
		}
		var first *tls.Certificate
		for j, c := range l.Certificates {
			pair, err := tls.X509KeyPair([]byte(c.Cert), []byte(c.Key))
			if err != nil {
				return nil, fmt.Errorf("listener %q: certificates[%d]: %w", l.Name, j, err)
			}
			if first == nil {
				first = &pair
			}
		}
		h := strings.ToLower(strings.TrimSuffix(l.Hostname, "."))
		if seen[h] {
			continue // merged listeners: the first one's certificate
		}
		seen[h] = true
		r := matcher.Rule[*tls.Certificate]{Path: matcher.EveryPath, Ref: first, Key: matcher.Key{Name: h}}
		if h != "" {
			r.Hostnames = []string{h}
		}
		rules = append(rules, r)
	}
	return matcher.Compile(rules)
}

// buildServerTLS is the TLS configuration of one HTTPS address and port:
// its listeners' certificates, chosen by SNI, and the client certificate
// validation its listeners share.
func buildServerTLS(ls []proxycfg.Listener, in func(*proxycfg.Listener) bool, e gatewayAddr) (*tls.Config, error) {
	certs, err := buildCertificates(ls, in)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"h2", "http/1.1"},
		GetCertificate: certificateBySNI(certs, e.String()),
	}
	var cv *proxycfg.ClientValidation
	var from string
	for i := range ls {
		l := &ls[i]
		if !in(l) {
			continue
		}
		if from != "" && !cv.Equal(l.ClientValidation) {
			return nil, fmt.Errorf("listener %q: client certificate validation differs from listener %q's on %s", l.Name, from, e)
		}
		cv, from = l.ClientValidation, l.Name
	}
	if cv == nil {
		return cfg, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(cv.CACertificates)) {
		return nil, fmt.Errorf("listener %q: client validation CA certificates hold no usable PEM certificate", from)
	}
	cfg.ClientCAs = pool
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	if cv.AllowInsecureFallback {
		// Asked for, so a client may present one, but never required
		// nor refused.
		cfg.ClientAuth = tls.RequestClientCert
	}
	return cfg, nil
}

// certificateBySNI chooses, from certs, the certificate for a client's
// server name, on the socket named where.
func certificateBySNI(certs *matcher.Table[*tls.Certificate], where string) func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		host := hello.ServerName
		if host == "" {
			host = "\x00" // matches only a listener without hostname
		}
		c, _ := certs.Match(&matcher.Request{Host: host, Path: "/"})
		if c == nil {
			return nil, fmt.Errorf("no certificate for server name %q on %s", hello.ServerName, where)
		}
		return c, nil
	}
}

// serverTLS is the TLS configuration for a handshake on address e of the
// current config.
func (p *Proxy) serverTLS(e gatewayAddr) (*tls.Config, error) {
	cc := p.current.Load()
	if cc == nil {
		return nil, errors.New("no configuration loaded yet")
	}
	ge := cc.gateways[e]
	if ge == nil || ge.tls == nil {
		return nil, fmt.Errorf("no HTTPS listener on %s", e)
	}
	return ge.tls, nil
}

// gatewayServers keeps one server per socket of its own of the current
// config.
type gatewayServers struct {
	p        *Proxy
	grace    time.Duration
	timeouts clientTimeouts

	mu      sync.Mutex
	servers map[gatewayAddr]*gatewayServer
	closed  bool
}

type gatewayServer struct {
	https bool
	srv   *http.Server
	ln    net.Listener
}

// sync opens the endpoints the current config has and this does not, and
// closes (gracefully, in the background) those it no longer has. An
// address that cannot be opened (its address is not on this machine, its
// port is taken) is logged and tried again at the next config.
func (g *gatewayServers) sync() {
	cc := g.p.current.Load()
	if cc == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	for e, s := range g.servers {
		ge := cc.gateways[e]
		if ge != nil && (ge.tls != nil) == s.https {
			continue
		}
		delete(g.servers, e)
		// The socket closes now, so that a config that brings the address
		// back can open it at once; requests in flight finish meanwhile.
		s.ln.Close()
		go shutdown(s.srv, g.grace)
	}
	for e, ge := range cc.gateways {
		if g.servers[e] != nil {
			continue
		}
		s, err := g.open(e, ge.tls != nil)
		if err != nil {
			g.p.opts.Log.Error("cannot serve a gateway address; retrying at the next config", "address", e.String(), "err", err)
			continue
		}
		g.servers[e] = s
	}
}

func (g *gatewayServers) open(e gatewayAddr, https bool) (*gatewayServer, error) {
	ln, err := net.Listen("tcp", e.String())
	if err != nil {
		return nil, err
	}
	var ps http.Protocols
	ps.SetHTTP1(true)
	srv := &http.Server{
		Handler:           &handler{p: g.p, port: e.port, gateway: e, isGateway: true, timeouts: g.timeouts},
		Protocols:         &ps,
		ReadHeaderTimeout: headTimeout,
		IdleTimeout:       idleTimeout,
		// "OPTIONS *" goes through the pipeline (a 400, logged and
		// counted) as on the origin listener, not net/http's 200.
		DisableGeneralOptionsHandler: true,
		// Failed handshakes (a client that does not trust the
		// certificate) are the client's business: logged at debug.
		ErrorLog: slog.NewLogLogger(g.p.opts.Log.Handler(), slog.LevelDebug),
	}
	if https {
		ps.SetHTTP2(true)
		srv.TLSConfig = &tls.Config{
			MinVersion:         tls.VersionTLS12,
			GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return g.p.serverTLS(e) },
		}
		go srv.ServeTLS(ln, "", "")
	} else {
		ps.SetUnencryptedHTTP2(true) // gRPC clients speak h2c with prior knowledge
		go srv.Serve(ln)
	}
	g.p.opts.Log.Info("serving a gateway address", "address", e.String(), "https", https)
	return &gatewayServer{https: https, srv: srv, ln: ln}, nil
}

// close stops every address's server within the grace period.
func (g *gatewayServers) close() {
	g.mu.Lock()
	g.closed = true
	servers := g.servers
	g.servers = nil
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() { defer wg.Done(); shutdown(s.srv, g.grace) }()
	}
	wg.Wait()
}

func shutdown(srv *http.Server, grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
}
