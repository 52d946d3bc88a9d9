package dataplane

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Configs and endpoints swapped while requests are in flight: not one
// request may fail, and a rejected config must change nothing.
func TestSwapUnderLoad(t *testing.T) {
	a, b := startBackend(t, echo("a")), startBackend(t, echo("b"))
	v1 := config([]proxycfg.Route{route("r", to("a"))}, cluster("a", a), cluster("b", b))
	v1.Version = "v1"
	v2 := config([]proxycfg.Route{route("r", to("b")), {Kind: proxycfg.KindHTTP, Name: "extra", Hostnames: []string{"extra.example"}, Rules: []proxycfg.Rule{to("a")}}}, cluster("a", a), cluster("b", b))
	v2.Version = "v2"
	bad := config([]proxycfg.Route{route("r", to("missing"))}, cluster("a", a))
	bad.Version = "bad"
	e := newTestEnv(t, v1)

	const workers, perWorker = 4, 300
	var failures atomic.Int32
	var seen sync.Map
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			defer c.CloseIdleConnections()
			for i := range perWorker {
				res, err := c.Get(e.url(fmt.Sprintf("/w%d/%d", w, i)))
				if err != nil {
					failures.Add(1)
					t.Errorf("request: %v", err)
					continue
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					failures.Add(1)
					t.Errorf("status %d: %s", res.StatusCode, body)
					continue
				}
				seen.Store(echoed(string(body), "backend"), true)
			}
		}()
	}
	go func() {
		defer close(stop)
		for i := 0; ; i++ {
			select {
			case <-time.After(2 * time.Millisecond):
			case <-func() chan struct{} { c := make(chan struct{}); go func() { wg.Wait(); close(c) }(); return c }():
				return
			}
			switch i % 4 {
			case 0:
				mustLoad(t, e.p, v2)
			case 1:
				if err := e.p.Load(bad); err == nil {
					t.Error("bad config accepted")
				}
			case 2:
				mustLoad(t, e.p, v1)
			case 3:
				// Endpoint churn without a route change.
				if err := churn(e.p, cluster("a", a, a)); err != nil {
					t.Error(err)
				}
			}
		}
	}()
	wg.Wait()
	<-stop
	if failures.Load() > 0 {
		t.Fatalf("%d of %d requests failed", failures.Load(), workers*perWorker)
	}
	for _, name := range []string{"a", "b"} {
		if _, ok := seen.Load(name); !ok {
			t.Errorf("backend %s never answered: the swaps did not take effect", name)
		}
	}
}

func mustLoad(t *testing.T, p *Proxy, cfg *proxycfg.Config) {
	t.Helper()
	if err := p.Load(cfg); err != nil {
		t.Fatal(err)
	}
}

// churn applies the served config with cluster c's definition replaced,
// as the controller does when a Service's endpoints change, and checks
// that nothing was compiled.
func churn(p *Proxy, c proxycfg.Cluster) error {
	next := *p.Config()
	next.Clusters = slices.Clone(next.Clusters)
	i := slices.IndexFunc(next.Clusters, func(have proxycfg.Cluster) bool { return have.Name == c.Name })
	if i < 0 {
		return fmt.Errorf("cluster %q is not in the served config", c.Name)
	}
	next.Clusters[i] = c
	how, err := p.Apply(&next)
	if err != nil {
		return err
	}
	if how != proxycfg.AppliedClusters {
		return fmt.Errorf("applied %v, want proxycfg.AppliedClusters", how)
	}
	return nil
}

func TestInvalidConfigKeepsServing(t *testing.T) {
	a := startBackend(t, echo("a"))
	good := config([]proxycfg.Route{route("r", to("a"))}, cluster("a", a))
	e := newTestEnv(t, good)
	bad := config([]proxycfg.Route{
		route("r1", to("nope")),
		{Kind: proxycfg.KindHTTP, Name: "r2", Rules: []proxycfg.Rule{{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}, Filters: []proxycfg.Filter{{Type: "Mystery"}}, Backends: []proxycfg.BackendRef{{Cluster: "a", Weight: 1}}}}},
		{Kind: proxycfg.KindHTTP, Name: "r3", Rules: []proxycfg.Rule{{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathRegex, Value: "("}}}, Backends: []proxycfg.BackendRef{{Cluster: "a", Weight: 1}}}}},
	}, cluster("a", a), proxycfg.Cluster{Name: "t", Protocol: proxycfg.ProtoTLS, TLS: &proxycfg.TLSSettings{SNI: "x", CAPEM: "garbage"}})
	bad.Version = "bad"
	err := e.p.Load(bad)
	if err == nil {
		t.Fatal("bad config accepted")
	}
	// Every problem is listed, each saying where it is.
	for _, want := range []string{`cluster "nope" is not defined`, `unknown filter type "Mystery"`, "default/r3", `cluster "t"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if v := e.p.Version(); v != "test" {
		t.Errorf("version after rejection = %q", v)
	}
	if e.p.LastError() == nil {
		t.Error("LastError is nil after a rejection")
	}
	res, body := e.get("h", "/")
	if res.StatusCode != 200 || echoed(body, "backend") != "a" {
		t.Fatalf("after rejection: %d %q", res.StatusCode, body)
	}
	bad.Schema = "tunnelgate.dev/dataplane/v0"
	if err := e.p.Load(bad); err == nil || !strings.Contains(err.Error(), "schema") {
		t.Errorf("wrong schema: %v", err)
	}
	if how, err := e.p.Apply(nil); err == nil || how != 0 {
		t.Errorf("Apply(nil): %v, %v; want a refusal", how, err)
	}
	if res, body := e.get("h", "/"); res.StatusCode != 200 || echoed(body, "backend") != "a" {
		t.Fatalf("after Apply(nil): %d %q", res.StatusCode, body)
	}
}

// Endpoints removed from a cluster lose their pooled connections.
func TestClusterChurnClosesRemovedEndpoints(t *testing.T) {
	a, b := startBackend(t, echo("a")), startBackend(t, echo("b"))
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("c"))}, cluster("c", a)))
	e.get("h", "/")
	old := e.p.slots["c"].state.Load().endpoints()[0]
	if idleCount(old) != 1 {
		t.Fatalf("idle connections to a: %d", idleCount(old))
	}
	if err := churn(e.p, cluster("c", b)); err != nil {
		t.Fatal(err)
	}
	if n := idleCount(old); n != 0 {
		t.Errorf("%d idle connections kept to a removed endpoint", n)
	}
	_, body := e.get("h", "/")
	if echoed(body, "backend") != "b" {
		t.Errorf("after update: %q", body)
	}
}

// idleCount is the number of pooled connections of e.
func idleCount(e *endpoint) int {
	idle, _ := e.conns()
	return idle
}

// An endpoint's pool is made at its first request, once, and the
// endpoint leaving every config closes it.
func TestEndpointPoolMadeAtFirstUse(t *testing.T) {
	ts := newTransports(http1.PoolSettings{MaxIdle: 4, MaxConns: 4, IdleTimeout: time.Minute, DialTimeout: time.Second})
	c := cluster("a", "127.0.0.1:1")
	cs, err := ts.state(&c)
	if err != nil {
		t.Fatal(err)
	}
	e := cs.endpoints()[0]
	if e.h1.Load() != nil {
		t.Fatal("a pool made before any request")
	}
	p := e.pool()
	if p == nil || e.pool() != p {
		t.Fatal("the pool is made anew for the second request")
	}
	late, err := ts.state(&c) // a state a request in flight holds
	if err != nil {
		t.Fatal(err)
	}
	ts.sweep(nil)
	if !e.gone.Load() || e.pool() != p {
		t.Error("a swept endpoint is not marked gone, or its pool was replaced")
	}
	if !late.endpoints()[0].gone.Load() {
		t.Error("an endpoint made after its transport was swept is not gone: its connections would be kept")
	}
}

// With ReturnMemory, a whole load is followed by a forced collection
// that returns the load's garbage to the operating system.
func TestReturnMemoryAfterWholeLoad(t *testing.T) {
	forced := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ReturnMemory: true})
	defer p.Close()
	before := forced()
	mustLoad(t, p, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", "127.0.0.1:1")))
	deadline := time.Now().Add(5 * time.Second)
	for forced() == before {
		if time.Now().After(deadline) {
			t.Fatal("no collection forced within 5s of a whole load")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// With ReturnMemory, idle backend connections dropping their buffers
// (http1.PoolSettings.Shed) return the memory once 4 MiB of them have
// been dropped, not before.
func TestReturnMemoryAfterIdleBuffersShed(t *testing.T) {
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ReturnMemory: true})
	defer p.Close()
	shed := p.transports.settings.Shed
	if shed == nil {
		t.Fatal("the pools of a proxy with ReturnMemory do not report what they shed")
	}
	shed(shedReturn - 1)
	if p.returning.Load() {
		t.Fatal("memory returned before 4 MiB of buffers were shed")
	}
	shed(1)
	if !p.returning.Load() {
		t.Fatal("no return of memory scheduled once 4 MiB of buffers were shed")
	}
	if q := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}); q.transports.settings.Shed != nil {
		t.Fatal("a proxy without ReturnMemory has its pools report what they shed")
	}
}

// A cluster's endpoints are made at its first request, not at load nor
// by a metrics scrape; a state replacing one whose endpoints are made
// makes its own at once, sharing the endpoints both list, so that their
// pooled connections survive an endpoint update.
func TestEndpointsMadeAtFirstRequest(t *testing.T) {
	a, b := startBackend(t, echo("a")), startBackend(t, echo("b"))
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("c"))}, cluster("c", a, a), cluster("idle", a)))
	made := func(name string) []*endpoint { return e.p.slots[name].state.Load().madeEndpoints() }
	if made("c") != nil || made("idle") != nil {
		t.Fatal("endpoints made at load")
	}
	scrape := httptest.NewRecorder()
	e.p.metricsEndpoint().ServeHTTP(scrape, httptest.NewRequest("GET", "/metrics", nil))
	if scrape.Code != 200 || !strings.Contains(scrape.Body.String(), "tunnelgate_") {
		t.Fatalf("metrics: %d\n%s", scrape.Code, scrape.Body)
	}
	if made("c") != nil {
		t.Fatal("a scrape made endpoints")
	}
	e.get("h", "/")
	first := made("c")
	if len(first) != 1 || first[0].addr != a {
		t.Fatalf("after a request, endpoints %v; want one, %s (listed twice)", first, a)
	}
	if made("idle") != nil {
		t.Error("a request to c made idle's endpoints")
	}
	if err := churn(e.p, cluster("c", a, b)); err != nil {
		t.Fatal(err)
	}
	next := made("c")
	if len(next) != 2 || next[0] != first[0] || idleCount(next[0]) != 1 {
		t.Errorf("after an update, endpoints %v; want the pooled endpoint of %s kept, then %s", next, a, b)
	}
	if err := churn(e.p, cluster("idle", b)); err != nil {
		t.Fatal(err)
	}
	if made("idle") != nil {
		t.Error("updating a cluster without a request made its endpoints")
	}
}
