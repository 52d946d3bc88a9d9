package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane"
)

// runProxy serves a data-plane config from a file. It is how the proxy
// is benchmarked and debugged without a controller; SIGHUP reloads the
// file, and a config that does not compile is logged and not applied.
func runProxy(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("proxy", "serve a data-plane config file (SIGHUP reloads it)", stderr)
	file := fs.String("config", "", "data-plane config `file` (JSON, dataplane.Config)")
	origin := fs.String("listen", "127.0.0.1:8080", "origin listener for cloudflared: host:port or unix:/path")
	originTLS := fs.String("listen-tls", "", "TLS origin listener (h2 and http/1.1), e.g. 127.0.0.1:8443")
	certDir := fs.String("cert-dir", "", "directory for the generated TLS origin certificate and its CA")
	cert := fs.String("tls-cert", "", "PEM certificate for -listen-tls (default: generated)")
	key := fs.String("tls-key", "", "PEM key for -listen-tls")
	plain := fs.String("listen-plain", "", "listener for direct clients (HTTP/1.1 and h2c)")
	admin := fs.String("admin", "127.0.0.1:9901", "admin listener (health, readiness, metrics, pprof); empty disables")
	netHTTP := fs.Bool("origin-nethttp", false, "serve the origin listener with net/http's server instead of tunnelgate's own")
	maxIdle := fs.Int("upstream-max-idle", 256, "idle connections kept per backend endpoint")
	maxConns := fs.Int("upstream-max-conns", 1024, "connections open per backend endpoint; beyond, requests get 503")
	idleTimeout := fs.Duration("upstream-idle-timeout", 90*time.Second, "close upstream connections idle this long")
	dialTimeout := fs.Duration("upstream-dial-timeout", 10*time.Second, "bound on connecting to a backend, TLS included")
	if code, done := parse(fs, args); done {
		return code
	}
	if *file == "" {
		fmt.Fprintln(stderr, "tunnelgate proxy: -config is required")
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	p := dataplane.New(dataplane.Options{Log: log, Pool: dataplane.PoolSettings{
		MaxIdle: *maxIdle, MaxConns: *maxConns, IdleTimeout: *idleTimeout, DialTimeout: *dialTimeout,
	}})
	if err := loadFile(p, *file); err != nil {
		fmt.Fprintf(stderr, "tunnelgate proxy: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			if err := loadFile(p, *file); err != nil {
				log.Error("reload failed; still serving the previous config", "err", err)
			}
		}
	}()
	err := p.Serve(ctx, dataplane.Listeners{
		Origin: *origin, OriginTLS: *originTLS, CertDir: *certDir,
		OriginCert: *cert, OriginKey: *key, Plain: *plain, Admin: *admin, OriginNetHTTP: *netHTTP,
		Ready: func(b dataplane.Bound) {
			log.Info("listening", "origin", b.Origin, "originTLS", b.OriginTLS, "plain", b.Plain, "admin", b.Admin, "originCA", b.OriginCA)
		},
	})
	if err != nil {
		fmt.Fprintf(stderr, "tunnelgate proxy: %v\n", err)
		return 1
	}
	return 0
}

func loadFile(p *dataplane.Proxy, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var cfg dataplane.Config
	if err := dataplane.DecodeConfig(b, &cfg); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := p.Load(&cfg); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}
