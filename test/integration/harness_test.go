package integration_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gwapiv1 "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
	"github.com/tunnelgate/tunnelgate/ctrl/controller"
	"github.com/tunnelgate/tunnelgate/ctrl/sessionkeys"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/kubeenv"
	"github.com/tunnelgate/tunnelgate/test/kubelet"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

// One control plane for the package, inside a network namespace of the
// test's own (backends listen on netns.Range addresses, which
// EndpointSlices accept).
// The controller manager runs too, so Deployments become Pods, which the
// kubelet stand-in runs, and EndpointSlices.
var shared = kubeenv.NewShared(kubeenv.Options{ControllerManager: true})

func TestMain(m *testing.M) {
	kubelet.RunIfContainer() // a Pod's process: runs its program, exits
	netns.Run(func() int { shared.Main(m); return 0 })
}

// clients are the typed clients of an Env.
type clients struct {
	kube kubernetes.Interface
	gw   gwclient.Interface
	dyn  dynamic.Interface
}

func newClients(t testing.TB, env *kubeenv.Env) clients {
	t.Helper()
	return clientsFor(t, env.Config)
}

// clientsFor makes the clients of an identity.
func clientsFor(t testing.TB, cfg *rest.Config) clients {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	// client-go's default (5/s) would starve lease renewals behind
	// status writes, as in the controller command, which raises it too.
	cfg.QPS, cfg.Burst = 100, 200
	cfg.WarningHandler = rest.NoWarnings{} // the spec's finalizer name draws one
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gwclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return clients{kube, gw, dyn}
}

// running is a controller replica started by a test, with its config
// server on loopback.
type running struct {
	c      *controller.Controller
	srv    *configserver.Server
	keys   *sessionkeys.Publisher // with ctlOpts.sessionKeys
	url    string                 // the config server's base URL
	token  string                 // its bearer token, also in tokenFile
	tokenF string
	stop   context.CancelFunc
	done   chan struct{}
	// published counts the new shared config versions published.
	published atomic.Int64
}

// countingPublisher is a Publisher that counts new versions.
type countingPublisher struct {
	controller.Publisher
	n    *atomic.Int64
	last string
}

func (p *countingPublisher) Publish(cfg *proxycfg.Config) string {
	v := p.Publisher.Publish(cfg)
	if v != p.last {
		p.last = v
		p.n.Add(1)
	}
	return v
}

// startController runs a controller replica for controllerName in the
// test's process, its config server on addr (default: any loopback
// port). leader: nil runs without election, as the leader; otherwise the
// replica campaigns with those options.
func startController(t testing.TB, cl clients, controllerName string, leader *controller.LeaderOptions, addr string) *running {
	t.Helper()
	return startControllerWith(t, cl, controllerName, leader, addr, 20*time.Millisecond)
}

func startControllerWith(t testing.TB, cl clients, controllerName string, leader *controller.LeaderOptions, addr string, syncInterval time.Duration) *running {
	t.Helper()
	return startControllerOpts(t, cl, controllerName, ctlOpts{leader: leader, addr: addr, syncInterval: syncInterval})
}

// ctlOpts are a test controller's less common settings.
type ctlOpts struct {
	leader *controller.LeaderOptions
	addr   string
	// syncInterval paces syncs (controller.Options.SyncInterval).
	syncInterval time.Duration
	// cloudflare, when set, syncs tunnels through this API URL.
	cloudflare    string
	cfDriftEvery  time.Duration
	cfDNSEvery    time.Duration       // how often the zones are listed again (cloudflare.Options.DNSEvery)
	cloudflareRef **cloudflare.Syncer // receives the syncer
	// sessionKeys, when set, is the directory of session keys the
	// controller gives the proxies (as -session-keys-dir).
	sessionKeys string
	// accessKeys, when set, is where the controller gets Access teams'
	// keys.
	accessKeys controller.AccessKeySource
	// unknownKeys, when set, is told the Access teams proxies name in
	// configwatch.HeaderUnknownAccessKeys.
	unknownKeys func(team string)
}

func startControllerOpts(t testing.TB, cl clients, controllerName string, o ctlOpts) *running {
	t.Helper()
	leader, addr := o.leader, o.addr
	log := testLog(slog.LevelInfo)
	r := &running{token: "token-" + strings.ReplaceAll(t.Name(), "/", "-"), done: make(chan struct{})}
	fail := t.Errorf
	r.tokenF = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(r.tokenF, []byte(r.token), 0o600); err != nil {
		t.Fatal(err)
	}
	r.srv = configserver.New(configserver.Options{Token: r.token, Log: log, MaxWait: 5 * time.Second, OnUnknownAccessKeys: o.unknownKeys})
	events := record.NewBroadcaster()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cl.kube.CoreV1().Events("")})
	var c *controller.Controller
	var cf *cloudflare.Syncer
	if o.cloudflare != "" {
		cf = cloudflare.New(cloudflare.Options{BaseURL: o.cloudflare, SaveToken: controller.TunnelTokenWriter(cl.kube, nil),
			OnChange: func() { c.Changed() }, Log: log, DriftEvery: o.cfDriftEvery, DNSEvery: o.cfDNSEvery,
			MinBackoff: 50 * time.Millisecond, MaxBackoff: 2 * time.Second})
		if o.cloudflareRef != nil {
			*o.cloudflareRef = cf
		}
	}
	var publisher controller.Publisher = r.srv
	if o.sessionKeys != "" {
		keys, err := sessionkeys.New(r.srv, o.sessionKeys, log)
		if err != nil {
			t.Fatal(err)
		}
		r.keys, publisher = keys, keys
	}
	publisher = &countingPublisher{Publisher: publisher, n: &r.published}
	c, err := controller.New(controller.Options{
		Kube: cl.kube, Gateway: cl.gw, Dynamic: cl.dyn, ControllerName: controllerName,
		SyncInterval: o.syncInterval, Publisher: publisher, Log: log, Cloudflare: cf, AccessKeys: o.accessKeys,
		Events: events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "tunnelgate-controller"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r.url = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			<-r.done
			events.Shutdown()
		})
	}
	go r.srv.Serve(ctx, ln, nil)
	if leader == nil {
		c.SetLeader(true)
	} else {
		go controller.RunLeaderElection(ctx, cl.kube, *leader, c)
	}
	cfDone := make(chan struct{})
	go func() {
		defer close(cfDone)
		if cf != nil {
			cf.Run(ctx)
		}
	}()
	go func() {
		defer close(r.done)
		defer func() { <-cfDone }()
		if err := c.Run(ctx); err != nil {
			fail("controller: %v", err)
		}
	}()
	t.Cleanup(r.stop)
	return r
}

// startProxy runs a proxy that watches r's config server and serves
// Gateway listeners on port 80 through an HTTP server on loopback; it
// returns the server's base URL.
func startProxy(t testing.TB, r *running) (*dataplane.Proxy, string) {
	t.Helper()
	p, url, _ := startProxyCached(t, r, "")
	return p, url
}

// startProxyCached is startProxy with a config cache file (none when
// empty); stop ends the proxy before the test does.
func startProxyCached(t testing.TB, r *running, cacheFile string) (p *dataplane.Proxy, url string, stop func()) {
	t.Helper()
	return startProxyOn(t, r, cacheFile, 80)
}

// startOriginProxy is startProxy serving the origin listener (the one
// cloudflared sends a tunnel's requests to, every listener by hostname),
// where load balancer monitors' health requests are answered.
func startOriginProxy(t testing.TB, r *running) (*dataplane.Proxy, string) {
	t.Helper()
	p, url, _ := startProxyOn(t, r, "", 0)
	return p, url
}

// startProxyOn is startProxyCached serving the Gateway listener port, or
// the origin listener for port 0.
func startProxyOn(t testing.TB, r *running, cacheFile string, port int) (p *dataplane.Proxy, url string, stop func()) {
	t.Helper()
	log := testLog(slog.LevelWarn)
	p = dataplane.New(dataplane.Options{Log: log})
	w, err := configwatch.New(p, configwatch.Options{URL: r.url, TokenFile: r.tokenF, CacheFile: cacheFile, Wait: 5 * time.Second,
		MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: p.Handler(port, true), ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			hs.Close()
			cancel()
			<-done
			p.Close()
		})
	}
	t.Cleanup(stop)
	return p, "http://" + ln.Addr().String(), stop
}

// get sends a request for host+path through a proxy.
func get(proxyURL, host, path string) (int, string, http.Header, error) {
	req, err := http.NewRequest("GET", proxyURL+path, nil)
	if err != nil {
		return 0, "", nil, err
	}
	req.Host = host
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header, err
}

// eventually polls cond until it holds or the timeout passes; it reports
// the last reason cond gave.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, why := cond()
		if ok {
			return
		}
		last = why
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v: %s", what, timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// namespace creates a namespace for one test and leaves it in place.
// Each test names its own, and the API server lives as long as the test
// process, so a run with -count above 1 fails at the second creation of
// the same name.
func namespace(t testing.TB, cl clients, name string) string {
	t.Helper()
	_, err := cl.kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// findCond returns the condition of type typ.
func findCond(list []metav1.Condition, typ string) *metav1.Condition {
	for i := range list {
		if list[i].Type == typ {
			return &list[i]
		}
	}
	return nil
}

// condIs says whether list has typ with status and (when given) reason.
func condIs(list []metav1.Condition, typ string, status metav1.ConditionStatus, reason string) (bool, string) {
	c := findCond(list, typ)
	if c == nil {
		return false, typ + " not set"
	}
	if c.Status != status || (reason != "" && c.Reason != reason) {
		return false, fmt.Sprintf("%s is %s/%s: %s", typ, c.Status, c.Reason, c.Message)
	}
	return true, ""
}

// testLog logs to stderr when $TUNNELGATE_TEST_LOG is set: controllers
// and proxies log from goroutines that may outlive a test, where t.Log
// would panic.
func testLog(level slog.Level) *slog.Logger {
	if os.Getenv("TUNNELGATE_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// updateRoute changes an HTTPRoute with mutate and writes it, reading it
// again when a status write of the controller came in between (a
// conflict), as kubectl edit would. It returns the route as written.
func updateRoute(t testing.TB, gwAPI gwapiv1.GatewayV1Interface, ns, name string, mutate func(*gwv1.HTTPRoute)) *gwv1.HTTPRoute {
	t.Helper()
	var out *gwv1.HTTPRoute
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		route, err := gwAPI.HTTPRoutes(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(route)
		out, err = gwAPI.HTTPRoutes(ns).Update(context.Background(), route, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
