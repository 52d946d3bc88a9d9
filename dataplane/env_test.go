package dataplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// testEnv is a proxy serving on loopback: an origin listener (trusted,
// HTTP/1.1), a TLS origin listener (h2 and http/1.1, generated
// certificate) and a plain listener (untrusted, HTTP/1.1 and h2c).
type testEnv struct {
	t      *testing.T
	p      *Proxy
	bound  Bound
	client *http.Client // HTTP/1.1 client
	h2     *http.Client // HTTP/2 over TLS to the TLS origin listener
	h2c    *http.Client // HTTP/2 prior knowledge to the plain listener
}

func newTestEnv(t *testing.T, cfg *proxycfg.Config, opts ...func(*Options)) *testEnv {
	t.Helper()
	o := Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, f := range opts {
		f(&o)
	}
	p := New(o)
	if cfg != nil {
		if err := p.Load(cfg); err != nil {
			t.Fatalf("Load: %v", err)
		}
	}
	b := serveUntilCleanup(t, p, ServeOptions{
		Origin: "127.0.0.1:0", OriginTLS: "127.0.0.1:0", CertDir: t.TempDir(),
		Plain: "127.0.0.1:0", Admin: "127.0.0.1:0", Grace: 5 * time.Second,
	})
	caPEM, err := os.ReadFile(b.OriginCA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	var h2 http.Protocols
	h2.SetHTTP2(true)
	var h2c http.Protocols
	h2c.SetUnencryptedHTTP2(true)
	e := &testEnv{
		t: t, p: p, bound: b,
		client: &http.Client{Transport: &http.Transport{DisableCompression: true}, CheckRedirect: noRedirect},
		h2: &http.Client{Transport: &http.Transport{Protocols: &h2, ForceAttemptHTTP2: true,
			TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "localhost"}}, CheckRedirect: noRedirect},
		h2c: &http.Client{Transport: &http.Transport{Protocols: &h2c}, CheckRedirect: noRedirect},
	}
	t.Cleanup(func() {
		e.client.CloseIdleConnections()
		e.h2.CloseIdleConnections()
		e.h2c.CloseIdleConnections()
	})
	t.Cleanup(func() { checkNoLeakedConns(t, p) }) // runs first: before shutdown
	t.Cleanup(func() { checkNoHeldBuffers(t, p) })
	return e
}

// checkNoHeldBuffers checks that, once a test's requests are over, no
// body buffer is still charged against the budget: one that is never
// released takes the budget from every later request.
func checkNoHeldBuffers(t *testing.T, p *Proxy) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second) // mirrors finish on their own
	for p.buffers.inUse() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := p.buffers.inUse(); n != 0 {
		t.Errorf("%d bytes of body buffers still held after the test's requests", n)
	}
}

// serveUntilCleanup runs p.Serve(l) until the test ends, and returns the
// bound listeners once they are open.
func serveUntilCleanup(t *testing.T, p *Proxy, l ServeOptions) Bound {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan Bound, 1), make(chan error, 1)
	l.Ready = func(b Bound) { ready <- b }
	go func() { done <- p.Serve(ctx, l) }()
	var b Bound
	select {
	case b = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("Serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return b
}

// checkNoLeakedConns checks that, once a test's requests are over, every
// upstream connection counted open is an idle one in its pool: a busy
// count that never comes down would starve the endpoint at its cap.
func checkNoLeakedConns(t *testing.T, p *Proxy) {
	t.Helper()
	leaked := func() string {
		p.transports.mu.Lock()
		defer p.transports.mu.Unlock()
		for _, tr := range p.transports.byKey {
			for addr, ep := range tr.eps {
				idle, open := ep.conns()
				if open != idle {
					return fmt.Sprintf("%s: %d connections open, %d idle", addr, open, idle)
				}
			}
		}
		return ""
	}
	deadline := time.Now().Add(3 * time.Second) // mirrors and tunnels finish on their own
	for leaked() != "" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if l := leaked(); l != "" {
		t.Errorf("connection places leaked: %s", l)
	}
}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// url is a URL on the origin listener.
func (e *testEnv) url(path string) string { return "http://" + e.bound.Origin + path }

// do sends req and returns the response with its body read.
func (e *testEnv) do(c *http.Client, req *http.Request) (*http.Response, string) {
	e.t.Helper()
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		e.t.Fatalf("%s %s: reading body: %v", req.Method, req.URL, err)
	}
	return res, string(b)
}

// get sends a GET for host+path to the origin listener.
func (e *testEnv) get(host, path string, hdr ...string) (*http.Response, string) {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.url(path), nil)
	req.Host = host
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	return e.do(e.client, req)
}

// startBackend starts an HTTP/1.1 server on loopback and returns its address.
func startBackend(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.Listener.Addr().String()
}

// h2cBackend starts a cleartext HTTP/2 (prior knowledge) server.
func h2cBackend(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	p.SetHTTP1(true)
	s.Config.Protocols = &p
	s.Start()
	t.Cleanup(s.Close)
	return s.Listener.Addr().String()
}

// echo answers with a description of the request it got: method, target,
// Host and every header as "Name: value" lines, then the body.
func echo(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		b.WriteString("backend=" + name + "\n")
		b.WriteString("method=" + r.Method + "\n")
		b.WriteString("target=" + r.RequestURI + "\n")
		b.WriteString("host=" + r.Host + "\n")
		for k, vs := range r.Header {
			for _, v := range vs {
				b.WriteString(k + ": " + v + "\n")
			}
		}
		body, _ := io.ReadAll(r.Body)
		b.WriteString("body=" + string(body) + "\n")
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, b.String())
	}
}

// echoed returns the value of "name: value" or "name=value" in an echo.
func echoed(echoed, name string) string {
	for _, line := range strings.Split(echoed, "\n") {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			return v
		}
		if v, ok := strings.CutPrefix(line, name+"="); ok {
			return v
		}
	}
	return ""
}

// config builds a one-listener config with one route per rule set.
func config(routes []proxycfg.Route, clusters ...proxycfg.Cluster) *proxycfg.Config {
	for i := range routes {
		if routes[i].Namespace == "" {
			routes[i].Namespace = "default"
		}
		if len(routes[i].Listeners) == 0 {
			routes[i].Listeners = []string{"gw/http"}
		}
		if routes[i].Created.IsZero() {
			routes[i].Created = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		}
	}
	return &proxycfg.Config{
		Schema:    proxycfg.SchemaVersion,
		Version:   "test",
		Listeners: []proxycfg.Listener{{Name: "gw/http", Port: 80, Protocol: proxycfg.ListenerHTTP}},
		Routes:    routes,
		Clusters:  clusters,
	}
}

// route is an HTTPRoute with the given rules.
func route(name string, rules ...proxycfg.Rule) proxycfg.Route {
	return proxycfg.Route{Kind: proxycfg.KindHTTP, Name: name, Rules: rules}
}

// to is a rule that sends everything to cluster.
func to(cluster string) proxycfg.Rule {
	return proxycfg.Rule{Matches: everyPath(), Backends: []proxycfg.BackendRef{{Cluster: cluster, Weight: 1}}}
}

// everyPath is the matches of a rule for every request.
func everyPath() []proxycfg.Match {
	return []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}
}

// cluster is an HTTP/1.1 cluster of addrs.
func cluster(name string, addrs ...string) proxycfg.Cluster {
	c := proxycfg.Cluster{Name: name, Protocol: proxycfg.ProtoHTTP1, Endpoints: []proxycfg.Endpoint{}}
	for _, a := range addrs {
		c.Endpoints = append(c.Endpoints, proxycfg.Endpoint{Address: a})
	}
	return c
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().String()
	ln.Close()
	return a
}
