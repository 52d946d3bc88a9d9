package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// runProxy serves a data-plane config, from the controller (-controller:
// the proxy of a deployment) or from a file (-config: how the proxy is
// benchmarked and debugged without a controller; SIGHUP reloads the
// file, and a config that does not compile is logged and not applied).
func runProxy(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return proxyMain(ctx, args, stdout, stderr, nil)
}

// proxyMain is runProxy until ctx ends; ready, if set, is told the bound
// addresses (tests listen on ":0").
func proxyMain(ctx context.Context, args []string, stdout, stderr io.Writer, ready func(dataplane.Bound)) int {
	fs := newFlagSet("proxy", "serve a data-plane config from the controller (-controller) or a file (-config; SIGHUP reloads it)", stderr)
	file := fs.String("config", "", "data-plane config `file` (JSON, proxycfg.Config)")
	controller := fs.String("controller", "", "controller `URL` to watch for config, e.g. https://tunnelgate-controller:9443")
	tokenFile := fs.String("token-file", "", "`file` with the bearer token for -controller (re-read for every request)")
	tunnelProtocol := fs.String("tunnel-protocol", os.Getenv("TUNNEL_TRANSPORT_PROTOCOL"),
		"the `protocol` the cloudflared sidecar runs the tunnel with (http2, quic, auto), reported to -controller: gRPC needs http2")
	caFile := fs.String("ca-file", "", "PEM `file` of the CA that signed the controller's certificate (default: system roots)")
	clientCert := fs.String("client-cert", "", "PEM client certificate for a controller that requires one")
	clientKey := fs.String("client-key", "", "PEM key of -client-cert")
	cache := fs.String("config-cache", "", "`file` keeping the last config from the controller, served at start before the controller answers")
	origin := fs.String("listen", "127.0.0.1:8080", "origin listener for cloudflared: host:port or unix:/path")
	originTLS := fs.String("listen-tls", "", "TLS origin listener (h2 and http/1.1), e.g. 127.0.0.1:8443")
	certDir := fs.String("cert-dir", "", "directory for the generated TLS origin certificate and its CA")
	cert := fs.String("tls-cert", "", "PEM certificate for -listen-tls (default: generated)")
	key := fs.String("tls-key", "", "PEM key for -listen-tls")
	plain := fs.String("listen-plain", "", "listener for direct clients (HTTP/1.1 and h2c)")
	gateways := fs.Bool("listen-gateways", false, "serve each Gateway on the address the controller gave it (its port; HTTPS with its certificates); the addresses must be local")
	admin := fs.String("admin", "127.0.0.1:9901", "admin listener (health, readiness, metrics, pprof); empty disables")
	pprofMode := addPprofFlag(fs)
	netHTTP := fs.Bool("origin-nethttp", false, "serve the origin listener with net/http's server instead of tunnelgate's own")
	maxIdle := fs.Int("upstream-max-idle", 256, "idle connections kept per backend endpoint")
	maxConns := fs.Int("upstream-max-conns", 1024, "connections open per backend endpoint; beyond, requests get 503")
	maxConnsPerClient := fs.Int("upstream-max-conns-per-client", 0, "connections to one backend endpoint the requests of one client (Cf-Connecting-Ip behind the tunnel, else the peer address) may hold; beyond, its requests get 503 (0: a quarter of -upstream-max-conns)")
	bodyTimeout := fs.Duration("client-body-timeout", 60*time.Second, "a client's request body that sends nothing for this long gets 408")
	writeTimeout := fs.Duration("client-write-timeout", 60*time.Second, "a client that reads nothing of its response for this long is disconnected, and its backend connection released")
	idleTimeout := fs.Duration("upstream-idle-timeout", 90*time.Second, "close upstream connections idle this long")
	dialTimeout := fs.Duration("upstream-dial-timeout", 10*time.Second, "bound on connecting to a backend, TLS included")
	logf := addLogFlags(fs)
	accessLog := addAccessLogFlags(fs)
	if code, done := parse(fs, args); done {
		return code
	}
	if msg := checkProxySource(fs, *file, *controller, *tokenFile); msg != "" {
		fmt.Fprintf(stderr, "tunnelgate proxy: %s\n", msg)
		return 2
	}
	log, err := logf.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tunnelgate proxy: %v\n", err)
		return 2
	}
	al, closeAccessLog, err := accessLog.open(stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tunnelgate proxy: %v\n", err)
		return 2
	}
	defer closeAccessLog()
	tracer, stopTracing, err := proxyTracer(ctx, os.Getenv, log)
	if err != nil {
		fmt.Fprintf(stderr, "tunnelgate proxy: tracing: %v\n", err)
		return 2
	}
	defer stopTracing()

	// The watch client's metrics go on the admin listener with the
	// proxy's; the meter is made at the first scrape, after watch is set.
	var watch *configwatch.Client
	p := dataplane.New(dataplane.Options{Log: log, AccessLog: al, Tracer: tracer, Pprof: *pprofMode, Pool: dataplane.PoolSettings{
		MaxIdle: *maxIdle, MaxConns: *maxConns, MaxConnsPerClient: *maxConnsPerClient, IdleTimeout: *idleTimeout, DialTimeout: *dialTimeout,
	}, Metrics: func(m metric.Meter) error {
		if watch == nil {
			return nil
		}
		return watch.RegisterMetrics(m)
	}})

	watchDone := make(chan struct{})
	if *controller != "" {
		var err error
		watch, err = configwatch.New(p, configwatch.Options{
			URL: *controller, TokenFile: *tokenFile, CAFile: *caFile,
			CertFile: *clientCert, KeyFile: *clientKey, CacheFile: *cache, Log: log,
			ProxyID: envOr("POD_NAME", hostname()), TunnelProtocol: *tunnelProtocol,
		})
		if err != nil {
			fmt.Fprintf(stderr, "tunnelgate proxy: %v\n", err)
			return 2
		}
		// Not ready (/readyz 503, requests 503) until the cache or the
		// controller gives a config; the listeners open meanwhile.
		go func() {
			defer close(watchDone)
			watch.Run(ctx)
		}()
	} else {
		close(watchDone)
		if err := loadFile(p, *file); err != nil {
			fmt.Fprintf(stderr, "tunnelgate proxy: %v\n", err)
			return 1
		}
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go func() {
			for range hup {
				if err := loadFile(p, *file); err != nil {
					log.Error("reload failed; still serving the previous config", "err", err)
				}
			}
		}()
	}
	err = p.Serve(ctx, dataplane.Listeners{
		Origin: *origin, OriginTLS: *originTLS, CertDir: *certDir,
		OriginCert: *cert, OriginKey: *key, Plain: *plain, Gateways: *gateways, Admin: *admin, OriginNetHTTP: *netHTTP,
		BodyTimeout: *bodyTimeout, WriteTimeout: *writeTimeout,
		Ready: func(b dataplane.Bound) {
			log.Info("listening", "origin", b.Origin, "originTLS", b.OriginTLS, "plain", b.Plain, "admin", b.Admin, "originCA", b.OriginCA)
			if ready != nil {
				ready(b)
			}
		},
	})
	<-watchDone // Serve returns when ctx ends, or on a listener error before that
	if err != nil {
		fmt.Fprintf(stderr, "tunnelgate proxy: %v\n", err)
		return 1
	}
	return 0
}

// checkProxySource says what is wrong with where the config comes from,
// or "": exactly one of -config and -controller, and the watch flags
// only with -controller.
func checkProxySource(fs *flag.FlagSet, file, controller, tokenFile string) string {
	switch {
	case file == "" && controller == "":
		return "-config is required unless -controller is given"
	case file != "" && controller != "":
		return "-config and -controller exclude each other"
	case controller != "" && tokenFile == "":
		return "-controller needs -token-file: the controller answers only proxies with its token"
	}
	if file != "" {
		var stray []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "token-file", "ca-file", "client-cert", "client-key", "config-cache", "tunnel-protocol":
				stray = append(stray, "-"+f.Name)
			}
		})
		if len(stray) > 0 {
			return fmt.Sprintf("%v only go with -controller", stray)
		}
	}
	return ""
}

func loadFile(p *dataplane.Proxy, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var cfg proxycfg.Config
	if err := proxycfg.DecodeConfig(b, &cfg); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := p.Load(&cfg); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}
