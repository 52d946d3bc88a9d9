package proxycmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testmetrics"
	"github.com/tunnelgate/tunnelgate/test/testnet"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

func TestProxyCommandConfigSource(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "-config is required unless -controller is given"},
		{[]string{"-config", "c.json", "-controller", "http://127.0.0.1:1"}, "exclude each other"},
		{[]string{"--controller", "http://127.0.0.1:1"}, "-controller needs -token-file"},
		{[]string{"-config", "c.json", "-token-file", "t"}, "[-token-file] only go with -controller"},
		{[]string{"-config", "c.json", "-config-cache", "x", "-ca-file", "y"}, "only go with -controller"},
		{[]string{"-controller", "ftp://x", "-token-file", filepath.Join(dir, "t")}, "want http:// or https://"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), "tunnelgate proxy", c.args, &stdout, &stderr, nil); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}

// A listener that cannot open ends the command with the controller's
// watch running: it stops the watch and exits 1, rather than wait for a
// signal that a Pod whose port is taken would never get.
func TestProxyCommandExitsWhenAListenerFails(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &testproc.SyncBuffer{}
	exit := make(chan int, 1)
	go func() {
		exit <- Main(ctx, "tunnelgate proxy", []string{"-controller", "http://127.0.0.1:1", "-token-file", token,
			"-listen", taken.Addr().String(), "-admin", "127.0.0.1:0"}, io.Discard, stderr, nil)
	}()
	select {
	case code := <-exit:
		if code != 1 || !strings.Contains(stderr.String(), "origin listener") {
			t.Fatalf("exit %d; want 1 naming the origin listener:\n%s", code, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the proxy still runs 30 s after its origin listener failed:\n%s", stderr)
	}
}

// runProxyCommand runs "tunnelgate proxy args..." on loopback until the
// returned stop is called; stop returns the exit code.
func runProxyCommand(t *testing.T, args ...string) (dataplane.Bound, func() int, *testproc.SyncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan dataplane.Bound, 1)
	exit := make(chan int, 1)
	stderr := &testproc.SyncBuffer{}
	args = append([]string{"-listen", "127.0.0.1:0", "-admin", "127.0.0.1:0"}, args...)
	go func() {
		exit <- Main(ctx, "tunnelgate proxy", args, io.Discard, stderr, func(b dataplane.Bound) { ready <- b })
	}()
	var b dataplane.Bound
	select {
	case b = <-ready:
	case code := <-exit:
		t.Fatalf("proxy exited %d:\n%s", code, stderr)
	}
	stop := sync.OnceValue(func() int { cancel(); return <-exit })
	t.Cleanup(func() { stop() })
	return b, stop, stderr
}

// waitGet polls url until it answers want, failing after 10 s.
func waitGet(t *testing.T, url, host, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Host = host
		if res, err := http.DefaultClient.Do(req); err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			last = res.Status + " " + string(b)
			if res.StatusCode == 200 && string(b) == want {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s (Host %s) never answered %q; last %q", url, host, want, last)
}

// streamOnce reads the first byte a stream route's backend sends through
// addr.
func streamOnce(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if b, err := io.ReadAll(c); err != nil || string(b) != "s" {
		t.Fatalf("through the origin port: %q, %v", b, err)
	}
}

// healthCheck is the health check of the listener the command tests
// serve, so that the health answers' family is served too.
var healthCheck = proxycfg.HealthCheck{Path: "/.tunnelgate/health", Header: "X-Health-Token", Token: "a token of 16+ bytes"}

// healthOnce asks the origin at addr for app.example's health, as a load
// balancer monitor does.
func healthOnce(t *testing.T, addr string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+healthCheck.Path, nil)
	req.Host = "app.example"
	req.Header.Set(healthCheck.Header, healthCheck.Token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(b) != "healthy\n" {
		t.Fatalf("health request: %s %q", res.Status, b)
	}
}

// The proxy command fed by a controller, then restarted with the
// controller gone: it serves from its cache file.
func TestProxyCommandWatchesTheController(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "backend") }))
	defer backend.Close()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache.json")

	srv := configserver.New(configserver.Options{Token: "tok", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	// A TCPRoute on an origin port beside, so that its families are
	// served too, and a cluster without endpoints, which is served at
	// every -metrics-detail.
	streamBackend := testnet.RawServer(t, func(c net.Conn) { io.WriteString(c, "s") })
	originPort, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	srv.Publish(&proxycfg.Config{
		Schema:    proxycfg.SchemaVersion,
		Listeners: []proxycfg.Listener{{Protocol: proxycfg.ListenerHTTP, Name: "l", HealthCheck: &healthCheck}, {Protocol: proxycfg.ListenerTCP, Name: "t"}},
		Routes: []proxycfg.Route{{Kind: proxycfg.KindHTTP, Namespace: "n", Name: "r", Listeners: []string{"l"},
			Rules: []proxycfg.Rule{{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}, Backends: []proxycfg.BackendRef{{Cluster: "c", Weight: 1}}}}},
			{Kind: proxycfg.KindTCP, Namespace: "n", Name: "s", Listeners: []string{"t"}, OriginPort: originPort,
				Rules: []proxycfg.Rule{{Backends: []proxycfg.BackendRef{{Cluster: "s", Weight: 1}}}}}},
		Clusters: []proxycfg.Cluster{{Protocol: proxycfg.ProtoHTTP1, Name: "c", Endpoints: []proxycfg.Endpoint{{Address: backend.Listener.Addr().String()}}},
			{Protocol: proxycfg.ProtoTCP, Name: "s", Endpoints: []proxycfg.Endpoint{{Address: streamBackend}}},
			{Protocol: proxycfg.ProtoHTTP1, Name: "empty"}},
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln, nil) }()
	controller := "http://" + ln.Addr().String()

	b, stop, stderr := runProxyCommand(t, "-controller", controller, "-token-file", tokenFile, "-config-cache", cache)
	waitGet(t, "http://"+b.Origin+"/", "app.example", "backend")
	waitGet(t, "http://"+b.Admin+"/readyz", "", "ok\n")
	streamOnce(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(originPort)))
	healthOnce(t, b.Origin)
	if code, body := testnet.GetWithToken("http://"+b.Admin+"/metrics", ""); code != 200 {
		t.Errorf("metrics: %d\n%s", code, body)
	} else {
		testmetrics.CheckCatalogue(t, "Proxy", body)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}

	// The controller is gone; the cache serves. With -metrics-detail=route
	// the families of rules and clusters listed apart are served too.
	b, stop, stderr = runProxyCommand(t, "-controller", controller, "-token-file", tokenFile, "-config-cache", cache, "-metrics-detail", "route")
	waitGet(t, "http://"+b.Origin+"/", "app.example", "backend")
	streamOnce(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(originPort)))
	healthOnce(t, b.Origin)
	if code, body := testnet.GetWithToken("http://"+b.Admin+"/metrics", ""); code != 200 {
		t.Errorf("metrics: %d\n%s", code, body)
	} else {
		testmetrics.CheckCatalogue(t, "Proxy", body, "With `-metrics-detail=route`")
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "serving the cached config") {
		t.Errorf("the log does not say the cache is served:\n%s", stderr)
	}
}

// A SIGHUP loads -config again, and the stop startConfigSource returns
// ends the reloads: it returns once their goroutine has.
func TestConfigFileReloadsOnHangup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.json")
	write := func(cfg proxycfg.Config) {
		t.Helper()
		b, err := json.Marshal(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(exampleProxyConfig(t))
	p := dataplane.New(dataplane.Options{Log: slog.New(slog.DiscardHandler)})
	defer p.Close()
	r := &run{f: &flags{file: file}, log: slog.New(slog.DiscardHandler), p: p}
	stop, code, err := r.startConfigSource(context.Background())
	if err != nil {
		t.Fatalf("startConfigSource: exit %d, %v", code, err)
	}
	first := p.Version()

	edited := exampleProxyConfig(t)
	edited.Clusters[0].Endpoints = append(edited.Clusters[0].Endpoints, proxycfg.Endpoint{Address: "127.0.0.1:1"})
	write(edited)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for p.Version() == first && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if p.Version() == first {
		t.Fatal("the edited config was not loaded after SIGHUP")
	}
	if got := len(p.Config().Clusters[0].Endpoints); got != len(edited.Clusters[0].Endpoints) {
		t.Fatalf("the config served has %d endpoints in its first cluster, want %d", got, len(edited.Clusters[0].Endpoints))
	}

	ended := make(chan struct{})
	go func() { stop(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not return: the reload goroutine did not end")
	}
	var stacks bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&stacks, 2); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stacks.String(), "reloadOnHangup") {
		t.Fatalf("the reload goroutine outlived stop:\n%s", stacks.String())
	}
}
