// This file runs two clusters' controllers against one Cloudflare account and load balances a hostname between them.

package integration_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/cffake"
	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/kubeenv"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

// lbCluster is one of the clusters of TestLoadBalancingTwoClusters.
type lbCluster struct {
	name     string // "a" or "b": the backend answers "<name> <path>"
	env      *kubeenv.Env
	cl       clients
	ns       string // its namespace, GatewayClass and GatewayClassConfig name
	tunnel   string // its tunnel's name ("<ns>-<name>")
	owner    string // its DNS owner ID
	backend  string // its backend's address
	r        *running
	proxy    string // its proxy's origin listener
	p        *dataplane.Proxy
	tunnelID string // its tunnel's ID, once created
}

// Two clusters load balance app.example.com through one Cloudflare
// account and zone (the fake's). Each cluster is an API server of its own
// (the package's shared one, and one started here) with its own
// controller, backend and proxy; their objects are the same but for the
// tunnel's name, the DNS owner ID and the policy's weight, as the docs
// ask.
//
// Each step asserts the fake's pools, origins, monitor, load balancer and
// records, and the policies' statuses: both join (one pool with an origin
// for each tunnel, one monitor, one load balancer, the tunnel's CNAME
// gone only once the load balancer exists); each proxy's listener
// carries the monitor's health check, answers the monitor's token and
// routes a probe without it; a weight change moves only that cluster's
// origin; a cluster whose backends are gone answers 503; a cluster
// leaving takes out its own origin only; the last one leaving disables
// its origin and keeps the rest, or, with deleteUnused, deletes what
// tunnelgate made. The other cluster's origin is compared whole across
// each step.
func TestLoadBalancingTwoClusters(t *testing.T) {
	env := shared.Env(t)
	ctx := context.Background()
	const apiToken = "lb-api-token"
	const host = "app.example.com"
	const healthPath = "/.well-known/tunnelgate/health"
	f := cffake.New(cffake.Options{Token: apiToken})
	t.Cleanup(f.Close)
	f.AddAccount("acc", "Integration")
	f.AddZone("zone", "example.com", "acc")

	// Cluster b's API server: no controller manager, the test writes
	// EndpointSlices itself.
	envB, err := kubeenv.Start(ctx, kubeenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(envB.Stop)

	a := &lbCluster{name: "a", env: env, backend: netns.Addr(140).String()}
	b := &lbCluster{name: "b", env: envB, backend: netns.Addr(141).String()}
	clusters := []*lbCluster{a, b}
	for _, c := range clusters {
		c.cl = newClients(t, c.env)
		c.ns = c.env.Namespace(t)
		c.tunnel = c.ns + "-" + c.name
		c.owner = "cluster-" + c.name
		fixture.Backend(t, c.backend+":8080", c.name)
	}
	controllerName := "tunnelgate.dev/test-" + a.ns
	policies := func(c *lbCluster) interface {
		Delete(context.Context, string, metav1.DeleteOptions, ...string) error
	} {
		return c.cl.dyn.Resource(v1alpha1.SchemeGroupVersion.WithResource("loadbalancingpolicies")).Namespace(c.ns)
	}
	applyPolicy := func(c *lbCluster, rest string) {
		t.Helper()
		if err := c.env.Apply(ctx, []byte(lbPolicy(c.ns, "app-lb", "pool: shop\n  "+rest))); err != nil {
			t.Fatal(err)
		}
	}
	join := func(c *lbCluster, policy string) {
		t.Helper()
		objects := fixture.CloudflareClassYAML(c.ns, apiToken, c.tunnel, "{enabled: true, zones: [example.com], ownerID: "+c.owner+"}") + fixture.ClassYAML(c.ns, controllerName, c.ns) + "---\n" + fixture.GatewayYAML(c.ns, "gw", c.ns, fixture.HTTP80) +
			fixture.AppBackend(c.ns, c.backend) + fmt.Sprintf(`---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: %s}
spec:
  parentRefs: [{name: gw}]
  hostnames: [%s]
  rules: [{backendRefs: [{name: app, port: 80}]}]
`, c.ns, host)
		if err := c.env.Apply(ctx, []byte(objects)); err != nil {
			t.Fatal(err)
		}
		if policy != "" {
			applyPolicy(c, policy)
		}
		c.r = startControllerOpts(t, c.cl, controllerName, ctlOpts{syncInterval: 20 * time.Millisecond,
			cloudflare: f.URL(), cfDriftEvery: 500 * time.Millisecond, cfDNSEvery: time.Second})
		c.p, c.proxy = startOriginProxy(t, c.r)
	}

	// What the fake holds.
	tunnelID := func(c *lbCluster) string {
		for _, tn := range f.Tunnels("acc") {
			if tn.Name == c.tunnel {
				return tn.ID
			}
		}
		return ""
	}
	pools := func() []cffake.Pool { return f.Pools("acc") }
	origin := func(c *lbCluster) (cffake.PoolOrigin, bool) {
		for _, p := range pools() {
			for _, o := range p.Origins {
				if o.Address == c.tunnelID+".cfargotunnel.com" {
					return o, true
				}
			}
		}
		return cffake.PoolOrigin{}, false
	}
	lbs := func() []cffake.LoadBalancer { return f.LoadBalancers("zone") }
	monitors := func() []cffake.MonitorSpec { return f.Monitors("acc") }
	records := func() string {
		var out []string
		for _, r := range f.Records("zone") {
			if strings.Contains(r.Name, host) {
				out = append(out, r.Type+" "+r.Name+" "+r.Content)
			}
		}
		return strings.Join(out, "; ")
	}

	// A policy's ancestor written by c's controller.
	policyCond := func(c *lbCluster, typ string, status metav1.ConditionStatus, reason string) func() (bool, string) {
		return func() (bool, string) {
			u, err := c.cl.dyn.Resource(v1alpha1.SchemeGroupVersion.WithResource("loadbalancingpolicies")).Namespace(c.ns).Get(ctx, "app-lb", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			var p v1alpha1.LoadBalancingPolicy
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
				return false, err.Error()
			}
			for _, an := range p.Status.Ancestors {
				if string(an.ControllerName) != controllerName {
					continue
				}
				if cond := findCond(an.Conditions, typ); cond != nil && cond.ObservedGeneration != p.Generation {
					return false, fmt.Sprintf("%s of generation %d, the policy's is %d", typ, cond.ObservedGeneration, p.Generation)
				}
				return condIs(an.Conditions, typ, status, reason)
			}
			return false, fmt.Sprintf("no ancestor of %s: %+v", controllerName, p.Status.Ancestors)
		}
	}
	ready := func(c *lbCluster) func() (bool, string) {
		return policyCond(c, translate.LBConditionReady, metav1.ConditionTrue, "Ready")
	}
	// probe sends a monitor's request through c's proxy, with token
	// unless "".
	probe := func(c *lbCluster, token string) (int, string) {
		req, err := http.NewRequest("GET", c.proxy+healthPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if token != "" {
			req.Header.Set(translate.LBHealthHeader, token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		var body strings.Builder
		buf := make([]byte, 512)
		n, _ := res.Body.Read(buf)
		body.Write(buf[:n])
		return res.StatusCode, body.String()
	}
	probeIs := func(c *lbCluster, token string, code int, body string) func() (bool, string) {
		return func() (bool, string) {
			got, gotBody := probe(c, token)
			if got != code || (body != "" && !strings.Contains(gotBody, body)) {
				return false, fmt.Sprintf("cluster %s answered %d %q, want %d %q", c.name, got, gotBody, code, body)
			}
			return true, ""
		}
	}
	// routeDNS is c's route's DNS condition, its message containing msg.
	routeDNS := func(c *lbCluster, status metav1.ConditionStatus, reason, msg string) func() (bool, string) {
		return func() (bool, string) {
			r, err := c.cl.gw.GatewayV1().HTTPRoutes(c.ns).Get(ctx, "app", metav1.GetOptions{})
			if err != nil || len(r.Status.Parents) == 0 {
				return false, fmt.Sprint("no status ", err)
			}
			if ok, why := condIs(r.Status.Parents[0].Conditions, translate.RouteConditionDNSRecords, status, reason); !ok {
				return false, why
			}
			if m := findCond(r.Status.Parents[0].Conditions, translate.RouteConditionDNSRecords).Message; !strings.Contains(m, msg) {
				return false, "message " + m
			}
			return true, ""
		}
	}
	const wait = 20 * time.Second

	// Cluster a serves the hostname through its tunnel, with its CNAME;
	// then it load balances it, creating the pool, monitor and load
	// balancer; cluster b joins them. (Two clusters creating a missing
	// pool at the same moment may make two: a known limit.)
	join(a, "")
	eventually(t, wait, "a's tunnel", func() (bool, string) { a.tunnelID = tunnelID(a); return a.tunnelID != "", "none" })
	aRecords := fmt.Sprintf(`TXT _tunnelgate.%[1]s "heritage=tunnelgate,owner=cluster-a,tunnel=%[2]s"; CNAME %[1]s %[2]s.cfargotunnel.com`, host, a.tunnelID)
	eventually(t, wait, "a's CNAME", func() (bool, string) { r := records(); return r == aRecords, r })
	f.ResetCalls()
	applyPolicy(a, "weight: 100")
	eventually(t, wait, "a LoadBalancerReady", ready(a))
	aOrigin, _ := origin(a)
	join(b, "weight: 100")
	eventually(t, wait, "b's tunnel", func() (bool, string) { b.tunnelID = tunnelID(b); return b.tunnelID != "", "none" })
	eventually(t, wait, "b LoadBalancerReady", ready(b))
	if o, _ := origin(a); o != aOrigin {
		t.Errorf("a's origin changed as b joined: %+v, was %+v", o, aOrigin)
	}

	ps := pools()
	if len(ps) != 1 {
		t.Fatalf("pools %+v, want one", ps)
	}
	pool := ps[0]
	if pool.Name != "shop" || pool.Description != "tunnelgate: pool shop" || len(pool.Origins) != 2 {
		t.Fatalf("pool %+v", pool)
	}
	for _, c := range clusters {
		want := cffake.PoolOrigin{Name: "tunnel-" + c.tunnelID, Address: c.tunnelID + ".cfargotunnel.com", Enabled: true, Weight: 1, Host: host}
		if o, _ := origin(c); o != want {
			t.Errorf("cluster %s's origin %+v, want %+v", c.name, o, want)
		}
	}
	ms := monitors()
	if len(ms) != 1 || ms[0].ID != pool.Monitor || ms[0].Description != "tunnelgate: monitor of pool shop" ||
		ms[0].Type != "https" || ms[0].Path != healthPath || !slices.Equal(ms[0].Header["Host"], []string{host}) {
		t.Fatalf("monitors %+v, pool's %s", ms, pool.Monitor)
	}
	token := ""
	if v := ms[0].Header[translate.LBHealthHeader]; len(v) == 1 {
		token = v[0]
	}
	if !regexp.MustCompile(`^[0-9a-f]{48}$`).MatchString(token) {
		t.Fatalf("the monitor's token %q", token)
	}
	l := lbs()
	if len(l) != 1 || l[0].Name != host || l[0].Description != "tunnelgate: load balancer "+host || !l[0].Proxied ||
		!slices.Equal(l[0].DefaultPools, []string{pool.ID}) || l[0].FallbackPool != pool.ID {
		t.Fatalf("load balancers %+v, pool %s", l, pool.ID)
	}
	lbID := l[0].ID
	// The load balancer has the hostname: cluster a's CNAME and ownership
	// record go (b, another owner, never made any), and each route says
	// whose the hostname is.
	eventually(t, wait, "no record left on the hostname", func() (bool, string) { r := records(); return r == "", r })
	// Nothing went dark: a's CNAME went only once the load balancer was
	// there, and b, joining a load balanced hostname, made no record.
	lbMade := -1
	var dnsWrites []string
	for i, c := range f.Calls() {
		switch {
		case c.Method == http.MethodPost && c.Route == "POST /zones/{zone_id}/load_balancers" && c.Status == http.StatusOK && lbMade < 0:
			lbMade = i
		case c.Method != http.MethodGet && strings.Contains(c.Route, "/dns_records"):
			dnsWrites = append(dnsWrites, c.Method+" "+c.Path)
			if lbMade < 0 {
				t.Errorf("DNS written before the load balancer was created: %s %s %s", c.Method, c.Path, c.Body)
			}
			if strings.Contains(string(c.Body), b.tunnelID) {
				t.Errorf("b wrote a record on joining: %s %s %s", c.Method, c.Path, c.Body)
			}
		}
	}
	if lbMade < 0 || len(dnsWrites) == 0 {
		t.Errorf("calls: load balancer created at %d, DNS writes %q", lbMade, dnsWrites)
	}
	for _, c := range clusters {
		eventually(t, wait, "cluster "+c.name+"'s route: its records ready, the load balancer's",
			routeDNS(c, metav1.ConditionTrue, translate.DNSReasonReady, "a Cloudflare load balancer (LoadBalancingPolicy) answers for "+host))
	}

	// Each proxy answers the monitor's probe: the listener's health
	// check carries the monitor's token, and a probe without it is routed
	// to the application.
	for _, c := range clusters {
		want := proxycfg.HealthCheck{Path: healthPath, Header: translate.LBHealthHeader, Token: token}
		eventually(t, wait, "cluster "+c.name+"'s listener has the monitor's health check", func() (bool, string) {
			cfg := c.p.Config()
			if cfg == nil {
				return false, "no config"
			}
			var got []string
			for _, l := range cfg.Listeners {
				if l.HealthCheck != nil && *l.HealthCheck == want {
					return true, ""
				}
				got = append(got, fmt.Sprintf("%s: %+v", l.Name, l.HealthCheck))
			}
			return false, strings.Join(got, "; ")
		})
		eventually(t, wait, "cluster "+c.name+" answers the monitor", probeIs(c, token, http.StatusOK, ""))
		eventually(t, wait, "cluster "+c.name+" routes a probe without the token", probeIs(c, "", http.StatusOK, c.name+" "+healthPath))
		if code, body := probe(c, strings.Repeat("0", 48)); code != http.StatusOK || body != c.name+" "+healthPath {
			t.Errorf("cluster %s: a probe with a wrong token answered %d %q, want routed", c.name, code, body)
		}
	}

	// a's weight changes: only a's origin does.
	bOrigin, _ := origin(b)
	applyPolicy(a, "weight: 40")
	eventually(t, wait, "a's origin at weight 0.4", func() (bool, string) {
		o, _ := origin(a)
		return o.Weight == 0.4 && o.Enabled, fmt.Sprintf("%+v", o)
	})
	eventually(t, wait, "a LoadBalancerReady after the change", ready(a))
	if o, _ := origin(b); o != bOrigin {
		t.Errorf("b's origin changed with a's weight: %+v, was %+v", o, bOrigin)
	}
	if ps := pools(); len(ps) != 1 || ps[0].ID != pool.ID || len(ps[0].Origins) != 2 {
		t.Errorf("pools after a's weight: %+v", ps)
	}

	// a's backends go: its proxies answer the monitor 503, b's still 200.
	if err := a.env.Apply(ctx, []byte(strings.Replace(fixture.AppBackend(a.ns), "endpoints:\n", "endpoints: []\n", 1))); err != nil {
		t.Fatal(err)
	}
	eventually(t, wait, "a unhealthy without endpoints", probeIs(a, token, http.StatusServiceUnavailable, ""))
	if code, _ := probe(b, token); code != http.StatusOK {
		t.Errorf("b answered %d while a's backends were gone", code)
	}
	if err := a.env.Apply(ctx, []byte(fixture.AppBackend(a.ns, a.backend))); err != nil {
		t.Fatal(err)
	}
	eventually(t, wait, "a healthy again", probeIs(a, token, http.StatusOK, ""))
	if o, _ := origin(b); o != bOrigin {
		t.Errorf("b's origin changed with a's backends: %+v, was %+v", o, bOrigin)
	}

	// b leaves: its origin goes, a's stays as it was, nothing is deleted,
	// and b's proxies route the probe as any request. b's route still
	// publishes the hostname, no longer load balanced by b: b makes its
	// CNAME again, which the load balancer takes precedence over, and a's
	// route reports it as another owner's.
	aOrigin, _ = origin(a)
	if err := policies(b).Delete(ctx, "app-lb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, wait, "b's origin out of the pool", func() (bool, string) {
		_, in := origin(b)
		return !in, fmt.Sprintf("%+v", pools())
	})
	if ps := pools(); len(ps) != 1 || len(ps[0].Origins) != 1 || ps[0].Origins[0] != aOrigin {
		t.Errorf("pools after b left: %+v, a's origin was %+v", ps, aOrigin)
	}
	if l := lbs(); len(l) != 1 || l[0].ID != lbID {
		t.Errorf("load balancers after b left: %+v", l)
	}
	if m := monitors(); len(m) != 1 || m[0].ID != pool.Monitor {
		t.Errorf("monitors after b left: %+v", m)
	}
	eventually(t, wait, "b routes the probe once it left", probeIs(b, token, http.StatusOK, b.name+" "+healthPath))
	eventually(t, wait, "a still answers the monitor", probeIs(a, token, http.StatusOK, ""))
	eventually(t, wait, "a still LoadBalancerReady", ready(a))
	bRecords := fmt.Sprintf(`TXT _tunnelgate.%[1]s "heritage=tunnelgate,owner=cluster-b,tunnel=%[2]s"; CNAME %[1]s %[2]s.cfargotunnel.com`, host, b.tunnelID)
	eventually(t, wait, "b's CNAME once it left", func() (bool, string) { r := records(); return r == bRecords, r })
	eventually(t, wait, "a's route names b's records", routeDNS(a, metav1.ConditionFalse, translate.DNSReasonOwnedByOther, `load balancer takes precedence over the records of tunnelgate owner "cluster-b"`))

	// a leaves, without deleteUnused: its origin, the pool's last, is
	// disabled; the pool, monitor and load balancer stay.
	if err := policies(a).Delete(ctx, "app-lb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, wait, "a's origin disabled", func() (bool, string) {
		o, in := origin(a)
		return in && !o.Enabled && o.Weight == 0, fmt.Sprintf("%+v", pools())
	})
	if ps := pools(); len(ps) != 1 || ps[0].ID != pool.ID || len(ps[0].Origins) != 1 {
		t.Errorf("pools after a left: %+v", ps)
	}
	if l, m := lbs(), monitors(); len(l) != 1 || l[0].ID != lbID || len(m) != 1 || m[0].ID != pool.Monitor {
		t.Errorf("after a left without deleteUnused: load balancers %+v, monitors %+v", l, m)
	}

	// a comes back with deleteUnused, then leaves: the load balancer, the
	// pool and the monitor, all tunnelgate's, are deleted.
	applyPolicy(a, "deleteUnused: true")
	eventually(t, wait, "a back in", ready(a))
	eventually(t, wait, "a's origin enabled again", func() (bool, string) {
		o, _ := origin(a)
		return o.Enabled && o.Weight == 1, fmt.Sprintf("%+v", o)
	})
	if err := policies(a).Delete(ctx, "app-lb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, wait, "what tunnelgate made deleted", func() (bool, string) {
		p, l, m := pools(), lbs(), monitors()
		return len(p)+len(l)+len(m) == 0, fmt.Sprintf("pools %+v, load balancers %+v, monitors %+v", p, l, m)
	})
	// b's CNAME, left alone all along, is the hostname's now: a, whose
	// route still publishes it, finds it another owner's.
	if r := records(); r != bRecords {
		t.Errorf("records once a left: %s, want b's: %s", r, bRecords)
	}
	eventually(t, wait, "a's route finds the hostname b's", routeDNS(a, metav1.ConditionFalse, translate.DNSReasonOwnedByOther, `owned by tunnelgate owner "cluster-b"`))
}
