package integration_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

// load sends requests for host through a proxy from workers goroutines
// until stop is called, at most max requests; it counts the answers that
// were not 200 with wantBody (any body when wantBody is empty).
type load struct {
	sent, failed atomic.Int64
	lastFailure  atomic.Value
	stop         func()
}

func startLoad(proxy, host, wantBody string, workers int, max int64) *load {
	l := &load{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if l.sent.Add(1) > max {
					return
				}
				code, body, _, err := get(proxy, host, "/load")
				if err != nil || code != 200 || wantBody != "" && body != wantBody {
					l.failed.Add(1)
					l.lastFailure.Store(fmt.Sprint(code, " ", body, " ", err))
				}
			}
		}()
	}
	var once sync.Once
	l.stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	return l
}

// Under load, the controller dies and comes back: not one request fails.
// Then objects are deleted and created again, and statuses and the proxy
// follow each step.
func TestFaultsUnderLoad(t *testing.T) {
	env := shared.Env(t)
	cl := newClients(t, env)
	ctx := context.Background()
	ns := namespace(t, cl, "faults")
	const controllerName = "tunnelgate.dev/test-faults"
	addr := netns.Addr(50).String()
	fixture.Backend(t, addr+":8080", "ok")
	objects := []byte(basicObjects(ns, "faults", controllerName, addr))
	if err := env.Apply(ctx, objects); err != nil {
		t.Fatal(err)
	}
	r := startController(t, cl, controllerName, nil, "")
	_, proxy := startProxy(t, r)
	status := func(wantCode int) func() (bool, string) {
		return func() (bool, string) {
			code, body, _, err := get(proxy, "app.example.com", "/load")
			return err == nil && code == wantCode, fmt.Sprint(code, " ", body, " ", err)
		}
	}
	eventually(t, 30*time.Second, "served", status(200))

	l := startLoad(proxy, "app.example.com", "ok /load", 4, 200000)
	t.Cleanup(l.stop)
	time.Sleep(300 * time.Millisecond)
	configAddr := r.url[len("http://"):]
	r.stop() // the controller dies
	time.Sleep(time.Second)
	startController(t, cl, controllerName, nil, configAddr) // stopped when the test ends
	eventually(t, 30*time.Second, "the restarted controller published", func() (bool, string) { return r.c.Ready(), "not ready" })
	time.Sleep(500 * time.Millisecond)
	l.stop()
	if l.failed.Load() != 0 {
		t.Fatalf("%d of %d requests failed while the controller restarted; last: %v", l.failed.Load(), l.sent.Load(), l.lastFailure.Load())
	}
	t.Logf("%d requests, none failed, across a controller restart", l.sent.Load())

	routeCond := func(typ string, st metav1.ConditionStatus, reason string) func() (bool, string) {
		return func() (bool, string) {
			rt, err := cl.gw.GatewayV1().HTTPRoutes(ns).Get(ctx, "app", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, p := range rt.Status.Parents {
				if string(p.ControllerName) == controllerName && p.Conditions[0].ObservedGeneration == rt.Generation {
					return condIs(p.Conditions, typ, st, reason)
				}
			}
			return false, "no current status of ours"
		}
	}
	// The Service goes: the route says so, the proxy answers 500 for it
	// (the spec's answer for an invalid backend). It comes back: served.
	if err := cl.kube.CoreV1().Services(ns).Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "route reports the Service gone", routeCond("ResolvedRefs", metav1.ConditionFalse, "BackendNotFound"))
	eventually(t, 30*time.Second, "proxy answers 500", status(500))
	if err := env.Apply(ctx, objects); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "route resolved again", routeCond("ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs"))
	eventually(t, 30*time.Second, "served again", status(200))

	// The route goes: nothing matches (404). It comes back: accepted and
	// served.
	if err := cl.gw.GatewayV1().HTTPRoutes(ns).Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "proxy answers 404", status(404))
	if err := env.Apply(ctx, objects); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "route accepted again", routeCond("Accepted", metav1.ConditionTrue, "Accepted"))
	eventually(t, 30*time.Second, "served again", status(200))

	// The Gateway goes, and comes back.
	if err := cl.gw.GatewayV1().Gateways(ns).Delete(ctx, "gw", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "nothing served without the Gateway", status(404))
	if err := env.Apply(ctx, objects); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "served with the Gateway back", status(200))
}

// A proxy restarted while the controller is away serves the last config
// from its cache file at once, and follows the controller when it comes
// back.
func TestProxyRestartsFromItsCache(t *testing.T) {
	env := shared.Env(t)
	cl := newClients(t, env)
	ctx := context.Background()
	ns := namespace(t, cl, "cache")
	const controllerName = "tunnelgate.dev/test-cache"
	addr := netns.Addr(70).String()
	fixture.Backend(t, addr+":8080", "ok")
	objects := basicObjects(ns, "cache", controllerName, addr)
	if err := env.Apply(ctx, []byte(objects)); err != nil {
		t.Fatal(err)
	}
	r := startController(t, cl, controllerName, nil, "")
	cache := filepath.Join(t.TempDir(), "config.json")
	p, proxy, stopProxy := startProxyCached(t, r, cache)
	serves := func(proxy, host string) func() (bool, string) {
		return func() (bool, string) {
			code, body, _, err := get(proxy, host, "/x")
			return err == nil && code == 200 && body == "ok /x", fmt.Sprint(code, " ", body, " ", err)
		}
	}
	eventually(t, 30*time.Second, "served", serves(proxy, "app.example.com"))
	version := p.Version()

	configAddr := r.url[len("http://"):]
	r.stop()
	stopProxy()
	p, proxy, _ = startProxyCached(t, r, cache)
	eventually(t, 15*time.Second, "the restarted proxy ready from its cache", func() (bool, string) {
		return p.Ready() && p.Version() == version, fmt.Sprintf("ready %v, version %q, want %q", p.Ready(), p.Version(), version)
	})
	l := startLoad(proxy, "app.example.com", "ok /load", 2, 100_000)
	t.Cleanup(l.stop)
	time.Sleep(time.Second) // served with no controller at all

	startController(t, cl, controllerName, nil, configAddr) // stopped when the test ends
	if err := env.Apply(ctx, []byte(strings.Replace(objects, "hostnames: [app.example.com]", "hostnames: [app.example.com, new.example.com]", 1))); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the route change served after the controller came back", serves(proxy, "new.example.com"))
	l.stop()
	if l.failed.Load() != 0 {
		t.Fatalf("%d of %d requests failed; last: %v", l.failed.Load(), l.sent.Load(), l.lastFailure.Load())
	}
	t.Logf("%d requests, none failed, from a proxy restarted without its controller", l.sent.Load())
}
