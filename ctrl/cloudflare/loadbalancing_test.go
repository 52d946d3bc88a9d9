// This file tests the Load Balancing calls against the stateful fake.

package cloudflare

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tunnelgate/tunnelgate/test/cffake"
)

const (
	lbToken   = "lb-token"
	lbAccount = "0123456789abcdef0123456789abcdef"
	lbZone    = "fedcba9876543210fedcba9876543210"
)

// lbWorld is a fake with an account and the zone example.com, and an api
// on it whose requests pass through hook (nil: none) first.
func lbWorld(t *testing.T, hook func(*http.Request)) (*cffake.Fake, *api) {
	t.Helper()
	f := cffake.New(cffake.Options{Token: lbToken})
	t.Cleanup(f.Close)
	f.AddAccount(lbAccount, "Acme")
	f.AddZone(lbZone, "example.com", lbAccount)
	hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		if hook != nil {
			hook(r)
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	return f, newAPI(f.URL(), lbToken, hc, &Stats{}, nil)
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// setOrigin is how a cluster changes only its own origin: replaced by
// name, or added.
func setOrigin(ours LBOrigin) func([]LBOrigin) ([]LBOrigin, bool) {
	return func(cur []LBOrigin) ([]LBOrigin, bool) {
		i := slices.IndexFunc(cur, func(o LBOrigin) bool { return o.Name == ours.Name })
		if i < 0 {
			return append(cur, ours), true
		}
		if cur[i] == ours {
			return cur, false
		}
		cur[i] = ours
		return cur, true
	}
}

func tunnelOrigin(cluster, tunnel string) LBOrigin {
	return LBOrigin{Name: cluster, Address: tunnel + ".cfargotunnel.com", Host: "app.example.com", Enabled: true, Weight: 1}
}

// must(call())(t) is call's value, or the test's end.
func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// Every call, its result as our own types, and the errors the controller
// tells apart: a name taken, an object in use, an object gone.
func TestLoadBalancingCalls(t *testing.T) {
	f, a := lbWorld(t, nil)
	ctx := context.Background()

	mon := must(a.createMonitor(ctx, lbAccount, LBMonitor{Type: "https", Description: "tunnelgate", Path: "/healthz",
		ExpectedCodes: "2xx", Header: map[string][]string{"Host": {"app.example.com"}}, Interval: 30}))(t)
	if mon.ID == "" || mon.Type != "https" || mon.Method != "GET" || mon.Interval != 30 || mon.Header["Host"][0] != "app.example.com" {
		t.Fatalf("created monitor %+v", mon)
	}
	mon.Path = "/ready"
	if got := must(a.updateMonitor(ctx, lbAccount, mon.ID, mon))(t); got.Path != "/ready" || got.Interval != 30 {
		t.Fatalf("updated monitor %+v", got)
	}
	if got, ok, err := a.getMonitor(ctx, lbAccount, mon.ID); err != nil || !ok || got.Path != "/ready" {
		t.Fatalf("getMonitor = %+v %v %v", got, ok, err)
	}
	if _, ok, err := a.getMonitor(ctx, lbAccount, strings.Repeat("0", 32)); ok || err != nil {
		t.Fatalf("getMonitor of nothing = %v %v", ok, err)
	}
	if ms := must(a.listMonitors(ctx, lbAccount))(t); len(ms) != 1 || ms[0].ID != mon.ID {
		t.Fatalf("monitors %+v", ms)
	}

	pool := must(a.createPool(ctx, lbAccount, LBPool{Name: "tunnelgate-app", Description: "tunnelgate: app.example.com",
		Monitor: mon.ID, Enabled: true, Origins: []LBOrigin{tunnelOrigin("east", "t-east")}}))(t)
	if pool.ID == "" || pool.Monitor != mon.ID || pool.MinimumOrigins != 1 || !SameOrigins(pool.Origins, []LBOrigin{tunnelOrigin("east", "t-east")}) {
		t.Fatalf("created pool %+v", pool)
	}
	if got, ok, err := a.getPool(ctx, lbAccount, pool.ID); err != nil || !ok || got.Name != "tunnelgate-app" {
		t.Fatalf("getPool = %+v %v %v", got, ok, err)
	}
	if ps := must(a.listPools(ctx, lbAccount))(t); len(ps) != 1 || ps[0].ID != pool.ID {
		t.Fatalf("pools %+v", ps)
	}
	// Another cluster adds its origin; then ours changes weight: theirs stays.
	west := tunnelOrigin("west", "t-west")
	must(a.editPoolOrigins(ctx, lbAccount, pool.ID, setOrigin(west)))(t)
	east := tunnelOrigin("east", "t-east")
	east.Weight = 0.3
	got := must(a.editPoolOrigins(ctx, lbAccount, pool.ID, setOrigin(east)))(t)
	if !SameOrigins(got.Origins, []LBOrigin{east, west}) || !SameOrigins(originsOf(f.Pools(lbAccount)[0]), []LBOrigin{east, west}) {
		t.Fatalf("origins %+v", got.Origins)
	}

	lb := LoadBalancer{Name: "App.example.com", Description: "tunnelgate", DefaultPools: []string{pool.ID}, FallbackPool: pool.ID,
		Proxied: true, Enabled: true, SteeringPolicy: "random", SessionAffinity: "cookie", SessionAffinityTTL: 3600}
	made := must(a.createLoadBalancer(ctx, lbZone, lb))(t)
	if made.ID == "" || made.Name != "app.example.com" || made.SessionAffinityTTL != 3600 || !made.Proxied {
		t.Fatalf("created load balancer %+v", made)
	}
	if _, err := a.createLoadBalancer(ctx, lbZone, lb); !errors.Is(err, ErrLBNameTaken) {
		t.Fatalf("second load balancer on the name: %v", err)
	}
	if byName, ok, err := a.loadBalancerByName(ctx, lbZone, "app.example.com."); err != nil || !ok || byName.ID != made.ID {
		t.Fatalf("loadBalancerByName = %+v %v %v", byName, ok, err)
	}
	if _, ok, err := a.loadBalancerByName(ctx, lbZone, "www.example.com"); ok || err != nil {
		t.Fatalf("loadBalancerByName of nothing = %v %v", ok, err)
	}
	lb.SteeringPolicy, lb.Enabled = "off", false
	if up := must(a.updateLoadBalancer(ctx, lbZone, made.ID, lb))(t); up.SteeringPolicy != "off" || up.Enabled {
		t.Fatalf("updated load balancer %+v", up)
	}
	if g, ok, err := a.getLoadBalancer(ctx, lbZone, made.ID); err != nil || !ok || g.SteeringPolicy != "off" {
		t.Fatalf("getLoadBalancer = %+v %v %v", g, ok, err)
	}

	if err := a.deleteMonitor(ctx, lbAccount, mon.ID); !errors.Is(err, ErrLBInUse) {
		t.Fatalf("deleting a monitor in use: %v", err)
	}
	if err := a.deletePool(ctx, lbAccount, pool.ID); !errors.Is(err, ErrLBInUse) {
		t.Fatalf("deleting a pool in use: %v", err)
	}
	for _, del := range []func() error{
		func() error { return a.deleteLoadBalancer(ctx, lbZone, made.ID) },
		func() error { return a.deletePool(ctx, lbAccount, pool.ID) },
		func() error { return a.deleteMonitor(ctx, lbAccount, mon.ID) },
		// Gone already: no error.
		func() error { return a.deleteLoadBalancer(ctx, lbZone, made.ID) },
		func() error { return a.deletePool(ctx, lbAccount, pool.ID) },
		func() error { return a.deleteMonitor(ctx, lbAccount, mon.ID) },
	} {
		if err := del(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.editPoolOrigins(ctx, lbAccount, pool.ID, setOrigin(east)); !errors.Is(err, ErrLBNotFound) {
		t.Fatalf("origins of a deleted pool: %v", err)
	}
}

// originsOf is a fake pool's origins as the api's type.
func originsOf(p cffake.Pool) []LBOrigin {
	var out []LBOrigin
	for _, o := range p.Origins {
		out = append(out, LBOrigin{Name: o.Name, Address: o.Address, Host: o.Host, Enabled: o.Enabled, Weight: o.Weight})
	}
	return out
}

// The origins' read-modify-write: nothing is written when nothing
// changes; a change by another cluster between our read and our write
// makes us decide again on it, so both changes survive; a pool that keeps
// changing ends in ErrOriginsChanged without a write.
func TestEditPoolOrigins(t *testing.T) {
	var f *cffake.Fake
	var poolID string
	var gets, patches atomic.Int32
	var meddle func(n int32) // runs before the nth GET of the pool
	f, a := lbWorld(t, func(r *http.Request) {
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pools/"+poolID):
			n := gets.Add(1)
			if meddle != nil {
				meddle(n)
			}
		case r.Method == http.MethodPatch:
			patches.Add(1)
		}
	})
	ctx := context.Background()
	poolID = f.AddPool(lbAccount, "app", cffake.PoolOrigin{Name: "east", Address: "t-east.cfargotunnel.com", Host: "app.example.com",
		Enabled: true, Weight: 1})
	east := tunnelOrigin("east", "t-east")

	if _, err := a.editPoolOrigins(ctx, lbAccount, poolID, setOrigin(east)); err != nil || patches.Load() != 0 || gets.Load() != 1 {
		t.Fatalf("no change: err %v, %d PATCHes, %d GETs", err, patches.Load(), gets.Load())
	}

	// West joins while north, another cluster, joins between our two reads.
	gets.Store(0)
	north := cffake.PoolOrigin{Name: "north", Address: "t-north.cfargotunnel.com", Host: "app.example.com", Enabled: true, Weight: 1}
	meddle = func(n int32) {
		if n == 2 {
			f.SetPoolOrigins(lbAccount, poolID, cffake.PoolOrigin{Name: "east", Address: "t-east.cfargotunnel.com",
				Host: "app.example.com", Enabled: true, Weight: 1}, north)
		}
	}
	west := tunnelOrigin("west", "t-west")
	got, err := a.editPoolOrigins(ctx, lbAccount, poolID, setOrigin(west))
	if err != nil {
		t.Fatal(err)
	}
	want := []LBOrigin{east, west, {Name: "north", Address: north.Address, Host: north.Host, Enabled: true, Weight: 1}}
	if !SameOrigins(got.Origins, want) || !SameOrigins(originsOf(f.Pools(lbAccount)[0]), want) || patches.Load() != 1 || gets.Load() != 4 {
		t.Fatalf("origins %+v after %d GETs and %d PATCHes", got.Origins, gets.Load(), patches.Load())
	}

	// A pool that changes on every read.
	gets.Store(0)
	patches.Store(0)
	meddle = func(n int32) {
		if n%2 == 0 {
			f.SetPoolOrigins(lbAccount, poolID, cffake.PoolOrigin{Name: "churn", Address: "x.cfargotunnel.com", Weight: float64(n) / 100,
				Enabled: true})
		}
	}
	if _, err := a.editPoolOrigins(ctx, lbAccount, poolID, setOrigin(tunnelOrigin("south", "t-south"))); !errors.Is(err, ErrOriginsChanged) ||
		patches.Load() != 0 || gets.Load() != 2*originAttempts {
		t.Fatalf("churning pool: %v after %d GETs and %d PATCHes", err, gets.Load(), patches.Load())
	}
}

// An account without Load Balancing and a quota reached are told apart
// from other failures, and neither is taken for the token's fault; a 403
// for the token still is.
func TestLoadBalancingAccountErrors(t *testing.T) {
	f, a := lbWorld(t, nil)
	ctx := context.Background()
	pool := must(a.createPool(ctx, lbAccount, LBPool{Name: "p", Enabled: true, Origins: []LBOrigin{tunnelOrigin("east", "t")}}))(t)

	f.SetLBEntitled(lbAccount, false)
	for name, call := range map[string]func() error{
		"list monitors": func() error { _, err := a.listMonitors(ctx, lbAccount); return err },
		"list pools":    func() error { _, err := a.listPools(ctx, lbAccount); return err },
		"get pool":      func() error { _, _, err := a.getPool(ctx, lbAccount, pool.ID); return err },
		"origins": func() error {
			_, err := a.editPoolOrigins(ctx, lbAccount, pool.ID, setOrigin(tunnelOrigin("west", "w")))
			return err
		},
		"list load balancers": func() error { _, err := a.listLoadBalancers(ctx, lbZone); return err },
		"create load balancer": func() error {
			_, err := a.createLoadBalancer(ctx, lbZone, LoadBalancer{Name: "app.example.com", DefaultPools: []string{pool.ID}, FallbackPool: pool.ID})
			return err
		},
	} {
		err := call()
		var ae *apiError
		if !errors.Is(err, ErrLBNotEntitled) || !errors.As(err, &ae) || ae.refused() {
			t.Errorf("%s without Load Balancing: %v", name, err)
		}
	}
	f.SetLBEntitled(lbAccount, true)

	f.SetLBLimits(lbAccount, cffake.LBLimits{Pools: 1, OriginsPerPool: 1, LoadBalancers: 1})
	if _, err := a.createPool(ctx, lbAccount, LBPool{Name: "q", Origins: []LBOrigin{tunnelOrigin("east", "t")}}); !errors.Is(err, ErrLBQuota) {
		t.Errorf("pool over quota: %v", err)
	}
	if _, err := a.editPoolOrigins(ctx, lbAccount, pool.ID, setOrigin(tunnelOrigin("west", "w"))); !errors.Is(err, ErrLBQuota) {
		t.Errorf("origin over quota: %v", err)
	}
	must(a.createLoadBalancer(ctx, lbZone, LoadBalancer{Name: "app.example.com", DefaultPools: []string{pool.ID}, FallbackPool: pool.ID, Enabled: true}))(t)
	if _, err := a.createLoadBalancer(ctx, lbZone, LoadBalancer{Name: "www.example.com", DefaultPools: []string{pool.ID}, FallbackPool: pool.ID}); !errors.Is(err, ErrLBQuota) {
		t.Errorf("load balancer over quota: %v", err)
	}

	// What the real API may answer, in codes the fake does not use.
	for _, c := range []struct {
		status, code int
		msg          string
		want         error
		refused      bool
	}{
		{http.StatusForbidden, 10000, "Authentication error", nil, true},
		{http.StatusForbidden, 1002, "Load Balancing is not enabled for this zone", ErrLBNotEntitled, false},
		{http.StatusBadRequest, 1002, "pool quota exceeded", ErrLBQuota, false},
		{http.StatusForbidden, 1002, "You have reached the limit of load balancers", ErrLBQuota, false},
		{http.StatusTooManyRequests, 971, "Please wait and consider throttling your request speed (rate limit)", nil, false},
		{http.StatusBadRequest, 1002, "bad origin", nil, false},
	} {
		f.Fail(cffake.Fault{Status: c.status, Code: c.code, Message: c.msg, Times: 1})
		_, err := a.listPools(ctx, lbAccount)
		var ae *apiError
		if err == nil || !errors.As(err, &ae) || (c.want == nil) != (ae.kind == nil) || c.want != nil && !errors.Is(err, c.want) ||
			ae.refused() != c.refused {
			t.Errorf("%d %d %q: %v", c.status, c.code, c.msg, err)
		}
	}
}
