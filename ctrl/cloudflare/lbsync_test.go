// This file tests the Load Balancing sync: several clusters, each a
// Syncer with a tunnel of its own, sharing one fake account.

package cloudflare_test

import (
	"context"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/test/cffake"
)

// cluster is one cluster's controller: a Syncer on the world's fake,
// with a tunnel and a DNS owner of its own.
type cluster struct {
	name string
	s    *cloudflare.Syncer
	stop func()
}

func newCluster(t *testing.T, w *world, name string, opts cloudflare.Options) *cluster {
	t.Helper()
	opts.BaseURL = w.f.URL()
	opts.Log = slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("cluster", name)
	if opts.MinBackoff == 0 {
		opts.MinBackoff, opts.MaxBackoff = 20*time.Millisecond, 200*time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	c := &cluster{name: name, s: cloudflare.New(opts), stop: func() { cancel(); <-done }}
	go func() { defer close(done); c.s.Run(ctx) }()
	t.Cleanup(c.stop)
	return c
}

// want asks for the hostnames, load balancing lbs.
func (c *cluster) want(hosts []string, lbs ...translate.LoadBalancing) {
	d := desired(hosts...)
	d.Spec.Tunnel = &v1alpha1.TunnelRef{Name: c.name + "-tunnel"}
	d.Spec.DNS.OwnerID = c.name
	d.LoadBalancers = lbs
	c.s.Update([]cloudflare.Desired{d})
}

// wait waits for the cluster's report to satisfy ok.
func (c *cluster) wait(t *testing.T, w *world, what string, ok func(*translate.TunnelState) bool) *translate.TunnelState {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := c.s.States()["prod"]
		if st != nil && ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s: not after 10s; state %+v; log:\n%s", c.name, what, st, w.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// eventually waits for the fake to satisfy ok.
func eventually(t *testing.T, w *world, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10s; pools %+v; load balancers %+v; log:\n%s", what, w.f.Pools(account),
				w.f.LoadBalancers("zone-com"), w.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func appLB(pool string, weight float64) translate.LoadBalancing {
	return translate.LoadBalancing{Policy: "team/app", Hostname: "app.example.com", Pool: pool, Pools: []string{pool},
		Weight: weight, Enabled: true, Steering: "off", SessionAffinity: "none",
		Monitor: translate.LBMonitor{Path: "/.tunnelgate/health", Interval: 60, Timeout: 5, Retries: 2, ExpectedCodes: "200"}}
}

func tunnelOf(t *testing.T, w *world, c *cluster) string {
	t.Helper()
	for _, tn := range w.f.Tunnels(account) {
		if tn.Name == c.name+"-tunnel" && tn.DeletedAt.IsZero() {
			return tn.ID
		}
	}
	t.Fatalf("no tunnel %s-tunnel", c.name)
	return ""
}

func poolNamed(w *world, name string) (cffake.Pool, bool) {
	for _, p := range w.f.Pools(account) {
		if p.Name == name {
			return p, true
		}
	}
	return cffake.Pool{}, false
}

func originOf(p cffake.Pool, tunnel string) (cffake.PoolOrigin, bool) {
	for _, o := range p.Origins {
		if o.Address == tunnel+".cfargotunnel.com" {
			return o, true
		}
	}
	return cffake.PoolOrigin{}, false
}

// Two clusters share a pool and a load balancer: the first creates the
// monitor (with a token), the pool and the load balancer; the second
// joins, reading the same token, without touching the first's origin; a
// weight change touches one origin; an origin's health is Cloudflare's
// business and changes nothing; one leaves (its origin only); the last
// leaves without DeleteUnused (its origin disabled, all kept), then, back
// with DeleteUnused, leaves again and everything tunnelgate made goes.
func TestLoadBalancingTwoClusters(t *testing.T) {
	w := newWorld(t, cloudflare.Options{})
	east, west := newCluster(t, w, "east", cloudflare.Options{}), newCluster(t, w, "west", cloudflare.Options{})
	hosts := []string{"app.example.com"}

	east.want(hosts, appLB("app", 1))
	st := east.wait(t, w, "joined", func(st *translate.TunnelState) bool { return st.LoadBalancers["team/app"].Ready })
	token := st.LoadBalancers["team/app"].HealthToken
	if len(token) < 32 || st.LoadBalancers["team/app"].Origins != 1 {
		t.Fatalf("state %+v", st.LoadBalancers["team/app"])
	}
	eastID := tunnelOf(t, w, east)
	mons := w.f.Monitors(account)
	pool, ok := poolNamed(w, "app")
	lbs := w.f.LoadBalancers("zone-com")
	if len(mons) != 1 || mons[0].Type != "https" || mons[0].Path != "/.tunnelgate/health" || mons[0].ExpectedCodes != "200" ||
		!slices.Equal(mons[0].Header[translate.LBHealthHeader], []string{token}) || !slices.Equal(mons[0].Header["Host"], hosts) ||
		mons[0].FollowRedirects || !strings.HasPrefix(mons[0].Description, "tunnelgate:") {
		t.Fatalf("monitors %+v", mons)
	}
	if !ok || pool.Monitor != mons[0].ID || !strings.HasPrefix(pool.Description, "tunnelgate:") || len(pool.Origins) != 1 ||
		pool.Origins[0] != (cffake.PoolOrigin{Name: "tunnel-" + eastID, Address: eastID + ".cfargotunnel.com", Enabled: true, Weight: 1, Host: "app.example.com"}) {
		t.Fatalf("pool %+v", pool)
	}
	if len(lbs) != 1 || lbs[0].Name != "app.example.com" || !slices.Equal(lbs[0].DefaultPools, []string{pool.ID}) ||
		lbs[0].FallbackPool != pool.ID || !lbs[0].Proxied || lbs[0].SteeringPolicy != "off" {
		t.Fatalf("load balancers %+v", lbs)
	}
	if recs := w.records("zone-com"); recs["CNAME app.example.com"] != "" {
		t.Errorf("a load balanced hostname got a CNAME: %v", recs)
	}
	if st.DNS["app.example.com"] != (translate.DNSState{Ready: true, LoadBalanced: true}) {
		t.Errorf("DNS state %+v", st.DNS)
	}

	west.want(hosts, appLB("app", 0.5))
	wst := west.wait(t, w, "joined", func(st *translate.TunnelState) bool { return st.LoadBalancers["team/app"].Ready })
	westID := tunnelOf(t, w, west)
	if wst.LoadBalancers["team/app"].HealthToken != token || wst.LoadBalancers["team/app"].Origins != 2 {
		t.Fatalf("west's state %+v, want east's token", wst.LoadBalancers["team/app"])
	}
	pool2, _ := poolNamed(w, "app")
	eo, _ := originOf(pool2, eastID)
	wo, _ := originOf(pool2, westID)
	if len(pool2.Origins) != 2 || eo != pool.Origins[0] || wo.Weight != 0.5 || !wo.Enabled || wo.Name != "tunnel-"+westID {
		t.Fatalf("pool after west joined %+v", pool2)
	}
	if len(w.f.Monitors(account)) != 1 || !reflect.DeepEqual(w.f.LoadBalancers("zone-com"), lbs) {
		t.Fatalf("west made or changed shared objects: %+v %+v", w.f.Monitors(account), w.f.LoadBalancers("zone-com"))
	}

	east.want(hosts, appLB("app", 0.3))
	eventually(t, w, "east's weight", func() bool {
		p, _ := poolNamed(w, "app")
		o, _ := originOf(p, eastID)
		return o.Weight == 0.3
	})
	pool3, _ := poolNamed(w, "app")
	if o, _ := originOf(pool3, westID); o != wo {
		t.Fatalf("east changed west's origin: %+v", pool3)
	}

	// West's backends go down: its origin's health answer changes, which
	// Cloudflare acts on, not the sync; west is then drained (enabled
	// false), which touches its origin only.
	w.f.SetOriginHealth(account, pool.ID, wo.Name, false)
	drained := appLB("app", 0.5)
	drained.Enabled = false
	west.want(hosts, drained)
	eventually(t, w, "west drained", func() bool {
		p, _ := poolNamed(w, "app")
		o, _ := originOf(p, westID)
		return !o.Enabled
	})
	pool3b, _ := poolNamed(w, "app")
	if o, _ := originOf(pool3b, eastID); len(pool3b.Origins) != 2 || o.Weight != 0.3 || !o.Enabled {
		t.Fatalf("draining west changed east's origin: %+v", pool3b)
	}
	west.want(hosts, appLB("app", 0.5))
	eventually(t, w, "west back", func() bool {
		p, _ := poolNamed(w, "app")
		return reflect.DeepEqual(p, pool3)
	})
	if st := west.wait(t, w, "ready", func(st *translate.TunnelState) bool { return st.LoadBalancers["team/app"].Ready }); st.LoadBalancers["team/app"].HealthToken != token {
		t.Fatalf("west's token changed: %+v", st.LoadBalancers)
	}

	// East leaves: its origin only.
	east.want(nil)
	east.wait(t, w, "left", func(st *translate.TunnelState) bool { return st.LoadBalancers == nil })
	eventually(t, w, "east's origin out", func() bool {
		p, _ := poolNamed(w, "app")
		_, in := originOf(p, eastID)
		return !in
	})
	pool4, _ := poolNamed(w, "app")
	if o, _ := originOf(pool4, westID); len(pool4.Origins) != 1 || o != wo {
		t.Fatalf("pool after east left %+v", pool4)
	}
	if len(w.f.Monitors(account)) != 1 || len(w.f.LoadBalancers("zone-com")) != 1 {
		t.Fatal("something was deleted when east left")
	}

	// West leaves last, without DeleteUnused: its origin is disabled.
	// Its report must show it gone before it rejoins below, or the
	// rejoin's wait could pass on this report.
	west.want(nil)
	west.wait(t, w, "left", func(st *translate.TunnelState) bool { return st.LoadBalancers == nil })
	eventually(t, w, "west's origin disabled", func() bool {
		p, _ := poolNamed(w, "app")
		o, in := originOf(p, westID)
		return in && !o.Enabled && o.Weight == 0
	})
	if len(w.f.Monitors(account)) != 1 || len(w.f.LoadBalancers("zone-com")) != 1 || len(w.f.Pools(account)) != 1 {
		t.Fatal("something was deleted without DeleteUnused")
	}

	// Back, asking DeleteUnused, then gone: what tunnelgate made goes.
	del := appLB("app", 1)
	del.DeleteUnused = true
	west.want(hosts, del)
	west.wait(t, w, "rejoined", func(st *translate.TunnelState) bool {
		return st.LoadBalancers["team/app"].Ready && st.LoadBalancers["team/app"].HealthToken == token
	})
	west.want(nil)
	eventually(t, w, "everything deleted", func() bool {
		return len(w.f.Pools(account)) == 0 && len(w.f.Monitors(account)) == 0 && len(w.f.LoadBalancers("zone-com")) == 0
	})
}

// Pools, monitors and load balancers tunnelgate did not create are never
// changed or deleted: a foreign pool without a monitor is joined (our
// origin only) and reported; a foreign load balancer that does not use
// our pool is reported; with DeleteUnused, leaving a foreign pool whose
// last origin is ours disables it.
func TestLoadBalancingForeignObjects(t *testing.T) {
	w := newWorld(t, cloudflare.Options{})
	theirs := cffake.PoolOrigin{Name: "dc1", Address: "origin.example.net", Enabled: true, Weight: 1, Port: 8443}
	poolID := w.f.AddPool(account, "app", theirs)
	lbID := w.f.AddLoadBalancer("zone-com", "app.example.com", poolID)
	otherPool := w.f.AddPool(account, "other", theirs)
	w.f.AddLoadBalancer("zone-com", "api.example.com", otherPool)
	soloID := w.f.AddPool(account, "solo", theirs) // no load balancer uses it
	lbsBefore := w.f.LoadBalancers("zone-com")
	east := newCluster(t, w, "east", cloudflare.Options{})

	app := appLB("app", 1)
	app.DeleteUnused = true
	api := appLB("api", 1)
	api.Policy, api.Hostname, api.DeleteUnused = "team/api", "api.example.com", true
	solo := appLB("solo", 1)
	solo.Policy, solo.Hostname, solo.DeleteUnused = "team/solo", "solo.example.com", true
	east.want([]string{"app.example.com", "api.example.com", "solo.example.com"}, app, api, solo)
	st := east.wait(t, w, "reported", func(st *translate.TunnelState) bool { return len(st.LoadBalancers) == 3 })
	if a := st.LoadBalancers["team/app"]; a.Ready || a.Reason != translate.LBReasonForeignOwner || !strings.Contains(a.Message, translate.LBHealthHeader) {
		t.Errorf("app: %+v, want the foreign pool's missing monitor reported", a)
	}
	if a := st.LoadBalancers["team/api"]; a.Ready || a.Reason != translate.LBReasonNameTaken || !strings.Contains(a.Message, "api.example.com") {
		t.Errorf("api: %+v, want the foreign load balancer reported", a)
	}
	eastID := tunnelOf(t, w, east)
	p, _ := poolNamed(w, "app")
	if o, ok := originOf(p, eastID); !ok || len(p.Origins) != 2 || p.Origins[0] != theirs || o.Weight != 1 || p.Monitor != "" || p.Description != "" {
		t.Fatalf("foreign pool %+v: want our origin added, nothing else changed", p)
	}
	if lbs := w.f.LoadBalancers("zone-com"); len(lbs) != 3 || !reflect.DeepEqual(lbs[:2], lbsBefore) || lbs[2].Name != "solo.example.com" {
		t.Fatalf("load balancers %+v: want the foreign ones unchanged, ours on solo.example.com", lbs)
	}
	if len(w.f.Monitors(account)) != 1 { // the one of our own pool "api"
		t.Fatalf("monitors %+v", w.f.Monitors(account))
	}

	// Ours becomes the foreign pool's last origin, then we leave asking
	// DeleteUnused: disabled, not deleted.
	p, _ = poolNamed(w, "app")
	o, _ := originOf(p, eastID)
	w.f.SetPoolOrigins(account, poolID, o)
	w.f.SetPoolOrigins(account, soloID, o)
	east.want(nil)
	eventually(t, w, "our origin disabled", func() bool {
		p, _ := poolNamed(w, "app")
		o, in := originOf(p, eastID)
		return in && !o.Enabled && o.Weight == 0
	})
	eventually(t, w, "our own pool api and its monitor deleted", func() bool {
		_, ok := poolNamed(w, "api")
		return !ok && len(w.f.Monitors(account)) == 0 // the monitor goes after the pool
	})
	eventually(t, w, "our origin in solo disabled", func() bool {
		p, _ := poolNamed(w, "solo")
		o, in := originOf(p, eastID)
		return in && !o.Enabled && len(p.Origins) == 1
	})
	if _, ok := poolNamed(w, "other"); !ok || !slices.ContainsFunc(w.f.LoadBalancers("zone-com"), func(l cffake.LoadBalancer) bool { return l.ID == lbID }) {
		t.Fatal("a foreign pool or load balancer was deleted")
	}
	if lbs := w.f.LoadBalancers("zone-com"); !reflect.DeepEqual(lbs[:2], lbsBefore) || len(w.f.Monitors(account)) != 0 {
		t.Fatalf("load balancers %+v, monitors %+v", w.f.LoadBalancers("zone-com"), w.f.Monitors(account))
	}
}

// An account without Load Balancing, and one at its pool quota, are
// reported as the policy's state, not retried in a loop; the hostname
// keeps its CNAME to the tunnel until a load balancer exists, then gives
// it up (ours removed, with its ownership record); another hostname's
// foreign record is left alone and reported.
func TestLoadBalancingAccountLimitsAndDNS(t *testing.T) {
	w := newWorld(t, cloudflare.Options{})
	east := newCluster(t, w, "east", cloudflare.Options{DriftEvery: 100 * time.Millisecond})
	w.f.SetLBEntitled(account, false)
	east.want([]string{"app.example.com"}, appLB("app", 1))
	st := east.wait(t, w, "not entitled", func(st *translate.TunnelState) bool {
		return st.LoadBalancers["team/app"].Reason == translate.LBReasonNotEntitled
	})
	if !strings.Contains(st.LoadBalancers["team/app"].Message, "Load Balancing is not enabled") || st.Problem != "" || st.Pending != "" {
		t.Fatalf("state %+v", st)
	}
	east.wait(t, w, "DNS kept", func(st *translate.TunnelState) bool { return st.DNS["app.example.com"].Ready })
	if recs := w.records("zone-com"); recs["CNAME app.example.com"] == "" || recs["TXT _tunnelgate.app.example.com"] == "" {
		t.Fatalf("records %v: want the CNAME kept while there is no load balancer", recs)
	}

	w.f.SetLBEntitled(account, true)
	w.f.SetLBLimits(account, cffake.LBLimits{Pools: 1})
	w.f.AddPool(account, "someone-elses", cffake.PoolOrigin{Name: "x", Address: "x.example.net", Enabled: true})
	st = east.wait(t, w, "quota", func(st *translate.TunnelState) bool {
		return st.LoadBalancers["team/app"].Reason == translate.LBReasonQuota
	})
	if !strings.Contains(st.LoadBalancers["team/app"].Message, "quota") {
		t.Fatalf("state %+v", st.LoadBalancers)
	}

	w.f.SetLBLimits(account, cffake.LBLimits{})
	w.f.AddRecord("zone-com", cffake.Record{Type: "A", Name: "api.example.com", Content: "192.0.2.1"})
	api := appLB("api", 1)
	api.Policy, api.Hostname = "team/api", "api.example.com"
	east.want([]string{"app.example.com", "api.example.com"}, appLB("app", 1), api)
	st = east.wait(t, w, "both load balanced", func(st *translate.TunnelState) bool {
		return st.LoadBalancers["team/app"].Ready && st.LoadBalancers["team/api"].Ready &&
			st.DNS["api.example.com"].Reason == translate.DNSReasonForeignRecord && st.DNS["app.example.com"].Ready
	})
	if !strings.Contains(st.DNS["api.example.com"].Message, "load balance") {
		t.Errorf("api's DNS state %+v", st.DNS["api.example.com"])
	}
	recs := w.records("zone-com")
	if recs["CNAME app.example.com"] != "" || recs["TXT _tunnelgate.app.example.com"] != "" || recs["A api.example.com"] != "192.0.2.1" {
		t.Fatalf("records %v: want ours for app gone, the foreign A kept", recs)
	}
}

// A restarted controller, remembering nothing, still takes its origin
// out of a pool it no longer serves: it knows the origin by its name.
func TestLoadBalancingLeaveAfterRestart(t *testing.T) {
	w := newWorld(t, cloudflare.Options{})
	other := cffake.PoolOrigin{Name: "dc1", Address: "origin.example.net", Enabled: true, Weight: 1}
	w.f.AddPool(account, "app", other)
	east := newCluster(t, w, "east", cloudflare.Options{})
	east.want([]string{"app.example.com"}, appLB("app", 1))
	east.wait(t, w, "joined", func(st *translate.TunnelState) bool { return st.LoadBalancers["team/app"].Origins == 2 })
	east.stop()

	again := newCluster(t, w, "east", cloudflare.Options{})
	again.want([]string{"app.example.com"})
	eventually(t, w, "origin out", func() bool {
		p, _ := poolNamed(w, "app")
		return len(p.Origins) == 1 && p.Origins[0] == other
	})
}

// A steady state costs reads only: drift checks read the pools, the
// monitor and the load balancers again, and write nothing.
func TestLoadBalancingSteadyState(t *testing.T) {
	w := newWorld(t, cloudflare.Options{})
	east := newCluster(t, w, "east", cloudflare.Options{DriftEvery: 20 * time.Millisecond, DNSEvery: time.Hour})
	east.want([]string{"app.example.com"}, appLB("app", 0.25))
	east.wait(t, w, "joined", func(st *translate.TunnelState) bool { return st.LoadBalancers["team/app"].Ready })
	time.Sleep(50 * time.Millisecond) // the first pass's DNS and Access work ends
	writes, calls := east.s.Stats.Writes.Load(), east.s.Stats.Calls.Load()
	time.Sleep(300 * time.Millisecond)
	if n := east.s.Stats.Writes.Load() - writes; n != 0 {
		t.Errorf("%d writes in a steady state; log:\n%s", n, w.logs.String())
	}
	if east.s.Stats.Calls.Load()-calls < 5 {
		t.Errorf("no drift checks: %d calls", east.s.Stats.Calls.Load()-calls)
	}
}

// A Gateway's own tunnel that departs leaves its pools (its origin only)
// before its tunnel is deleted.
func TestLoadBalancingDeparture(t *testing.T) {
	w := newWorld(t, cloudflare.Options{DNSEvery: time.Hour})
	other := cffake.PoolOrigin{Name: "dc1", Address: "origin.example.net", Enabled: true, Weight: 1}
	w.f.AddPool(account, "app", other)
	plane := planeWish("gw", "team-a-gw", time.Now().Add(-time.Hour), "app.example.com")
	plane.LoadBalancers = []translate.LoadBalancing{appLB("app", 1)}
	w.s.Update([]cloudflare.Desired{plane})
	st := waitKey(t, w, plane.Class, func(s *translate.TunnelState) bool { return s.LoadBalancers["team/app"].Origins == 2 })
	own := st.ID

	gone := departing(plane, true, own)
	w.s.Update([]cloudflare.Desired{gone})
	waitKey(t, w, gone.Class, func(s *translate.TunnelState) bool { return s.Departed })
	if p, _ := poolNamed(w, "app"); len(p.Origins) != 1 || p.Origins[0] != other {
		t.Fatalf("pool after the departure %+v", p)
	}
	if _, deleted := tunnelNamed(w, "team-a-gw"); !deleted {
		t.Error("tunnel not deleted")
	}
}

// A failure worth retrying (a 5xx) is the policy's state and is retried,
// the health token still reported; a hostname's failure does not stop
// the others; a token without Load Balancing's permissions is reported
// as such, and the class is not failed for it.
func TestLoadBalancingFailures(t *testing.T) {
	w := newWorld(t, cloudflare.Options{})
	east := newCluster(t, w, "east", cloudflare.Options{})
	api := appLB("api", 1)
	api.Policy, api.Hostname = "team/api", "api.example.com"
	hosts := []string{"app.example.com", "api.example.com"}
	east.want(hosts, appLB("app", 1), api)
	st := east.wait(t, w, "joined", func(st *translate.TunnelState) bool {
		return st.LoadBalancers["team/app"].Ready && st.LoadBalancers["team/api"].Ready
	})
	token := st.LoadBalancers["team/app"].HealthToken
	app, _ := poolNamed(w, "app")
	w.f.Fail(cffake.Fault{Status: http.StatusServiceUnavailable, Match: func(r *http.Request) bool {
		return r.Method == http.MethodPatch && strings.Contains(r.URL.Path, app.ID)
	}})
	api.Weight = 0.5
	east.want(hosts, appLB("app", 0.5), api)
	st = east.wait(t, w, "app failing, api changed", func(st *translate.TunnelState) bool {
		p, _ := poolNamed(w, "api")
		return st.LoadBalancers["team/app"].Reason == translate.LBReasonAPIError && len(p.Origins) == 1 && p.Origins[0].Weight == 0.5
	})
	if a := st.LoadBalancers["team/app"]; a.HealthToken != token || !strings.Contains(a.Message, "503") {
		t.Errorf("app's state %+v: want the error, and the token kept", a)
	}
	w.f.ClearFaults()
	east.wait(t, w, "recovered", func(st *translate.TunnelState) bool { return st.LoadBalancers["team/app"].Ready })
	if p, _ := poolNamed(w, "app"); p.Origins[0].Weight != 0.5 {
		t.Fatalf("pool %+v", p)
	}

	w.f.Fail(cffake.Fault{Status: http.StatusForbidden, Match: cffake.Route("GET /accounts/{account_id}/load_balancers/pools")})
	api.Weight = 1
	east.want(hosts, appLB("app", 0.5), api)
	st = east.wait(t, w, "refused", func(st *translate.TunnelState) bool {
		return st.LoadBalancers["team/app"].Reason == translate.LBReasonInvalid
	})
	if !strings.Contains(st.LoadBalancers["team/app"].Message, "Load Balancing: Monitors and Pools") || st.Problem != "" ||
		!st.DNS["app.example.com"].Ready || st.LoadBalancers["team/app"].HealthToken != token {
		t.Fatalf("state %+v", st)
	}
}

// A class that moves to another tunnel moves its origin: the new one
// joins, the former one leaves, other origins stay.
func TestLoadBalancingTunnelChanges(t *testing.T) {
	w := newWorld(t, cloudflare.Options{})
	other := cffake.PoolOrigin{Name: "dc1", Address: "origin.example.net", Enabled: true, Weight: 1}
	w.f.AddPool(account, "app", other)
	east := newCluster(t, w, "east", cloudflare.Options{})
	east.want([]string{"app.example.com"}, appLB("app", 1))
	east.wait(t, w, "joined", func(st *translate.TunnelState) bool { return st.LoadBalancers["team/app"].Origins == 2 })
	before := tunnelOf(t, w, east)

	moved := &cluster{name: "east2", s: east.s}
	d := desired("app.example.com")
	d.Spec.Tunnel = &v1alpha1.TunnelRef{Name: "east2-tunnel"}
	d.Spec.DNS.OwnerID = "east"
	d.LoadBalancers = []translate.LoadBalancing{appLB("app", 1)}
	east.s.Update([]cloudflare.Desired{d})
	eventually(t, w, "origin moved", func() bool {
		p, _ := poolNamed(w, "app")
		_, oldIn := originOf(p, before)
		return len(p.Origins) == 2 && !oldIn && p.Origins[0] == other
	})
	after := tunnelOf(t, w, moved)
	if p, _ := poolNamed(w, "app"); p.Origins[1].Address != after+".cfargotunnel.com" {
		t.Fatalf("pool %+v, want the new tunnel %s", p, after)
	}
}

// Failover between clusters: each has a pool of its own, with a monitor
// of its own, and the load balancer uses both in the order asked, the
// last as fallback. One leaving with DeleteUnused deletes its pool and
// monitor and takes the pool out of the load balancer, which the other
// still uses.
func TestLoadBalancingFailoverPools(t *testing.T) {
	w := newWorld(t, cloudflare.Options{})
	east, west := newCluster(t, w, "east", cloudflare.Options{}), newCluster(t, w, "west", cloudflare.Options{})
	hosts := []string{"app.example.com"}
	lbOf := func(pool string) translate.LoadBalancing {
		lb := appLB(pool, 1)
		lb.Pools, lb.DeleteUnused = []string{"east", "west"}, true
		return lb
	}
	east.want(hosts, lbOf("east"))
	est := east.wait(t, w, "east joined", func(st *translate.TunnelState) bool { return st.LoadBalancers["team/app"].Ready })
	west.want(hosts, lbOf("west"))
	wst := west.wait(t, w, "west joined", func(st *translate.TunnelState) bool { return st.LoadBalancers["team/app"].Ready })
	ep, _ := poolNamed(w, "east")
	wp, _ := poolNamed(w, "west")
	eventually(t, w, "the load balancer uses both pools", func() bool {
		lbs := w.f.LoadBalancers("zone-com")
		return len(lbs) == 1 && slices.Equal(lbs[0].DefaultPools, []string{ep.ID, wp.ID}) && lbs[0].FallbackPool == wp.ID
	})
	if len(w.f.Monitors(account)) != 2 || ep.Monitor == wp.Monitor ||
		est.LoadBalancers["team/app"].HealthToken == wst.LoadBalancers["team/app"].HealthToken {
		t.Fatalf("want a monitor and a token per pool: %+v", w.f.Monitors(account))
	}

	east.want(nil)
	// The pool goes before its monitor (in use until then): wait for both.
	eventually(t, w, "east's pool and monitor gone", func() bool {
		_, ok := poolNamed(w, "east")
		lbs := w.f.LoadBalancers("zone-com")
		return !ok && len(lbs) == 1 && slices.Equal(lbs[0].DefaultPools, []string{wp.ID}) && lbs[0].FallbackPool == wp.ID &&
			len(w.f.Monitors(account)) == 1
	})
	if m := w.f.Monitors(account); len(m) != 1 || m[0].ID != wp.Monitor {
		t.Fatalf("monitors %+v, want west's only", m)
	}
	if p, _ := poolNamed(w, "west"); !reflect.DeepEqual(p, wp) {
		t.Fatalf("west's pool changed: %+v", p)
	}
}
