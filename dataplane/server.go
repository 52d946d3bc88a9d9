package dataplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
)

// Listeners says where a proxy accepts traffic. Empty addresses are not
// opened.
type Listeners struct {
	// Origin is cloudflared's origin: HTTP/1.1, "host:port" or
	// "unix:/path". It serves every Gateway listener by hostname and trusts
	// forwarding headers unless UntrustedOrigin is set.
	Origin string
	// OriginTLS is the origin for hostnames carrying gRPC: TLS with ALPN h2
	// and http/1.1 (cloudflared speaks HTTP/2 to an origin only over TLS).
	OriginTLS string
	// OriginCert and OriginKey are PEM files for OriginTLS. Without them a
	// certificate is generated into CertDir, with its CA in
	// CertDir/origin-ca.pem for cloudflared's caPool.
	OriginCert, OriginKey string
	CertDir               string
	UntrustedOrigin       bool
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
	// The addresses must be local to this machine.
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
func (p *Proxy) Serve(ctx context.Context, l Listeners) error {
	if l.Grace <= 0 {
		l.Grace = 25 * time.Second
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = 60 * time.Second
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = 60 * time.Second
	}
	timeouts := clientTimeouts{body: l.BodyTimeout, write: l.WriteTimeout}
	serve := func(port int, trusted bool) http.Handler {
		p.serveView(viewOf(port))
		return &handler{p: p, port: port, trusted: trusted, timeouts: timeouts}
	}
	var servers []*http.Server
	var lns []net.Listener
	var bound Bound
	var ownLn net.Listener // the origin listener when the own server runs it
	closeAll := func() {
		for _, ln := range lns {
			ln.Close()
		}
		if ownLn != nil {
			ownLn.Close()
		}
	}
	open := func(addr string, h http.Handler, proto func(*http.Protocols), tlsConf *tls.Config) (string, error) {
		ln, err := listen(addr)
		if err != nil {
			return "", err
		}
		lns = append(lns, ln)
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
		servers = append(servers, srv)
		return ln.Addr().String(), nil
	}
	h1only := func(ps *http.Protocols) { ps.SetHTTP1(true) }
	var err error
	var own *http1.Server
	switch {
	case l.Origin != "" && l.OriginNetHTTP:
		if bound.Origin, err = open(l.Origin, serve(0, !l.UntrustedOrigin), h1only, nil); err != nil {
			closeAll()
			return fmt.Errorf("origin listener: %w", err)
		}
	case l.Origin != "":
		if ownLn, err = listen(l.Origin); err != nil {
			closeAll()
			return fmt.Errorf("origin listener: %w", err)
		}
		bound.Origin = ownLn.Addr().String()
		own = &http1.Server{
			Handler: p.Handler(0, !l.UntrustedOrigin), Log: p.opts.Log,
			HeadTimeout: headTimeout, IdleTimeout: idleTimeout, BodyTimeout: l.BodyTimeout, WriteTimeout: l.WriteTimeout,
		}
	}
	if l.OriginTLS != "" {
		conf, ca, err := originTLS(l)
		if err != nil {
			closeAll()
			return fmt.Errorf("TLS origin listener: %w", err)
		}
		bound.OriginCA = ca
		if bound.OriginTLS, err = open(l.OriginTLS, serve(0, !l.UntrustedOrigin), func(ps *http.Protocols) {
			ps.SetHTTP1(true)
			ps.SetHTTP2(true)
		}, conf); err != nil {
			closeAll()
			return fmt.Errorf("TLS origin listener: %w", err)
		}
	}
	if l.Plain != "" {
		if bound.Plain, err = open(l.Plain, serve(l.PlainPort, false), func(ps *http.Protocols) {
			ps.SetHTTP1(true)
			ps.SetUnencryptedHTTP2(true)
		}, nil); err != nil {
			closeAll()
			return fmt.Errorf("plain listener: %w", err)
		}
	}
	if l.Admin != "" {
		if bound.Admin, err = open(l.Admin, p.AdminHandler(), h1only, nil); err != nil {
			closeAll()
			return fmt.Errorf("admin listener: %w", err)
		}
	}
	if len(servers) == 0 && own == nil && !l.Gateways {
		return errors.New("no listener configured")
	}
	if l.Gateways {
		p.serveView(viewSet{gateways: true})
		g := &gatewayServers{p: p, grace: l.Grace, timeouts: timeouts, servers: map[gatewayAddr]*gatewayServer{}}
		p.gateways.Store(g)
		p.mu.Lock()
		g.sync() // the config loaded before Serve (a cache, a file)
		p.mu.Unlock()
		defer func() {
			p.gateways.Store(nil)
			g.close()
		}()
	}
	if l.Ready != nil {
		l.Ready(bound)
	}
	errc := make(chan error, len(servers)+1)
	if own != nil {
		go func() {
			if err := own.Serve(ownLn); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	for i, srv := range servers {
		go func() {
			var err error
			if srv.TLSConfig != nil {
				err = srv.ServeTLS(lns[i], "", "")
			} else {
				err = srv.Serve(lns[i])
			}
			if !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), l.Grace)
	defer cancel()
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Shutdown(sctx); err != nil {
				srv.Close()
			}
		}()
	}
	if own != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own.Shutdown(sctx)
		}()
	}
	wg.Wait()
	p.Close()
	return serveErr
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

// originTLS loads or generates the TLS origin certificate.
func originTLS(l Listeners) (*tls.Config, string, error) {
	certFile, keyFile, caFile := l.OriginCert, l.OriginKey, ""
	if certFile == "" && keyFile == "" {
		dir := l.CertDir
		if dir == "" {
			return nil, "", errors.New("give a certificate and key, or a directory to generate them in")
		}
		var err error
		certFile, keyFile, caFile, err = writeOriginCert(dir, []string{"localhost", "127.0.0.1", "::1"}, time.Now())
		if err != nil {
			return nil, "", err
		}
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, "", err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, caFile, nil
}
