package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/internal/pprofgate"
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
	f, code, done := parseProxyFlags(args, stderr)
	if done {
		return code
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "tunnelgate proxy: %v\n", err)
		return code
	}
	obs, err := openRequestObservability(ctx, f.log, f.accessLog, stdout, stderr)
	if err != nil {
		return fail(2, err)
	}
	defer obs.close()
	r := newProxyRun(f, obs)
	stopSource, code, err := r.startConfigSource(ctx)
	if err != nil {
		return fail(code, err)
	}
	defer stopSource()
	if err := r.serve(ctx, ready); err != nil {
		return fail(1, err)
	}
	return 0
}

// proxyFlags are the proxy command's flags, parsed; those for
// dataplane.ServeOptions, the pool and configwatch.Options are read straight
// into them.
type proxyFlags struct {
	file      string              // -config
	watch     configwatch.Options // -controller and the flags that go with it
	listen    dataplane.ServeOptions
	pool      dataplane.PoolSettings
	pprof     *pprofgate.Mode
	log       *logFlags
	accessLog *accessLogFlags

	listenerPorts bool // -listen-listener-ports: dataplane.Options.ListenerPorts
}

// parseProxyFlags parses and checks the flags. done is true when the
// command must return code right away (-h, a bad flag, a bad source).
func parseProxyFlags(args []string, stderr io.Writer) (f *proxyFlags, code int, done bool) {
	fs := newFlagSet("proxy", "serve a data-plane config from the controller (-controller) or a file (-config; SIGHUP reloads it)", stderr)
	f = &proxyFlags{}
	fs.StringVar(&f.file, "config", "", "data-plane config `file` (JSON, proxycfg.Config)")
	fs.StringVar(&f.watch.URL, "controller", "", "controller `URL` to watch for config, e.g. https://tunnelgate-controller:9443")
	fs.StringVar(&f.watch.TokenFile, "token-file", "", "`file` with the bearer token for -controller (re-read for every request)")
	fs.StringVar(&f.watch.TunnelProtocol, "tunnel-protocol", os.Getenv("TUNNEL_TRANSPORT_PROTOCOL"),
		"the `protocol` the cloudflared sidecar runs the tunnel with (http2, quic, auto), reported to -controller: gRPC needs http2")
	fs.StringVar(&f.watch.CAFile, "ca-file", "", "PEM `file` of the CA that signed the controller's certificate (default: system roots)")
	fs.StringVar(&f.watch.CertFile, "client-cert", "", "PEM client certificate for a controller that requires one")
	fs.StringVar(&f.watch.KeyFile, "client-key", "", "PEM key of -client-cert")
	fs.StringVar(&f.watch.CacheFile, "config-cache", "", "`file` keeping the last config from the controller, served at start before the controller answers")
	fs.StringVar(&f.listen.Origin, "listen", "127.0.0.1:8080", "origin listener for cloudflared: host:port or unix:/path")
	fs.StringVar(&f.listen.OriginTLS, "listen-tls", "", "TLS origin listener (h2 and http/1.1), e.g. 127.0.0.1:8443")
	fs.StringVar(&f.listen.CertDir, "cert-dir", "", "directory for the generated TLS origin certificate and its CA")
	fs.StringVar(&f.listen.OriginServerName, "origin-server-name", v1alpha1.DefaultOriginServerName,
		"`name` the generated TLS origin certificate is valid for, beside localhost: the GatewayClassConfig's spec.origin.serverName, which cloudflared checks")
	fs.StringVar(&f.listen.OriginCert, "tls-cert", "", "PEM certificate for -listen-tls (default: generated)")
	fs.StringVar(&f.listen.OriginKey, "tls-key", "", "PEM key for -listen-tls")
	fs.StringVar(&f.listen.OriginClientCA, "tls-client-ca", "", "PEM `file` of CAs: -listen-tls then admits only clients with a certificate they signed")
	fs.StringVar(&f.listen.Plain, "listen-plain", "", "listener for direct clients (HTTP/1.1 and h2c)")
	fs.BoolVar(&f.listen.Gateways, "listen-gateways", false, "serve each Gateway on the address the controller gave it (its port; HTTPS with its certificates); the addresses must be local")
	fs.BoolVar(&f.listenerPorts, "listen-listener-ports", false, "serve each listener of the config on its own port on every local address (the proxy of a Gateway's own data plane, behind its Service)")
	fs.StringVar(&f.listen.Admin, "admin", "127.0.0.1:9901", "admin listener (health, readiness, metrics, pprof); empty disables")
	f.pprof = addPprofFlag(fs)
	fs.BoolVar(&f.listen.OriginNetHTTP, "origin-nethttp", false, "serve the origin listener with net/http's server instead of tunnelgate's own")
	fs.IntVar(&f.pool.MaxIdle, "upstream-max-idle", 256, "idle connections kept per backend endpoint")
	fs.IntVar(&f.pool.MaxConns, "upstream-max-conns", 1024, "connections open per backend endpoint; beyond, requests get 503")
	fs.IntVar(&f.pool.MaxConnsPerClient, "upstream-max-conns-per-client", 0, "connections to one backend endpoint the requests of one client (Cf-Connecting-Ip behind the tunnel, else the peer address) may hold; beyond, its requests get 503 (0: a quarter of -upstream-max-conns)")
	fs.DurationVar(&f.listen.BodyTimeout, "client-body-timeout", 60*time.Second, "a client's request body that sends nothing for this long gets 408")
	fs.DurationVar(&f.listen.WriteTimeout, "client-write-timeout", 60*time.Second, "a client that reads nothing of its response for this long is disconnected, and its backend connection released")
	fs.DurationVar(&f.pool.IdleTimeout, "upstream-idle-timeout", 90*time.Second, "close upstream connections idle this long")
	fs.DurationVar(&f.pool.DialTimeout, "upstream-dial-timeout", 10*time.Second, "bound on connecting to a backend, TLS included")
	f.log = addLogFlags(fs)
	f.accessLog = addAccessLogFlags(fs)
	if code, done := parse(fs, args); done {
		return nil, code, true
	}
	if msg := checkProxySource(fs, f.file, f.watch.URL, f.watch.TokenFile); msg != "" {
		fmt.Fprintf(stderr, "tunnelgate proxy: %s\n", msg)
		return nil, 2, true
	}
	if f.listen.Gateways && f.listenerPorts {
		fmt.Fprintln(stderr, "tunnelgate proxy: -listen-gateways and -listen-listener-ports exclude each other: drop one")
		return nil, 2, true
	}
	return f, 0, false
}

// proxyRun is one run of the proxy command.
type proxyRun struct {
	f   *proxyFlags
	log *slog.Logger
	p   *dataplane.Proxy
	// watch is the client of -controller (nil with -config).
	watch *configwatch.Client
}

// newProxyRun builds the proxy. It serves no config until
// startConfigSource gives it one.
func newProxyRun(f *proxyFlags, obs *requestObservability) *proxyRun {
	r := &proxyRun{f: f, log: obs.log}
	// The watch client's metrics go on the admin listener with the
	// proxy's; the meter is made at the first scrape, after watch is set.
	r.p = dataplane.New(dataplane.Options{Log: obs.log, AccessLog: obs.accessLog, Tracer: obs.tracer, Pprof: *f.pprof, Pool: f.pool,
		ListenerPorts: f.listenerPorts,
		Metrics: func(m metric.Meter) error {
			if r.watch == nil {
				return nil
			}
			return r.watch.RegisterMetrics(m)
		}})
	return r
}

// startConfigSource starts watching -controller, or loads -config and
// reloads it on SIGHUP. stop ends the watch or the reloads, and returns
// once they have ended. On an error, code is the exit code it calls for.
func (r *proxyRun) startConfigSource(ctx context.Context) (stop func(), code int, err error) {
	if r.f.watch.URL != "" {
		stop, err := r.watchController(ctx)
		if err != nil {
			return nil, 2, err
		}
		return stop, 0, nil
	}
	if err := loadFile(r.p, r.f.file); err != nil {
		return nil, 1, err
	}
	return r.reloadOnHangup(), 0, nil
}

// watchController starts the client of -controller on a goroutine of its
// own. Until the cache or the controller gives a config the proxy is not
// ready (/readyz 503, requests 503); the listeners open meanwhile. stop
// ends the client, and returns once it has stopped.
func (r *proxyRun) watchController(ctx context.Context) (stop func(), err error) {
	opts := r.f.watch
	opts.Log, opts.ProxyID = r.log, envOr("POD_NAME", hostname())
	watch, err := configwatch.New(r.p, opts)
	if err != nil {
		return nil, err
	}
	r.watch = watch
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		watch.Run(ctx)
	}()
	return func() { cancel(); <-done }, nil
}

// reloadOnHangup loads -config again on each SIGHUP; a config that does
// not load is logged, and the last one kept. stop ends the reloads.
func (r *proxyRun) reloadOnHangup() (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			if err := loadFile(r.p, r.f.file); err != nil {
				r.log.Error("reload failed; still serving the previous config", "err", err)
			}
		}
	}()
	return func() { signal.Stop(hup) }
}

// serve serves the listeners until ctx ends, or one fails.
func (r *proxyRun) serve(ctx context.Context, ready func(dataplane.Bound)) error {
	l := r.f.listen
	l.Ready = func(b dataplane.Bound) {
		r.log.Info("listening", "origin", b.Origin, "originTLS", b.OriginTLS, "plain", b.Plain, "admin", b.Admin, "originCA", b.OriginCA)
		if ready != nil {
			ready(b)
		}
	}
	return r.p.Serve(ctx, l)
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
	// The version is the content's, as the controller's and standalone
	// mode's are: whatever the file says is replaced.
	if cfg.Version, err = proxycfg.ContentVersion(&cfg); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := p.Load(&cfg); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}
