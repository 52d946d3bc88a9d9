package cloudflare

import (
	"context"
	"testing"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/test/prism"
)

// Every kind of request the Syncer sends, as it sends it, is valid by
// Cloudflare's own OpenAPI spec (served by Prism; see test/prism for the
// spec's known defects and how they are handled). Prism's answers are
// canned, so this checks shapes, not behaviour: the fake (test/cffake)
// is for behaviour.
func TestRequestsMatchCloudflareSpec(t *testing.T) {
	srv := prism.StartT(t)
	a := newAPI(srv.URL(), "prism-token", nil, &Stats{}, nil)
	ctx := context.Background()
	const acc, tunnel, zoneID = "023e105f4ecef8ad9ca31a8372d0c353", "f70ff985-a4ef-4643-bbbc-4a0ed4fc8415", "023e105f4ecef8ad9ca31a8372d0c353"
	const accessID = "f174e90a-fafe-4643-bbbc-4a0ed4fc8415"
	const lbID = "17b5962d775c646f3f9725cbc7a53df4"

	calls := []struct {
		name string
		do   func() error
	}{
		{"list accounts", func() error { _, err := a.accountIDs(ctx); return err }},
		{"list zones", func() error { _, err := a.listZones(ctx, acc); return err }},
		{"get tunnel", func() error { _, _, err := a.getTunnel(ctx, acc, tunnel); return err }},
		{"find tunnel by name", func() error { _, _, err := a.tunnelByName(ctx, acc, "prod"); return err }},
		{"create tunnel", func() error { _, err := a.createTunnel(ctx, acc, "prod"); return err }},
		{"get tunnel token", func() error { _, err := a.tunnelToken(ctx, acc, tunnel); return err }},
		{"set a new tunnel secret", func() error { return a.setTunnelSecret(ctx, acc, tunnel, newTunnelSecret()) }},
		{"get tunnel configuration", func() error { _, err := a.getConfig(ctx, acc, tunnel); return err }},
		{"put tunnel configuration", func() error {
			return a.putConfig(ctx, acc, tunnel, BuildDocument([]translate.Hostname{
				{Name: "app.example.com", HTTP: true}, {Name: "grpc.example.com", GRPC: true}, {Name: "*.example.com", HTTP: true},
			}, nil))
		}},
		{"remove tunnel connections", func() error { return a.cleanupConnections(ctx, acc, tunnel) }},
		{"delete tunnel", func() error { return a.deleteTunnel(ctx, acc, tunnel) }},
		{"list records", func() error { _, err := a.listRecords(ctx, zoneID); return err }},
		{"batch records", func() error {
			plan := PlanDNS([]string{"new.example.com", "moved.example.com"}, []Record{
				{ID: "1", Type: "CNAME", Name: "moved.example.com", Content: "old.cfargotunnel.com", Proxied: true},
				{ID: "2", Type: "TXT", Name: "_tunnelgate.moved.example.com", Content: ownershipContent("prod", "old")},
				{ID: "3", Type: "TXT", Name: "_tunnelgate.gone.example.com", Content: ownershipContent("prod", "t")},
				{ID: "4", Type: "CNAME", Name: "gone.example.com", Content: "t.cfargotunnel.com", Proxied: true},
			}, DNSOptions{Owner: "prod", TunnelID: tunnel, Proxied: true})
			if len(plan.Deletes) == 0 || len(plan.Updates) == 0 || len(plan.Creates) == 0 {
				t.Fatalf("the plan must hold every kind of change: %+v", plan)
			}
			return a.apply(ctx, zoneID, plan)
		}},
		{"batch records, deletes alone (a hostname left to others)", func() error {
			plan := PlanDNS([]string{"moved.example.com"}, []Record{
				{ID: "1", Type: "CNAME", Name: "moved.example.com", Content: tunnel + ".cfargotunnel.com", Proxied: true},
				{ID: "2", Type: "TXT", Name: "_tunnelgate.moved.example.com", Content: ownershipContent("prod", tunnel)},
			}, DNSOptions{Owner: "prod", TunnelID: tunnel, Proxied: true, Unmanaged: []string{"moved.example.com"}})
			if len(plan.Deletes) != 2 || len(plan.Updates)+len(plan.Creates) != 0 {
				t.Fatalf("the plan must delete our pair alone: %+v", plan)
			}
			return a.apply(ctx, zoneID, plan)
		}},
		{"list Access applications", func() error { _, err := a.listAccessApps(ctx, acc); return err }},
		{"list Access policies", func() error { _, err := a.listAccessPolicies(ctx, acc); return err }},
		{"list Access tags", func() error { _, err := a.listAccessTags(ctx, acc); return err }},
		{"create Access tag", func() error { return a.createAccessTag(ctx, acc, appTag(tunnel)) }},
		{"create Access policy", func() error {
			_, err := a.createAccessPolicy(ctx, acc, accessPolicySample(tunnel))
			return err
		}},
		{"update Access policy", func() error { return a.updateAccessPolicy(ctx, acc, accessID, accessPolicySample(tunnel)) }},
		{"delete Access policy", func() error { return a.deleteAccessPolicy(ctx, acc, accessID) }},
		{"create Access application", func() error { _, err := a.createAccessApp(ctx, acc, accessAppSample(tunnel)); return err }},
		{"update Access application", func() error { return a.updateAccessApp(ctx, acc, accessID, accessAppSample(tunnel)) }},
		{"delete Access application", func() error { return a.deleteAccessApp(ctx, acc, accessID) }},
		{"list load balancing monitors", func() error { _, err := a.listMonitors(ctx, acc); return err }},
		{"get load balancing monitor", func() error { _, _, err := a.getMonitor(ctx, acc, lbID); return err }},
		{"create load balancing monitor", func() error { _, err := a.createMonitor(ctx, acc, lbMonitorSample()); return err }},
		{"update load balancing monitor", func() error { _, err := a.updateMonitor(ctx, acc, lbID, lbMonitorSample()); return err }},
		{"delete load balancing monitor", func() error { return a.deleteMonitor(ctx, acc, lbID) }},
		{"list load balancing pools", func() error { _, err := a.listPools(ctx, acc); return err }},
		{"get load balancing pool", func() error { _, _, err := a.getPool(ctx, acc, lbID); return err }},
		{"create load balancing pool", func() error { _, err := a.createPool(ctx, acc, lbPoolSample(tunnel)); return err }},
		{"change a pool's origins", func() error {
			// Prism's canned pool never changes, so the compare passes and
			// the PATCH is sent.
			_, err := a.editPoolOrigins(ctx, acc, lbID, func(cur []LBOrigin) ([]LBOrigin, bool) {
				return append(cur, lbPoolSample(tunnel).Origins...), true
			})
			return err
		}},
		{"set a pool's monitor", func() error { _, err := a.setPoolMonitor(ctx, acc, lbID, lbID); return err }},
		{"delete load balancing pool", func() error { return a.deletePool(ctx, acc, lbID) }},
		{"list load balancers", func() error { _, err := a.listLoadBalancers(ctx, zoneID); return err }},
		{"get load balancer", func() error { _, _, err := a.getLoadBalancer(ctx, zoneID, lbID); return err }},
		{"create load balancer", func() error { _, err := a.createLoadBalancer(ctx, zoneID, lbSample()); return err }},
		{"update load balancer", func() error { _, err := a.updateLoadBalancer(ctx, zoneID, lbID, lbSample()); return err }},
		{"delete load balancer", func() error { return a.deleteLoadBalancer(ctx, zoneID, lbID) }},
	}
	for _, c := range calls {
		if err := c.do(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	for _, x := range srv.Rejected() {
		t.Errorf("Prism refused %s", x)
	}
	if n := len(srv.Exchanges()); n < len(calls) {
		t.Errorf("Prism saw %d requests for %d calls", n, len(calls))
	}
}

// accessPolicySample is a policy as the sync writes one, with every rule
// kind it writes.
func accessPolicySample(tunnel string) policySpec {
	return policySpec{Name: policyPrefix(tunnel) + "team/app: people", Decision: decisionAllow, Include: []accessRule{
		{ruleEmail, "ana@example.com"}, {ruleEmailDomain, "example.org"}, {kind: ruleAnyServiceToken}}}
}

// accessAppSample is an application as the sync writes one.
func accessAppSample(tunnel string) appSpec {
	return appSpec{Name: "team/app", SessionDuration: "12h", Destinations: []string{"app.example.com", "*.example.org"},
		Policies: []string{"f174e90a-fafe-4643-bbbc-4a0ed4fc8415"}, Tags: []string{appTag(tunnel)}}
}

// lbMonitorSample is a monitor as the controller will make one for a
// tunnel's origin.
func lbMonitorSample() LBMonitor {
	return LBMonitor{Type: "https", Description: "tunnelgate: app.example.com", Method: "GET", Path: "/healthz",
		ExpectedCodes: "2xx", Header: map[string][]string{"Host": {"app.example.com"}}, Interval: 60, Timeout: 5, Retries: 2}
}

// lbPoolSample is a pool with one cluster's tunnel as its origin.
func lbPoolSample(tunnel string) LBPool {
	return LBPool{Name: "tunnelgate-app-example-com", Description: "tunnelgate: app.example.com", Monitor: "17b5962d775c646f3f9725cbc7a53df4",
		Enabled: true, MinimumOrigins: 1, Origins: []LBOrigin{
			{Name: "cluster-east", Address: tunnel + ".cfargotunnel.com", Host: "app.example.com", Enabled: true, Weight: 0.5}}}
}

// lbSample is a load balancer on a hostname, with session affinity.
func lbSample() LoadBalancer {
	return LoadBalancer{Name: "app.example.com", Description: "tunnelgate", DefaultPools: []string{"17b5962d775c646f3f9725cbc7a53df4"},
		FallbackPool: "17b5962d775c646f3f9725cbc7a53df4", Proxied: true, Enabled: true, SteeringPolicy: "random",
		SessionAffinity: "cookie", SessionAffinityTTL: 3600}
}
