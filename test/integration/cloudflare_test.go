package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/test/cffake"
	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

// The Cloudflare side on the real API server, against the fake Cloudflare
// API: routes applied become the tunnel's ingress document and proxied
// CNAMEs, the Gateway shows the tunnel's hostname, routes say how their
// records are; a foreign record is reported and kept; a removed hostname
// loses its records; a 429 storm in the middle of a change loses nothing;
// and the steady state costs what BENCHMARKS.md records.
func TestCloudflareFollowsRoutes(t *testing.T) {
	env := shared.Env(t)
	cl := newClients(t, env)
	ctx := context.Background()
	ns := env.Namespace(t)
	const apiToken = "integration-api-token"
	f := cffake.New(cffake.Options{Token: apiToken})
	t.Cleanup(f.Close)
	f.AddAccount("acc", "Integration")
	f.AddZone("zone", "example.com", "acc")
	f.AddRecord("zone", cffake.Record{Type: "A", Name: "taken.example.com", Content: "192.0.2.7", TTL: 1})

	controllerName := "tunnelgate.dev/test-" + ns
	addr := netns.Addr(80).String()
	fixture.Backend(t, addr+":8080", "cf")
	routes := func(hosts ...string) string {
		var b strings.Builder
		for i, h := range hosts {
			fmt.Fprintf(&b, `
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r%d, namespace: %s}
spec:
  parentRefs: [{name: gw}]
  hostnames: [%s]
  rules: [{backendRefs: [{name: app, port: 80}]}]
`, i, ns, h)
		}
		return b.String()
	}
	objects := fixture.CloudflareClassYAML(ns, apiToken, ns, "{enabled: true, zones: [example.com]}") + fixture.ClassYAML(ns, controllerName, ns) + "---\n" + fixture.GatewayYAML(ns, "gw", ns, fixture.HTTP80) +
		fixture.AppBackend(ns, addr)
	if err := env.Apply(ctx, []byte(objects+routes("app.example.com", "taken.example.com"))); err != nil {
		t.Fatal(err)
	}
	var syncer *cloudflare.Syncer
	startControllerOpts(t, cl, controllerName, ctlOpts{syncInterval: 20 * time.Millisecond,
		cloudflare: f.URL(), cfDriftEvery: 500 * time.Millisecond, cloudflareRef: &syncer})

	tunnelID := func() string {
		for _, tn := range f.Tunnels("acc") {
			if tn.Name == ns {
				return tn.ID
			}
		}
		return ""
	}
	gwAPI := cl.gw.GatewayV1()
	eventually(t, 30*time.Second, "the Gateway programmed with the tunnel's hostname", func() (bool, string) {
		g, err := gwAPI.Gateways(ns).Get(ctx, "gw", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		id := tunnelID()
		if id == "" || len(g.Status.Addresses) == 0 || g.Status.Addresses[0].Value != id+".cfargotunnel.com" {
			return false, fmt.Sprintf("tunnel %q, addresses %+v", id, g.Status.Addresses)
		}
		return condIs(g.Status.Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
	})
	id := tunnelID()
	dnsCond := func(route string, status metav1.ConditionStatus, reason string) func() (bool, string) {
		return func() (bool, string) {
			r, err := gwAPI.HTTPRoutes(ns).Get(ctx, route, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if len(r.Status.Parents) == 0 {
				return false, "no status"
			}
			return condIs(r.Status.Parents[0].Conditions, translate.RouteConditionDNSRecords, status, reason)
		}
	}
	eventually(t, 30*time.Second, "app's records ready", dnsCond("r0", metav1.ConditionTrue, translate.DNSReasonReady))
	eventually(t, 30*time.Second, "taken's foreign record reported", dnsCond("r1", metav1.ConditionFalse, translate.DNSReasonForeignRecord))
	r1, _ := gwAPI.HTTPRoutes(ns).Get(ctx, "r1", metav1.GetOptions{})
	if c := findCond(r1.Status.Parents[0].Conditions, translate.RouteConditionDNSRecords); !strings.Contains(c.Message, "192.0.2.7") {
		t.Errorf("the condition does not name the foreign record: %q", c.Message)
	}
	recs := zoneRecords(f)
	if recs["CNAME app.example.com"] != id+".cfargotunnel.com" || recs["A taken.example.com"] != "192.0.2.7" || recs["CNAME taken.example.com"] != "" {
		t.Errorf("records %v", recs)
	}
	if got := ingressHosts(t, f, id); !slices.Equal(got, []string{"app.example.com", "taken.example.com", ""}) {
		t.Errorf("ingress hostnames %q", got)
	}
	s, err := cl.kube.CoreV1().Secrets(ns).Get(ctx, "tunnel-token", metav1.GetOptions{})
	if err != nil || len(s.Data["token"]) == 0 {
		t.Errorf("tunnel token Secret: %v %v", err, s)
	}

	// Steady state: a resync of unchanged objects calls nothing; each
	// drift check is one GET, and nothing is written.
	f.ResetCalls()
	start := time.Now()
	calls0 := syncer.Stats.Calls.Load()
	if err := env.Apply(ctx, []byte(fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {touched: \"1\"}}\n", ns))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond) // two drift checks at 500 ms
	var kinds []string
	for _, c := range f.Calls() {
		kinds = append(kinds, c.Method+" "+c.Route)
		if c.Method != http.MethodGet {
			t.Errorf("steady state wrote: %s %s", c.Method, c.Path)
		}
	}
	t.Logf("steady state: %d calls in 1.2 s (drift check every 0.5 s): %v; Syncer counted %d", len(kinds), kinds, syncer.Stats.Calls.Load()-calls0)
	// At most one check per 500 ms of the time that passed (the apply and
	// the sleep may last longer on a busy machine), and one more begun.
	if most := int(time.Since(start)/(500*time.Millisecond)) + 1; len(kinds) < 1 || len(kinds) > most {
		t.Errorf("%d calls in two drift checks, want one GET each, at most %d", len(kinds), most)
	}

	// A hostname is replaced, under a 429 storm: the new records come, the
	// old ones go, the foreign one stays, and the proxy serves meanwhile.
	f.Fail(cffake.Fault{Status: http.StatusTooManyRequests, RetryAfter: 500 * time.Millisecond, Times: 3})
	if err := env.Apply(ctx, []byte(strings.Replace(routes("new.example.com", "taken.example.com", "more.example.com"), "name: r0", "name: r0", 1))); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "new and more ready after the storm", func() (bool, string) {
		for _, r := range []string{"r0", "r2"} {
			if ok, why := dnsCond(r, metav1.ConditionTrue, translate.DNSReasonReady)(); !ok {
				return false, r + ": " + why
			}
		}
		return true, ""
	})
	recs = zoneRecords(f)
	for _, h := range []string{"new.example.com", "more.example.com"} {
		if recs["CNAME "+h] != id+".cfargotunnel.com" {
			t.Errorf("%s: records %v", h, recs)
		}
	}
	if _, ok := recs["CNAME app.example.com"]; ok {
		t.Errorf("app.example.com's CNAME outlived its route: %v", recs)
	}
	if _, ok := recs["TXT _tunnelgate.app.example.com"]; ok {
		t.Errorf("app.example.com's ownership record outlived its route: %v", recs)
	}
	if recs["A taken.example.com"] != "192.0.2.7" {
		t.Errorf("the foreign record was touched: %v", recs)
	}
	limited := 0
	for _, c := range f.Calls() {
		if c.Status == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited != 3 {
		t.Errorf("%d calls answered 429, want the storm's 3", limited)
	}
	if got := ingressHosts(t, f, id); !slices.Equal(got, []string{"more.example.com", "new.example.com", "taken.example.com", ""}) {
		t.Errorf("ingress hostnames %q", got)
	}
	g, _ := gwAPI.Gateways(ns).Get(ctx, "gw", metav1.GetOptions{})
	if ok, why := condIs(g.Status.Conditions, string(gwv1.GatewayConditionProgrammed), metav1.ConditionTrue, ""); !ok {
		t.Errorf("Gateway after the storm: %s", why)
	}
}

func zoneRecords(f *cffake.Fake) map[string]string {
	out := map[string]string{}
	for _, r := range f.Records("zone") {
		out[r.Type+" "+r.Name] = r.Content
	}
	return out
}

func ingressHosts(t *testing.T, f *cffake.Fake, tunnelID string) []string {
	t.Helper()
	raw, _ := f.TunnelConfig("acc", tunnelID)
	var doc struct {
		Ingress []struct{ Hostname string } `json:"ingress"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("tunnel config %s: %v", raw, err)
	}
	var out []string
	for _, r := range doc.Ingress {
		out = append(out, r.Hostname)
	}
	return out
}
