// This file implements the controller command: its flags and the wiring of
// its parts.

package main

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/metric"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/tunnelgate/tunnelgate/cmd/internal/cli"
	"github.com/tunnelgate/tunnelgate/ctrl/accesskeys"
	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
	"github.com/tunnelgate/tunnelgate/ctrl/controller"
	"github.com/tunnelgate/tunnelgate/ctrl/planes"
	"github.com/tunnelgate/tunnelgate/ctrl/provision"
	"github.com/tunnelgate/tunnelgate/ctrl/sessionkeys"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/internal/pprofgate"
	"github.com/tunnelgate/tunnelgate/internal/telemetry"
)

// runController runs the Kubernetes controller: informers, translation,
// status writes (when leading) and the config server proxies watch, until
// SIGINT or SIGTERM.
func runController(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// client-go logs through klog (leader election, informers): one log
	// format for the whole process. klog's logger is a process global that
	// may be set only before anything logs, so the process sets it, not
	// tests that run the command beside their own clients.
	return controllerCommand(ctx, args, stdout, stderr, klog.SetSlogLogger)
}

// controllerCommand is runController until ctx ends (tests cancel it).
// setKlog, if set, gets the process log once the flags are checked.
func controllerCommand(ctx context.Context, args []string, stdout, stderr io.Writer, setKlog func(*slog.Logger)) int {
	fs := newFlagSet("controller", "watch the cluster, write Gateway API statuses and serve proxy configs", stderr)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig `file` (default: in-cluster config)")
	name := fs.String("controller-name", translate.DefaultControllerName, "GatewayClass controllerName to answer to")
	syncInterval := fs.Duration("sync-interval", controller.DefaultSyncInterval, "during a burst of changes, at most one sync per interval (a lone change is synced at once)")
	syncBurst := fs.Int("sync-burst", controller.DefaultSyncBurst, "syncs allowed back to back before -sync-interval paces them")
	admin := fs.String("admin", ":9902", "admin listener (health, readiness, metrics, pprof); empty disables")
	pprofMode := cli.AddPprofFlag(fs)
	configListen := fs.String("config-listen", "127.0.0.1:8081", "listener proxies watch for configs (GET /v1/config); :8081 for every interface")
	tokenFile := fs.String("config-token-file", "", "`file` holding the bearer token proxies present (re-read when it changes; required)")
	tlsCert := fs.String("config-tls-cert", "", "PEM certificate for the config listener (required unless -config-insecure-plaintext)")
	tlsKey := fs.String("config-tls-key", "", "PEM key for -config-tls-cert")
	plaintext := fs.Bool("config-insecure-plaintext", false, "serve the config API over plain HTTP, without -config-tls-cert: the proxies' token and their configs, private keys included, cross the network readable (tests, a loopback -config-listen)")
	leaderElect := fs.Bool("leader-elect", true, "elect one replica to write statuses (all replicas serve configs)")
	leaseNS := fs.String("leader-election-namespace", cli.EnvOr("POD_NAMESPACE", "tunnelgate-system"), "namespace of the leader Lease")
	leaseName := fs.String("leader-election-name", "tunnelgate-controller", "name of the leader Lease")
	identity := fs.String("identity", cli.EnvOr("POD_NAME", cli.Hostname()), "this replica's name in the Lease")
	sessionKeys := fs.String("session-keys-dir", "", "`directory` of the session keys every proxy shares: current (signs) and previous (still accepted during a rotation); re-read every 10 s. Without it each proxy signs with a key of its own")
	address := fs.String("gateway-address", "", "addresses written on programmed Gateways' status after the tunnel's hostname: hostnames or IPs, separated by commas, each with `=Cluster` after it when it is a ClusterIP or a Service's name (its routability)")
	pool := fs.String("gateway-address-pool", "", "`CIDR` to give each Gateway an address of its own from: proxies run with -listen-gateways serve it, and a plane serving in the cluster takes it as its Service's ClusterIP")
	cfURL := fs.String("cloudflare-api-url", "", "Cloudflare API base `URL` (default: Cloudflare's; for tests and proxies)")
	noCloudflare := fs.Bool("no-cloudflare", false, "never call Cloudflare: tunnels and DNS stay as they are (statuses say so)")
	planesFile := fs.String("planes", "", "`file` of the settings every dedicated data plane shares (JSON: images, the config API's URL as proxies reach it, tunnel protocol, grace periods, default resources); without it, Gateways asking for a Dedicated plane get none")
	planesCA := fs.String("planes-ca-file", "", "PEM `file` of the CA that signed -config-tls-cert, handed to dedicated planes' proxies (required with -planes)")
	qps := fs.Float64("kube-qps", 50, "API requests per second (status writes)")
	burst := fs.Int("kube-burst", 100, "API request burst")
	verbose := fs.Bool("v", false, "debug logging (as -log-level debug)")
	logf := cli.AddLogFlags(fs)
	if code, done := cli.Parse(fs, args); done {
		return code
	}
	if *verbose {
		*logf.Level = "debug"
	}
	log, err := logf.Logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tunnelgate controller: %v\n", err)
		return 2
	}
	if *tokenFile == "" {
		fmt.Fprintln(stderr, "tunnelgate controller: -config-token-file is required (proxies authenticate with it)")
		return 2
	}
	for _, a := range gatewayAddresses(*address) {
		if r := *a.Routability; r != "" && r != gwv1.GatewayAddressRoutabilityCluster && !strings.Contains(string(r), "/") {
			fmt.Fprintf(stderr, "tunnelgate controller: -gateway-address %s=%s: a routability is Cluster or a prefixed name (example.com/Scope)\n", a.Value, r)
			return 2
		}
	}
	var addressPool netip.Prefix
	if *pool != "" {
		p, err := netip.ParsePrefix(*pool)
		if err != nil || p.Addr().Zone() != "" || p.Bits() > p.Addr().BitLen()-2 {
			fmt.Fprintf(stderr, "tunnelgate controller: -gateway-address-pool %q is not a CIDR with room for addresses, e.g. 10.96.200.0/24\n", *pool)
			return 2
		}
		addressPool = p.Masked()
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		fmt.Fprintln(stderr, "tunnelgate controller: -config-tls-cert and -config-tls-key go together")
		return 2
	}
	// Proxies send the config API their bearer token and get configs
	// holding private keys: plain HTTP only when asked for by name.
	switch {
	case *tlsCert == "" && !*plaintext:
		fmt.Fprintln(stderr, "tunnelgate controller: the config API serves proxies' tokens and private keys, so it needs TLS: "+
			"give -config-tls-cert and -config-tls-key (the Helm chart does), or -config-insecure-plaintext to serve plain HTTP anyway (tests, a loopback -config-listen)")
		return 2
	case *tlsCert != "" && *plaintext:
		fmt.Fprintln(stderr, "tunnelgate controller: -config-insecure-plaintext and -config-tls-cert exclude each other: drop one")
		return 2
	}
	install, planesCAPEM, err := readPlanes(*planesFile, *planesCA)
	if err != nil {
		fmt.Fprintf(stderr, "tunnelgate controller: %v\n", err)
		return 2
	}
	if setKlog != nil {
		setKlog(log)
	}
	if err := controllerMain(ctx, controllerFlags{
		kubeconfig: *kubeconfig, name: *name, syncInterval: *syncInterval, syncBurst: *syncBurst, admin: *admin, pprof: *pprofMode,
		configListen: *configListen, tokenFile: *tokenFile, tlsCert: *tlsCert, tlsKey: *tlsKey,
		leaderElect: *leaderElect, leaseNS: *leaseNS, leaseName: *leaseName, identity: *identity,
		address: *address, addressPool: addressPool, sessionKeysDir: *sessionKeys, qps: float32(*qps), burst: *burst, cloudflareURL: *cfURL, noCloudflare: *noCloudflare,
		planes: install, planesCA: planesCAPEM,
	}, log); err != nil {
		fmt.Fprintf(stderr, "tunnelgate controller: %v\n", err)
		return 1
	}
	return 0
}

// sessionKeysInterval is how often the session keys are read again: a
// mounted Secret changes on disk a minute or so after the Secret does.
const sessionKeysInterval = 10 * time.Second

type controllerFlags struct {
	kubeconfig, name, admin, configListen, tokenFile, tlsCert, tlsKey string
	leaseNS, leaseName, identity, address, cloudflareURL              string
	sessionKeysDir                                                    string
	syncInterval                                                      time.Duration
	syncBurst                                                         int
	addressPool                                                       netip.Prefix
	pprof                                                             pprofgate.Mode
	leaderElect, noCloudflare                                         bool
	qps                                                               float32
	burst                                                             int
	// planes is what dedicated planes share (-planes), nil without it;
	// planesCA the PEM they are given to check the config API.
	planes   *provision.Install
	planesCA []byte
}

// readPlanes reads -planes and -planes-ca-file; neither given, planes
// are off.
func readPlanes(file, caFile string) (*provision.Install, []byte, error) {
	if file == "" {
		if caFile != "" {
			return nil, nil, errors.New("-planes-ca-file is given without -planes")
		}
		return nil, nil, nil
	}
	if caFile == "" {
		return nil, nil, errors.New("-planes needs -planes-ca-file: planes' proxies check the config API's certificate with it")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	in, err := provision.ParseInstall(data)
	if err != nil {
		return nil, nil, fmt.Errorf("-planes %s: %w", file, err)
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, nil, err
	}
	if block, _ := pem.Decode(ca); block == nil || block.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("-planes-ca-file %s holds no PEM certificate", caFile)
	}
	return &in, ca, nil
}

// controllerMain builds the controller's parts and runs them until ctx
// ends or one of them fails.
func controllerMain(ctx context.Context, f controllerFlags, log *slog.Logger) error {
	clients, err := newKubeClients(f, log)
	if err != nil {
		return err
	}
	meter, metrics, err := controller.MetricsEndpoint()
	if err != nil {
		return err
	}
	tracing, err := startTracing(ctx, log)
	if err != nil {
		return err
	}
	defer flushTracing(ctx, tracing, log)
	token := &fileToken{path: f.tokenFile, log: log}
	if _, err := token.read(); err != nil {
		return err
	}
	events := startEvents(clients.kube)
	defer events.Shutdown()
	p, err := buildParts(f, clients, token, events, meter, tracing, log)
	if err != nil {
		return err
	}
	return runParts(ctx, f, p, clients.kube, metrics, log)
}

// kubeClients are the API clients the controller watches and writes
// with.
type kubeClients struct {
	kube kubernetes.Interface
	gw   gwclient.Interface
	dyn  dynamic.Interface
}

func newKubeClients(f controllerFlags, log *slog.Logger) (kubeClients, error) {
	cfg, err := kubeConfig(f.kubeconfig)
	if err != nil {
		return kubeClients{}, err
	}
	cfg.QPS, cfg.Burst = f.qps, f.burst
	cfg.UserAgent = "tunnelgate-controller/" + version
	cfg.WarningHandler = apiWarnings{log}
	var c kubeClients
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return kubeClients{}, err
	}
	if c.gw, err = gwclient.NewForConfig(cfg); err != nil {
		return kubeClients{}, err
	}
	if c.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return kubeClients{}, err
	}
	return c, nil
}

// startTracing sets up tracing as the environment asks (telemetry.FromEnv).
func startTracing(ctx context.Context, log *slog.Logger) (*telemetry.Tracing, error) {
	tracing, err := telemetry.FromEnv(ctx, os.Getenv, "tunnelgate-controller")
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	log.Info("tracing", "config", tracing.Describe)
	return tracing, nil
}

// flushTracing sends what is buffered, but never holds up a shutdown for
// long.
func flushTracing(ctx context.Context, tracing *telemetry.Tracing, log *slog.Logger) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := tracing.Shutdown(sctx); err != nil {
		log.Warn("tracing shutdown", "err", err)
	}
}

// startEvents sends the events the controller records to the API server.
func startEvents(kube kubernetes.Interface) record.EventBroadcaster {
	events := record.NewBroadcaster()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	return events
}

// parts are what the controller command runs.
type parts struct {
	srv    *configserver.Server
	keys   *sessionkeys.Publisher // nil without -session-keys-dir
	cf     *cloudflare.Syncer     // nil with -no-cloudflare
	access *accesskeys.Fetcher
	planes *planes.Provisioner // nil without -planes
	c      *controller.Controller
}

// buildParts builds the config server (behind the session keys, if
// any) and the Cloudflare syncer, then the controller, which takes both.
func buildParts(f controllerFlags, clients kubeClients, token *fileToken, events record.EventBroadcaster,
	meter metric.Meter, tracing *telemetry.Tracing, log *slog.Logger) (*parts, error) {
	asker := &syncAsker{}
	// Every replica fetches the Access teams' keys: each publishes
	// configs, and its proxies say when a token names a key they lack.
	access := accesskeys.New(accesskeys.Options{OnChange: asker.Changed, Log: log.With("part", "access keys")})
	p := &parts{access: access, srv: configserver.New(configserver.Options{TokenFunc: token.get, Log: log, Meter: meter,
		OnProxies: asker.Changed, OnUnknownAccessKeys: access.Stale})}
	var publisher controller.Publisher = p.srv
	if f.sessionKeysDir != "" {
		keys, err := sessionkeys.New(p.srv, f.sessionKeysDir, log.With("part", "session keys"))
		if err != nil {
			return nil, err
		}
		p.keys, publisher = keys, keys
	}
	// The Cloudflare side runs in every replica and acts only on what the
	// leader's syncs hand it.
	if !f.noCloudflare {
		p.cf = cloudflare.New(cloudflare.Options{
			BaseURL: f.cloudflareURL, SaveToken: controller.TunnelTokenWriter(clients.kube, asker.TokenOwner), Log: log.With("part", "cloudflare"),
			Roll: controller.ConnectorRoller(clients.kube), OnRotation: asker.Rotated,
			OnChange:       asker.Changed,
			TracerProvider: tracing.Provider, Meter: meter,
		})
	}
	var provisioner controller.Provisioner
	if f.planes != nil {
		pl, err := planes.New(planes.Options{Kube: clients.kube, Dynamic: clients.dyn, Install: *f.planes, CA: f.planesCA,
			OnChange: asker.Changed, Log: log.With("part", "planes")})
		if err != nil {
			return nil, err
		}
		p.planes, provisioner = pl, pl
	}
	c, err := controller.New(controller.Options{
		Kube: clients.kube, Gateway: clients.gw, Dynamic: clients.dyn,
		ControllerName: f.name, SyncInterval: f.syncInterval, SyncBurst: f.syncBurst, Publisher: publisher, Log: log,
		Addresses:      gatewayAddresses(f.address),
		AddressPool:    f.addressPool,
		Events:         events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "tunnelgate-controller"}),
		Cloudflare:     p.cf,
		Planes:         provisioner,
		ProxyProtocols: p.srv.Protocols,
		AccessKeys:     p.access,
		TracerProvider: tracing.Provider,
	})
	if err != nil {
		return nil, err
	}
	if err := c.RegisterMetrics(meter); err != nil {
		return nil, err
	}
	if err := planes.RegisterMetrics(meter, p.planes); err != nil {
		return nil, err
	}
	asker.c.Store(c)
	p.c = c
	return p, nil
}

// syncAsker is how the config server (a proxy reported a new tunnel
// protocol) and the Cloudflare syncer (a tunnel's state changed) ask the
// controller for a sync. They are built before the controller, which
// takes them; until it exists there is nothing to ask, and its first
// sync follows anyway.
type syncAsker struct {
	c atomic.Pointer[controller.Controller]
}

func (a *syncAsker) Changed() {
	if c := a.c.Load(); c != nil {
		c.Changed()
	}
}

// TokenOwner is the controller's TokenOwner, once it exists.
func (a *syncAsker) TokenOwner(namespace, name string) *metav1.OwnerReference {
	if c := a.c.Load(); c != nil {
		return c.TokenOwner(namespace, name)
	}
	return nil
}

// Rotated records the events of a tunnel credential's rotation, once the
// controller exists.
func (a *syncAsker) Rotated(ev cloudflare.RotationEvent) {
	if c := a.c.Load(); c != nil {
		c.RotationEvent(ev)
	}
}

// runParts serves configs and the admin listener, elects the leader,
// and runs the Cloudflare syncer and the controller, until ctx ends or
// one of them fails.
func runParts(ctx context.Context, f controllerFlags, p *parts, kube kubernetes.Interface, metrics http.Handler, log *slog.Logger) error {
	g := newGroup(ctx)
	defer g.cancel()
	if err := serveConfigs(g, f, p.srv, log); err != nil {
		return err
	}
	if f.admin != "" {
		admin := p.c.AdminHandler(controller.AdminOptions{Metrics: metrics, Pprof: f.pprof})
		if err := serveAdmin(g, f.admin, admin, log); err != nil {
			return err
		}
	}
	if f.leaderElect {
		g.run("leader election", func() error {
			return controller.RunLeaderElection(g.ctx, kube, controller.LeaderOptions{Namespace: f.leaseNS, Name: f.leaseName, Identity: f.identity}, p.c)
		})
	} else {
		p.c.SetLeader(true)
	}
	if p.cf != nil {
		g.run("cloudflare", func() error { p.cf.Run(g.ctx); return nil })
	}
	if p.planes != nil {
		g.run("planes", func() error { return p.planes.Run(g.ctx) })
	}
	g.run("access keys", func() error { p.access.Run(g.ctx); return nil })
	if p.keys != nil {
		g.run("session keys", func() error { p.keys.Run(g.ctx, sessionKeysInterval); return nil })
	}
	g.run("controller", func() error { return p.c.Run(g.ctx) })
	return g.wait()
}

// serveConfigs serves the config API on -config-listen, over TLS unless
// -config-insecure-plaintext.
func serveConfigs(g *group, f controllerFlags, srv *configserver.Server, log *slog.Logger) error {
	ln, err := net.Listen("tcp", f.configListen)
	if err != nil {
		return fmt.Errorf("config listener: %w", err)
	}
	var tc *tls.Config
	if f.tlsCert != "" {
		if tc, err = configserver.TLSConfig(configserver.TLSFiles{CertFile: f.tlsCert, KeyFile: f.tlsKey}, log); err != nil {
			ln.Close()
			return err
		}
	}
	log.Info("serving configs to proxies", "addr", ln.Addr().String(), "tls", tc != nil)
	if tc == nil {
		log.Warn("the config API is plain HTTP (-config-insecure-plaintext): tokens and configs are readable on the way")
	}
	g.run("config server", func() error { return srv.Serve(g.ctx, ln, tc) })
	return nil
}

// serveAdmin serves health, readiness, metrics and pprof on addr.
func serveAdmin(g *group, addr string, h http.Handler, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("admin listener: %w", err)
	}
	as := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Info("admin listener", "addr", ln.Addr().String())
	g.run("admin", func() error { return as.Serve(ln) })
	go func() { <-g.ctx.Done(); as.Close() }()
	return nil
}

// group runs the command's long-lived parts: the first to fail stops
// the others, and wait returns its error once they have all ended.
type group struct {
	ctx    context.Context // ends when the command's does or a part fails
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errc   chan error // room for every part's error: none blocks
}

func newGroup(ctx context.Context) *group {
	ctx, cancel := context.WithCancel(ctx)
	return &group{ctx: ctx, cancel: cancel, errc: make(chan error, 8)}
}

// run runs fn on a goroutine of its own. An error, other than the ones
// parts return when stopped, is the part's failure.
func (g *group) run(what string, fn func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := fn(); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, http.ErrServerClosed) {
			g.errc <- fmt.Errorf("%s: %w", what, err)
		}
	}()
}

// wait waits until ctx ends or a part fails, then until every part has
// stopped, and returns the first failure.
func (g *group) wait() error {
	var first error
	select {
	case first = <-g.errc:
		g.cancel()
	case <-g.ctx.Done():
	}
	g.wg.Wait()
	return first
}

// kubeConfig loads a kubeconfig file, or the in-cluster config.
func kubeConfig(path string) (*rest.Config, error) {
	if path != "" {
		return clientcmd.BuildConfigFromFlags("", path)
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("no -kubeconfig and not in a cluster: %w", err)
	}
	return cfg, nil
}

// gatewayAddresses turns -gateway-address, a comma-separated list, into
// status addresses.
func gatewayAddresses(list string) []gwv1.GatewayStatusAddress {
	var out []gwv1.GatewayStatusAddress
	for a := range strings.SplitSeq(list, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		a, r, _ := strings.Cut(a, "=")
		routability := gwv1.GatewayAddressRoutabilityType(strings.TrimSpace(r))
		a = strings.TrimSpace(a)
		t := gwv1.HostnameAddressType
		if net.ParseIP(a) != nil {
			t = gwv1.IPAddressType
		}
		out = append(out, gwv1.GatewayStatusAddress{Type: &t, Value: a, Routability: &routability})
	}
	return out
}

// fileToken reads the bearer token from a file, again when the file
// changes (a mounted Secret is updated in place by the kubelet).
type fileToken struct {
	path string
	log  *slog.Logger

	mu         sync.Mutex
	token      string
	modTime    time.Time
	readRecent bool // modTime was within 3 s of the last read
}

func (t *fileToken) read() (string, error) {
	b, err := os.ReadFile(t.path)
	if err != nil {
		return "", fmt.Errorf("config token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("config token file %s is empty", t.path)
	}
	return tok, nil
}

// get is configserver's TokenFunc: the file's token, re-read when its
// modification time moves; the last good token when it cannot be read.
// A rewrite within one timestamp tick keeps the time, so a file whose time
// was recent at the last read is read again (once more after it ages).
func (t *fileToken) get() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, err := os.Stat(t.path)
	if err == nil && (!st.ModTime().Equal(t.modTime) || t.readRecent) {
		if tok, err := t.read(); err == nil {
			t.token, t.modTime = tok, st.ModTime()
			t.readRecent = time.Since(st.ModTime()) < 3*time.Second
		} else {
			t.log.Error("config token unreadable; keeping the previous one", "err", err)
		}
	}
	return t.token
}

// apiWarnings logs the API server's warnings at debug level: the one we
// always get is for the GatewayClass finalizer's name, which the Gateway
// API spec chose.
type apiWarnings struct{ log *slog.Logger }

func (w apiWarnings) HandleWarningHeader(code int, agent, text string) {
	w.log.Debug("API server warning", "code", code, "text", text)
}
