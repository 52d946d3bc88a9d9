// This file opens and serves the proxy's sockets.

package dataplane

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
)

// ServeOptions says where a proxy accepts traffic. Empty addresses are not
// opened.
type ServeOptions struct {
	// Origin is cloudflared's origin: HTTP/1.1, "host:port" or
	// "unix:/path". It serves every Gateway listener by hostname and trusts
	// forwarding headers unless UntrustedOrigin is set.
	Origin string
	// OriginTLS is the origin for hostnames carrying gRPC: TLS with ALPN h2
	// and http/1.1 (cloudflared speaks HTTP/2 to an origin only over TLS).
	OriginTLS string
	// OriginCert and OriginKey are PEM files for OriginTLS. Without them a
	// certificate is generated into CertDir, with its CA in
	// CertDir/origin-ca.crt for cloudflared's caPool. It is valid for
	// localhost, 127.0.0.1, ::1 and OriginServerName: the name the
	// controller tells cloudflared to expect (originServerName in the
	// tunnel's ingress document).
	OriginCert, OriginKey string
	// OriginClientCA, when set, is a PEM file of the CAs a client of
	// OriginTLS must present a certificate from: a dedicated plane that
	// takes its requests from the shared proxies (they relay them from
	// the class's tunnel) trusts their forwarding headers because nobody
	// else can complete the handshake.
	OriginClientCA   string
	CertDir          string
	OriginServerName string
	UntrustedOrigin  bool
	// OriginNetHTTP serves the origin listener with net/http's server
	// instead of the proxy's own HTTP/1.1 server (package http1); a
	// fallback should the own server misbehave with some client.
	OriginNetHTTP bool
	// Plain is a listener for direct clients (standalone mode, tests):
	// HTTP/1.1 and h2c, forwarding headers not trusted. PlainPort is the
	// Gateway listener port it serves; 0 serves every listener by hostname.
	Plain     string
	PlainPort int
	// Gateways serves every Gateway address of the config (Listener.Address)
	// on its own socket, opened and closed as configs change (gateways.go).
	// The addresses must be local to this machine. A proxy made with
	// Options.ListenerPorts serves its listener ports instead, and refuses
	// Gateways.
	Gateways bool
	// Admin serves health, readiness, metrics and pprof.
	Admin string
	// Grace is how long shutdown waits for in-flight requests; default 25 s.
	Grace time.Duration
	// BodyTimeout bounds a wait for the next bytes of a client's request
	// body (408 when it passes), and WriteTimeout a write to a client
	// that does not read (the connection is closed, its backend
	// connection released). Both count from the last progress, as nginx's
	// client_body_timeout and send_timeout; default 60 s each. They apply
	// on every listener but the admin one.
	BodyTimeout, WriteTimeout time.Duration
	// Ready, if set, is called with the bound addresses once every
	// listener is open (tests use ":0").
	Ready func(Bound)
}

// Bound are the addresses the listeners were bound to.
type Bound struct {
	Origin, OriginTLS, Plain, Admin string
	// OriginCA is the CA file cloudflared should trust for OriginTLS when
	// the certificate was generated.
	OriginCA string
}

// Serve opens the listeners and serves until ctx ends, then stops
// accepting and waits up to Grace for in-flight requests.
func (p *Proxy) Serve(ctx context.Context, l ServeOptions) error {
	l.setDefaults()
	if l.Gateways && p.opts.ListenerPorts {
		return errors.New("ServeOptions.Gateways and Options.ListenerPorts exclude each other: listeners are served on sockets of their own by Gateway address or by port, not both")
	}
	ownSockets := l.Gateways || p.opts.ListenerPorts
	s := &serving{p: p, l: l, timeouts: clientTimeouts{body: l.BodyTimeout, write: l.WriteTimeout}}
	if err := s.open(); err != nil {
		return err
	}
	if len(s.servers) == 0 && s.own == nil && !ownSockets {
		return errors.New("no listener configured")
	}
	if ownSockets {
		stop := s.serveGateways()
		defer stop()
	}
	stopStreams := s.serveStreams(ownSockets || p.opts.StreamHost.IsValid())
	if l.Ready != nil {
		l.Ready(s.bound)
	}
	err := waitStop(ctx, s.start())
	drained := make(chan struct{})
	go func() { stopStreams(); close(drained) }()
	s.shutdown()
	<-drained
	p.Close()
	return err
}

// setDefaults fills in the durations left zero.
func (l *ServeOptions) setDefaults() {
	if l.Grace <= 0 {
		l.Grace = 25 * time.Second
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = 60 * time.Second
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = 60 * time.Second
	}
}

// serving is what one Serve call serves: net/http's servers, each with
// its socket, and the own HTTP/1.1 server on the origin socket.
type serving struct {
	p        *Proxy
	l        ServeOptions
	timeouts clientTimeouts
	servers  []*http.Server
	lns      []net.Listener // servers[i] serves lns[i]
	own      *http1.Server  // the origin listener's, unless OriginNetHTTP
	ownLn    net.Listener
	bound    Bound
}

// open opens every listener configured. On an error it closes those it
// opened.
func (s *serving) open() error {
	for _, open := range []func() error{s.openOrigin, s.openOriginTLS, s.openPlain, s.openAdmin} {
		if err := open(); err != nil {
			s.closeAll()
			return err
		}
	}
	return nil
}

func (s *serving) closeAll() {
	for _, ln := range s.lns {
		ln.Close()
	}
	if s.ownLn != nil {
		s.ownLn.Close()
	}
}

// openOrigin opens the origin listener for the own HTTP/1.1 server or,
// with OriginNetHTTP, net/http's.
func (s *serving) openOrigin() error {
	l := s.l
	switch {
	case l.Origin != "" && l.OriginNetHTTP:
		var err error
		if s.bound.Origin, err = s.openHTTP(l.Origin, s.handler(0, !l.UntrustedOrigin), h1only, nil); err != nil {
			return fmt.Errorf("origin listener: %w", err)
		}
	case l.Origin != "":
		var err error
		if s.ownLn, err = listen(l.Origin); err != nil {
			return fmt.Errorf("origin listener: %w", err)
		}
		s.bound.Origin = s.ownLn.Addr().String()
		s.own = &http1.Server{
			Handler: s.p.Handler(0, !l.UntrustedOrigin), Log: s.p.opts.Log,
			HeadTimeout: headTimeout, IdleTimeout: idleTimeout, BodyTimeout: l.BodyTimeout, WriteTimeout: l.WriteTimeout,
		}
	}
	return nil
}

// openOriginTLS opens the TLS origin listener, with its certificate
// loaded or generated.
func (s *serving) openOriginTLS() error {
	l := s.l
	if l.OriginTLS == "" {
		return nil
	}
	conf, ca, err := originTLS(l)
	if err != nil {
		return fmt.Errorf("TLS origin listener: %w", err)
	}
	s.bound.OriginCA = ca
	if s.bound.OriginTLS, err = s.openHTTP(l.OriginTLS, s.handler(0, !l.UntrustedOrigin), func(ps *http.Protocols) {
		ps.SetHTTP1(true)
		ps.SetHTTP2(true)
	}, conf); err != nil {
		return fmt.Errorf("TLS origin listener: %w", err)
	}
	return nil
}

// openPlain opens the listener for direct clients.
func (s *serving) openPlain() error {
	l := s.l
	if l.Plain == "" {
		return nil
	}
	var err error
	if s.bound.Plain, err = s.openHTTP(l.Plain, s.handler(l.PlainPort, false), func(ps *http.Protocols) {
		ps.SetHTTP1(true)
		ps.SetUnencryptedHTTP2(true)
	}, nil); err != nil {
		return fmt.Errorf("plain listener: %w", err)
	}
	return nil
}

// openAdmin opens the admin listener.
func (s *serving) openAdmin() error {
	l := s.l
	if l.Admin == "" {
		return nil
	}
	var err error
	if s.bound.Admin, err = s.openHTTP(l.Admin, s.p.AdminHandler(), h1only, nil); err != nil {
		return fmt.Errorf("admin listener: %w", err)
	}
	return nil
}

// handler is the pipeline of a listener net/http serves.
func (s *serving) handler(port int, trusted bool) http.Handler {
	s.p.serveView(viewOf(port))
	return &handler{p: s.p, port: port, trusted: trusted, timeouts: s.timeouts}
}

// openHTTP opens addr for a net/http server of h, speaking what proto
// allows (over TLS with tlsConf), and returns the address it is bound
// to. The server starts with start.
func (s *serving) openHTTP(addr string, h http.Handler, proto func(*http.Protocols), tlsConf *tls.Config) (string, error) {
	ln, err := listen(addr)
	if err != nil {
		return "", err
	}
	s.lns = append(s.lns, ln)
	var ps http.Protocols
	proto(&ps)
	srv := &http.Server{
		Handler:           h,
		Protocols:         &ps,
		TLSConfig:         tlsConf,
		ReadHeaderTimeout: headTimeout,
		IdleTimeout:       idleTimeout,
		// "OPTIONS *" goes through the pipeline (a 400, logged and
		// counted) as on the origin listener, not net/http's 200.
		DisableGeneralOptionsHandler: true,
		ErrorLog:                     nil,
	}
	s.servers = append(s.servers, srv)
	return ln.Addr().String(), nil
}

func h1only(ps *http.Protocols) { ps.SetHTTP1(true) }

// serveGateways serves the sockets of their own (Gateway addresses, or
// listener ports) of the config loaded before Serve (a cache, a file),
// and from then on of each config loaded (gateways.go). It returns what
// stops them.
func (s *serving) serveGateways() (stop func()) {
	p := s.p
	p.serveView(viewSet{gateways: true})
	g := &gatewayServers{p: p, grace: s.l.Grace, timeouts: s.timeouts, servers: map[gatewayAddr]*gatewayServer{}}
	p.gateways.Store(g)
	p.mu.Lock()
	g.sync()
	p.mu.Unlock()
	return func() {
		p.gateways.Store(nil)
		g.close()
	}
}

// serveStreams serves the stream sockets (streamserve.go) of the config
// loaded before Serve, and from then on of each config loaded: the
// sockets of their own of TCP and TLS listeners when ownSockets, and the
// origin ports on the origin listener's host when there is an origin
// listener. It returns what closes them and drains their connections
// within the grace period.
func (s *serving) serveStreams(ownSockets bool) (stop func()) {
	p := s.p
	ss := &streamServers{p: p, opts: p.opts.Streams, gateways: ownSockets, live: newLiveStreams(p.opts.Streams.MaxStreams), sockets: map[streamAddr]net.Listener{}}
	if origin := cmp.Or(s.l.Origin, s.l.OriginTLS); origin != "" {
		ss.originHost, ss.originOK = originHostOf(origin), true
	}
	p.mu.Lock()
	p.originPorts = nil
	for _, a := range []string{s.bound.Origin, s.bound.OriginTLS, s.bound.Plain} {
		if _, port := splitHostPort(a); port > 0 {
			p.originPorts = append(p.originPorts, port)
		}
	}
	p.streams.Store(ss)
	ss.sync(p.current.Load())
	p.mu.Unlock()
	return func() {
		p.streams.Store(nil)
		ss.close(s.l.Grace)
	}
}

// start serves each listener on a goroutine of its own. The channel gets
// the error of a server that stopped other than by shutdown.
func (s *serving) start() <-chan error {
	errc := make(chan error, len(s.servers)+1)
	if s.own != nil {
		go func() {
			if err := s.own.Serve(s.ownLn); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	for i, srv := range s.servers {
		go func() {
			var err error
			if srv.TLSConfig != nil {
				err = srv.ServeTLS(s.lns[i], "", "")
			} else {
				err = srv.Serve(s.lns[i])
			}
			if !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	return errc
}

// waitStop waits until ctx ends (nil) or a server fails (its error).
func waitStop(ctx context.Context, errc <-chan error) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return err
	}
}

// shutdown stops the servers accepting and waits up to Grace for their
// in-flight requests; a net/http server still busy then is closed.
func (s *serving) shutdown() {
	sctx, cancel := context.WithTimeout(context.Background(), s.l.Grace)
	defer cancel()
	var wg sync.WaitGroup
	for _, srv := range s.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Shutdown(sctx); err != nil {
				srv.Close()
			}
		}()
	}
	if s.own != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.own.Shutdown(sctx)
		}()
	}
	wg.Wait()
}

// Timeouts of every listener's connections to its clients.
const (
	// headTimeout bounds sending a request head (slowloris).
	headTimeout = 30 * time.Second
	// idleTimeout closes a connection idle between requests. It is
	// longer than cloudflared's 90 s keep-alive, so the proxy never
	// closes a connection cloudflared is about to reuse.
	idleTimeout = 150 * time.Second
)

// listen opens "host:port" or "unix:/path" (a stale socket file is
// removed first).
func listen(addr string) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
			os.Remove(path)
		}
		return net.Listen("unix", path)
	}
	return net.Listen("tcp", addr)
}

// originNames are the names a generated origin certificate covers: the
// loopback names a sidecar may dial, and the name cloudflared checks.
func originNames(serverName string) []string {
	names := []string{"localhost", "127.0.0.1", "::1"}
	if serverName != "" && !slices.Contains(names, serverName) {
		names = append(names, serverName)
	}
	return names
}

// originTLS loads or generates the TLS origin certificate.
func originTLS(l ServeOptions) (*tls.Config, string, error) {
	certFile, keyFile, caFile := l.OriginCert, l.OriginKey, ""
	if certFile == "" && keyFile == "" {
		dir := l.CertDir
		if dir == "" {
			return nil, "", errors.New("give a certificate and key, or a directory to generate them in")
		}
		var err error
		certFile, keyFile, caFile, err = writeOriginCert(dir, originNames(l.OriginServerName), time.Now())
		if err != nil {
			return nil, "", err
		}
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, "", err
	}
	conf := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if l.OriginClientCA != "" {
		if err := requireClientCerts(conf, l.OriginClientCA); err != nil {
			return nil, "", err
		}
	}
	return conf, caFile, nil
}

// requireClientCerts makes conf refuse a handshake without a client
// certificate that chains to the CAs in caFile.
func requireClientCerts(conf *tls.Config, caFile string) error {
	pemBytes, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return fmt.Errorf("client CA %s: no PEM certificate in it", caFile)
	}
	conf.ClientCAs, conf.ClientAuth = pool, tls.RequireAndVerifyClientCert
	return nil
}
