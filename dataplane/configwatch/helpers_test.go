package configwatch_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// End-to-end tests: a configserver.Server and a dataplane.Proxy fed by a
// configwatch.Client, on loopback sockets, with real backends.

const token = "test-token"

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// backend is a loopback HTTP server answering its name.
func backend(t *testing.T, name string) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, name)
	}))
	t.Cleanup(s.Close)
	return s.Listener.Addr().String()
}

// config routes every request on host app.example to cluster "app" at
// addrs, and requests on host other.example to cluster "other" when
// other is set. routeTag, when set, goes into the route's hostnames, so
// two configs with the same clusters differ in routes.
func config(routeTag string, addrs ...string) *proxycfg.Config {
	hosts := []string{"app.example"}
	if routeTag != "" {
		hosts = append(hosts, routeTag+".example")
	}
	cfg := &proxycfg.Config{
		Schema:    proxycfg.SchemaVersion,
		Listeners: []proxycfg.Listener{{Protocol: proxycfg.ListenerHTTP, Name: "l"}},
		Routes: []proxycfg.Route{{Kind: proxycfg.KindHTTP, Namespace: "n", Name: "r", Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			Listeners: []string{"l"}, Hostnames: hosts,
			Rules: []proxycfg.Rule{{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}, Backends: []proxycfg.BackendRef{{Cluster: "app", Weight: 1}}}}}},
		Clusters: []proxycfg.Cluster{{Protocol: proxycfg.ProtoHTTP1, Name: "app"}},
	}
	for _, a := range addrs {
		cfg.Clusters[0].Endpoints = append(cfg.Clusters[0].Endpoints, proxycfg.Endpoint{Address: a})
	}
	return cfg
}

// controller is a config server on a loopback address that records the
// requests it gets.
type controller struct {
	*configserver.Server
	addr string
	url  string

	mu       sync.Mutex
	requests int
	held     map[string]int // version asked → requests in progress
	stop     func()
}

// startController serves a new configserver.Server on addr ("" for any
// free port). Close it with c.stop, or leave it to the test's cleanup.
func startController(t *testing.T, addr string, opts configserver.Options) *controller {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if opts.Token == "" && opts.TokenFunc == nil {
		opts.Token = token
	}
	if opts.Log == nil {
		opts.Log = quietLog()
	}
	if opts.MaxWait == 0 {
		opts.MaxWait = time.Hour
	}
	var ln net.Listener
	var err error
	// A port just closed by the previous controller may take a moment to
	// be free again.
	for i := 0; ; i++ {
		if ln, err = net.Listen("tcp", addr); err == nil || i == 100 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	c := &controller{Server: configserver.New(opts), addr: ln.Addr().String(), held: map[string]int{}}
	c.url = "http://" + c.addr
	inner := c.Handler()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.URL.Query().Get(configwatch.ParamVersion)
		c.mu.Lock()
		c.requests++
		c.held[v]++
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			c.held[v]--
			c.mu.Unlock()
		}()
		inner.ServeHTTP(w, r)
	})}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	c.stop = sync.OnceFunc(func() {
		c.Drain()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	})
	t.Cleanup(c.stop)
	return c
}

// counts returns how many requests the controller got, and how many are
// in progress asking with version v.
func (c *controller) counts(v string) (requests, held int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests, c.held[v]
}

// proxy is a dataplane.Proxy serving on loopback, fed by a Client.
type proxy struct {
	t     *testing.T
	p     *dataplane.Proxy
	w     *configwatch.Client
	bound dataplane.Bound
	http  *http.Client
	stop  func()
}

// startProxy starts a proxy watching url. opts.URL is set from url;
// a token file holding token is made unless opts has one.
func startProxy(t *testing.T, url string, opts configwatch.Options) *proxy {
	t.Helper()
	opts.URL = url
	if opts.TokenFile == "" {
		opts.TokenFile = writeFile(t, filepath.Join(t.TempDir(), "token"), token+"\n")
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff, opts.MaxBackoff = 10*time.Millisecond, 100*time.Millisecond
	}
	if opts.Log == nil {
		opts.Log = quietLog()
	}
	var w *configwatch.Client
	p := dataplane.New(dataplane.Options{Log: quietLog(), Metrics: func(m metric.Meter) error { return w.RegisterMetrics(m) }})
	w, err := configwatch.New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan dataplane.Bound, 1)
	served, watched := make(chan error, 1), make(chan error, 1)
	go func() {
		served <- p.Serve(ctx, dataplane.ServeOptions{Origin: "127.0.0.1:0", Admin: "127.0.0.1:0", Grace: 5 * time.Second,
			Ready: func(b dataplane.Bound) { ready <- b }})
	}()
	go func() { watched <- w.Run(ctx) }()
	px := &proxy{t: t, p: p, w: w, http: &http.Client{Transport: &http.Transport{}}}
	select {
	case px.bound = <-ready:
	case err := <-served:
		t.Fatalf("Serve: %v", err)
	}
	px.stop = sync.OnceFunc(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if err := <-watched; err != nil {
			t.Errorf("Run: %v", err)
		}
		px.http.CloseIdleConnections()
		p.Close()
	})
	t.Cleanup(px.stop)
	return px
}

// get sends a request through the proxy's origin listener.
func (px *proxy) get(host string) (int, string) {
	px.t.Helper()
	req, _ := http.NewRequest("GET", "http://"+px.bound.Origin+"/", nil)
	req.Host = host
	res, err := px.http.Do(req)
	if err != nil {
		px.t.Fatalf("request through the proxy: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// admin GETs path on the admin listener.
func (px *proxy) admin(path string) (int, string) {
	px.t.Helper()
	res, err := px.http.Get("http://" + px.bound.Admin + path)
	if err != nil {
		px.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// waitServes waits until host is answered 200 with body.
func (px *proxy) waitServes(host, body string) {
	px.t.Helper()
	waitFor(px.t, fmt.Sprintf("%s to answer %q", host, body), func() bool {
		code, got := px.get(host)
		return code == 200 && got == body
	})
}

// waitFor polls cond until it holds, failing the test after 10 s: a bound
// on behaviour, never a measure of speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// metricLine finds a sample in a Prometheus text scrape.
func metricLine(scrape, series string) (string, bool) {
	for _, line := range strings.Split(scrape, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v, true
		}
	}
	return "", false
}
