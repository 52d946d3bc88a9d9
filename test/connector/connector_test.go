package connector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tunnels is one tunnel whose configuration a test sets.
type tunnels struct {
	mu      sync.Mutex
	config  json.RawMessage
	version int
}

const goodToken = "good-token"

func (t *tunnels) CheckTunnelToken(token string) (string, string, error) {
	if token != goodToken {
		return "", "", errors.New("wrong secret")
	}
	return "account", "tunnel", nil
}

func (t *tunnels) TunnelConfig(string, string) (json.RawMessage, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.config, t.version
}

func (t *tunnels) set(doc string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.config, t.version = json.RawMessage(doc), t.version+1
}

// origin serves on a unix socket and answers "<name> <host> <path>"; the
// path /slow waits until release is closed.
type origin struct {
	name    string
	socket  string
	release chan struct{}
	started chan struct{} // a /slow request arrived
	headers chan http.Header
}

func startOrigin(t *testing.T, name string) *origin {
	t.Helper()
	o := &origin{name: name, socket: filepath.Join(t.TempDir(), name+".sock"),
		release: make(chan struct{}), started: make(chan struct{}, 16), headers: make(chan http.Header, 1)}
	ln, err := net.Listen("unix", o.socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			o.started <- struct{}{}
			select {
			case <-o.release:
			case <-time.After(10 * time.Second):
			}
		}
		select {
		case o.headers <- r.Header.Clone():
		default:
		}
		fmt.Fprintf(w, "%s %s %s", o.name, r.Host, r.URL.Path)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return o
}

// running is a connector started by a test.
type running struct {
	stop    chan struct{}
	stopped chan struct{} // closed when Run returned, err set
	err     error
}

// startConnector runs a connector whose /sock is socket.
func startConnector(t *testing.T, e *Edge, name, token, socket string, grace time.Duration) *running {
	t.Helper()
	return startConnectorPaths(t, e, name, token, grace, func(p string) string { return strings.Replace(p, "/sock", socket, 1) })
}

// startConnectorPaths runs a connector that maps the document's paths
// with hostPath.
func startConnectorPaths(t *testing.T, e *Edge, name, token string, grace time.Duration, hostPath func(string) string) *running {
	t.Helper()
	return startConnectorOpts(t, Options{Edge: e.Addr(), Token: token, Name: name, GracePeriod: grace, HostPath: hostPath})
}

// startConnectorOpts runs a connector with opts until the test ends.
func startConnectorOpts(t *testing.T, opts Options) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{stop: make(chan struct{}), stopped: make(chan struct{})}
	go func() { r.err = Run(ctx, opts, r.stop); close(r.stopped) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.stopped:
		case <-time.After(10 * time.Second):
			t.Errorf("connector %s did not stop", opts.Name)
		}
	})
	return r
}

func startEdge(t *testing.T, tun *tunnels) *Edge {
	t.Helper()
	e, err := StartEdge("127.0.0.1:0", tun, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func registered(e *Edge, names ...string) func() bool {
	return func() bool { return strings.Join(e.Connectors(), ",") == strings.Join(names, ",") }
}

func get(c *http.Client, url string) (int, string, error) {
	res, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), err
}

const appConfig = `{"ingress":[
 {"hostname":"app.example.com","service":"unix:/sock"},
 {"hostname":"*.wild.example.com","path":"^/api/","service":"unix:/sock"},
 {"service":"http_status:404"}]}`

// Requests go by the ingress rules to the origin, with their Host and the
// edge's headers; a new configuration version reaches the connector.
func TestIngressRulesAndConfigPushes(t *testing.T) {
	tun := &tunnels{}
	tun.set(appConfig)
	e := startEdge(t, tun)
	o := startOrigin(t, "a")
	startConnector(t, e, "a", goodToken, o.socket, time.Second)
	waitFor(t, "connector a registered", registered(e, "a"))
	c := e.Client(5 * time.Second)

	for url, want := range map[string]string{
		"http://app.example.com/x":               "200 a app.example.com /x",
		"http://deep.sub.wild.example.com/api/v": "200 a deep.sub.wild.example.com /api/v",
		"http://sub.wild.example.com/other":      "404 ",
		"http://other.example.com/":              "404 ",
	} {
		code, body, err := get(c, url)
		if got := fmt.Sprintf("%d %s", code, body); err != nil || got != want {
			t.Errorf("GET %s = %q, %v; want %q", url, got, err, want)
		}
	}
	if _, _, err := get(c, "http://app.example.com/h"); err != nil {
		t.Fatal(err)
	}
	h := <-o.headers
	for _, k := range []string{"Cf-Connecting-Ip", "Cf-Ray", "Cf-Visitor", "X-Forwarded-For", "X-Forwarded-Proto"} {
		if h.Get(k) == "" {
			t.Errorf("the origin got no %s: %v", k, h)
		}
	}

	tun.set(`{"ingress":[{"hostname":"app.example.com","service":"http_status:418"},{"service":"http_status:404"}]}`)
	waitFor(t, "the new configuration", func() bool {
		code, _, _ := get(c, "http://app.example.com/")
		return code == http.StatusTeapot
	})
}

// A token the edge does not accept registers nothing.
func TestForgedTokenRefused(t *testing.T) {
	tun := &tunnels{}
	tun.set(appConfig)
	e := startEdge(t, tun)
	c := &connector{opts: Options{Edge: e.Addr(), Token: "forged", Name: "x"}}
	_, err := c.dial(t.Context())
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("dial with a forged token: %v; want refused", err)
	}
	if n := e.Connectors(); len(n) != 0 {
		t.Fatalf("registered %v", n)
	}
	if _, _, err := get(e.Client(time.Second), "http://app.example.com/"); !errors.Is(err, errNoConnector) {
		t.Fatalf("a request with no connector: %v; want errNoConnector", err)
	}
}

// Stopping finishes the request in flight and takes no new one: the edge
// sends those to the other connector; the stopped one then exits.
func TestStopFinishesInFlightAndTakesNoNew(t *testing.T) {
	tun := &tunnels{}
	tun.set(appConfig)
	e := startEdge(t, tun)
	oa, ob := startOrigin(t, "a"), startOrigin(t, "b")
	a := startConnector(t, e, "a", goodToken, oa.socket, 5*time.Second)
	waitFor(t, "a registered", registered(e, "a"))
	c := e.Client(15 * time.Second)

	slow := make(chan string, 1)
	go func() {
		code, body, err := get(c, "http://app.example.com/slow")
		slow <- fmt.Sprintf("%d %s %v", code, body, err)
	}()
	<-oa.started
	startConnector(t, e, "b", goodToken, ob.socket, 5*time.Second)
	waitFor(t, "b registered", registered(e, "a", "b"))

	close(a.stop)
	// The edge learns of the stop from a's GOAWAY; a request it routed
	// before that is a's to answer, as at Cloudflare.
	waitFor(t, "a's GOAWAY at the edge", func() bool { return strings.Join(e.Taking(), ",") == "b" })
	for i := range 20 {
		code, body, err := get(c, "http://app.example.com/fast")
		if err != nil || code != 200 || !strings.HasPrefix(body, "b ") {
			t.Fatalf("request %d after a stopped: %d %q %v; want b's answer", i, code, body, err)
		}
	}
	select {
	case <-a.stopped:
		t.Fatalf("a exited (%v) with a request in flight", a.err)
	default:
	}
	close(oa.release)
	if got := <-slow; got != "200 a app.example.com /slow <nil>" {
		t.Fatalf("the request in flight when a stopped: %s", got)
	}
	select {
	case <-a.stopped:
		if a.err != nil {
			t.Fatalf("a: %v", a.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a did not exit once its request was done")
	}
	waitFor(t, "a gone from the edge", registered(e, "b"))
}

// The grace period bounds the wait for a request that does not end.
func TestGracePeriodBoundsTheWait(t *testing.T) {
	tun := &tunnels{}
	tun.set(appConfig)
	e := startEdge(t, tun)
	o := startOrigin(t, "a")
	a := startConnector(t, e, "a", goodToken, o.socket, 300*time.Millisecond)
	waitFor(t, "a registered", registered(e, "a"))
	go func() { _, _, _ = get(e.Client(15*time.Second), "http://app.example.com/slow") }()
	<-o.started
	start := time.Now()
	close(a.stop)
	select {
	case <-a.stopped:
		if d := time.Since(start); d < 250*time.Millisecond {
			t.Fatalf("exited after %s, before its grace period", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting 5s after a grace period of 300ms")
	}
	close(o.release)
}

// Under load, connectors replaced one after the other lose no request.
func TestReplacingConnectorsLosesNothing(t *testing.T) {
	tun := &tunnels{}
	tun.set(appConfig)
	e := startEdge(t, tun)
	o := startOrigin(t, "o")
	first := startConnector(t, e, "c0", goodToken, o.socket, 5*time.Second)
	waitFor(t, "c0 registered", registered(e, "c0"))
	c := e.Client(10 * time.Second)

	var sent, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5000; i++ { // bounded, whatever happens
				select {
				case <-stop:
					return
				default:
				}
				sent.Add(1)
				code, body, err := get(c, "http://app.example.com/load")
				if err != nil || code != 200 || body != "o app.example.com /load" {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%d %q %v", code, body, err))
				}
			}
		}()
	}
	prev := first
	for i := 1; i <= 4; i++ {
		name := fmt.Sprintf("c%d", i)
		next := startConnector(t, e, name, goodToken, o.socket, 5*time.Second)
		waitFor(t, name+" registered", func() bool { return strings.HasSuffix(strings.Join(e.Connectors(), ","), name) })
		time.Sleep(100 * time.Millisecond)
		close(prev.stop)
		<-prev.stopped
		prev = next
	}
	close(stop)
	wg.Wait()
	t.Logf("requests sent %d, failed %d", sent.Load(), failed.Load())
	if failed.Load() != 0 || sent.Load() == 0 {
		t.Fatalf("%d of %d requests failed; first: %v", failed.Load(), sent.Load(), firstErr.Load())
	}
}

// The chart's command line parses; what is not modeled is refused.
func TestParseArgs(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := ParseArgs([]string{"--no-autoupdate", "tunnel", "--metrics=0.0.0.0:2000", "--protocol=http2", "--grace-period=30s",
		"--edge", "10.88.0.1:7844", "--access-certs=acme=http://127.0.0.1:9/certs", "--access-certs", "zeta=http://127.0.0.1:9/z",
		"run", "--token-file=" + tok})
	if err != nil || opts.Edge != "10.88.0.1:7844" || opts.Token != "tok" || opts.GracePeriod != 30*time.Second ||
		opts.Metrics != "0.0.0.0:2000" || opts.Protocol != "http2" ||
		opts.AccessCerts["acme"] != "http://127.0.0.1:9/certs" || opts.AccessCerts["zeta"] != "http://127.0.0.1:9/z" {
		t.Fatalf("ParseArgs = %+v, %v", opts, err)
	}
	for _, bad := range [][]string{
		{"tunnel", "run", "--token=t"},                                    // no edge
		{"tunnel", "--edge=e", "run"},                                     // no token
		{"tunnel", "--edge=e", "--grace-period=soon", "run", "--token=t"}, // bad duration
		{"tunnel", "--edge=e", "--post-quantum", "run", "--token=t"},      // not modeled
		{"tunnel", "--edge=e", "--access-certs=acme", "run", "--token=t"}, // no URL
	} {
		if _, err := ParseArgs(bad); err == nil {
			t.Errorf("ParseArgs(%q) accepted", bad)
		}
	}
}

// twoTunnels are tunnels "ta" and "tb" (tokens "a" and "b"), each with a
// catch-all to its connectors' origin; hostnames resolve by their first
// label: a.example.com to ta, b.example.com to tb, others to none.
type twoTunnels struct{}

func (twoTunnels) CheckTunnelToken(token string) (string, string, error) {
	if token != "a" && token != "b" {
		return "", "", errors.New("wrong secret")
	}
	return "account", "t" + token, nil
}

func (twoTunnels) TunnelConfig(string, string) (json.RawMessage, int) {
	return json.RawMessage(`{"ingress":[{"service":"unix:/sock"}]}`), 1
}

func (twoTunnels) ResolveTunnel(host string) (string, bool) {
	switch host {
	case "a.example.com", "b.example.com":
		return "t" + host[:1], true
	}
	return "", false
}

// With RouteByDNS, a request reaches only the connectors of the tunnel its
// hostname names, and a hostname that names none reaches nobody.
func TestRouteByDNS(t *testing.T) {
	e, err := StartEdge("127.0.0.1:0", twoTunnels{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	e.RouteByDNS(twoTunnels{})
	oa, ob := startOrigin(t, "origin-a"), startOrigin(t, "origin-b")
	startConnector(t, e, "a1", "a", oa.socket, time.Second)
	startConnector(t, e, "b1", "b", ob.socket, time.Second)
	waitFor(t, "both connectors", func() bool { return len(e.Connectors()) == 2 })
	if got := e.ConnectorsOf("ta"); len(got) != 1 || got[0] != "a1" {
		t.Errorf("ConnectorsOf(ta) = %v", got)
	}
	c := e.Client(5 * time.Second)
	for range 4 { // round robin would reach the other tunnel's connector
		for host, want := range map[string]string{"a.example.com": "origin-a", "b.example.com": "origin-b"} {
			code, body, err := get(c, "http://"+host+"/")
			if err != nil || code != 200 || !strings.HasPrefix(body, want+" ") {
				t.Fatalf("GET %s = %d %q, %v; want %s", host, code, body, err, want)
			}
		}
	}
	if _, _, err := get(c, "http://c.example.com/"); err == nil || !strings.Contains(err.Error(), "names no tunnel") {
		t.Errorf("a hostname naming no tunnel: %v", err)
	}
}

// rotating is one tunnel whose secret a test changes: a token is good
// while it is the current one.
type rotating struct {
	*tunnels
	mu      sync.Mutex
	current string
}

func (r *rotating) CheckTunnelToken(token string) (string, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token != r.current {
		return "", "", errors.New("wrong secret")
	}
	return "account", "tunnel", nil
}

func (r *rotating) rotate(token string) {
	r.mu.Lock()
	r.current = token
	r.mu.Unlock()
}

// After the tunnel's secret changes, as after a token rotation in
// Cloudflare, the connection registered with the old token keeps
// serving; a new registration with the old token is refused, and one
// with the new token serves beside the old.
func TestRotatedTokenKeepsRegisteredConnections(t *testing.T) {
	tun := &rotating{tunnels: &tunnels{}, current: "old-token"}
	tun.set(appConfig)
	e, err := StartEdge("127.0.0.1:0", tun, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	o := startOrigin(t, "o")
	startConnector(t, e, "before", "old-token", o.socket, time.Second)
	waitFor(t, "the first connector registered", registered(e, "before"))

	tun.rotate("new-token")
	c := e.Client(5 * time.Second)
	for range 5 {
		if code, body, err := get(c, "http://app.example.com/x"); err != nil || code != http.StatusOK || !strings.HasPrefix(body, "o ") {
			t.Fatalf("through the connection registered before the rotation: %d %q %v", code, body, err)
		}
	}
	late := &connector{opts: Options{Edge: e.Addr(), Token: "old-token", Name: "late"}}
	if _, err := late.dial(t.Context()); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("a new registration with the old token: %v; want refused", err)
	}
	startConnector(t, e, "after", "new-token", o.socket, time.Second)
	waitFor(t, "the connector with the new token registered", registered(e, "before", "after"))
	if old, fresh := e.RegisteredWith("old-token"), e.RegisteredWith("new-token"); strings.Join(old, ",") != "before" || strings.Join(fresh, ",") != "after" {
		t.Errorf("registered with the old token %v, with the new %v; want [before] and [after]", old, fresh)
	}
}
