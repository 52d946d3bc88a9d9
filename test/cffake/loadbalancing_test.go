// This file tests the fake's Load Balancing through cloudflare-go.

package cffake_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cloudflare/cloudflare-go/v7"
	lb "github.com/cloudflare/cloudflare-go/v7/load_balancers"
	"github.com/cloudflare/cloudflare-go/v7/option"

	"github.com/tunnelgate/tunnelgate/test/cffake"
)

var lbIDRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

func tunnelOrigin(name, tunnel, host string) lb.OriginParam {
	return lb.OriginParam{Name: cloudflare.F(name), Address: cloudflare.F(tunnel + ".cfargotunnel.com"),
		Enabled: cloudflare.F(true), Weight: cloudflare.F(1.0),
		Header: cloudflare.F(lb.HeaderParam{Host: cloudflare.F([]string{host})})}
}

func newMonitor(t *testing.T, c *cloudflare.Client) string {
	t.Helper()
	m, err := c.LoadBalancers.Monitors.New(context.Background(), lb.MonitorNewParams{AccountID: cloudflare.F(acctID),
		Type: cloudflare.F(lb.MonitorNewParamsTypeHTTPS), ExpectedCodes: cloudflare.F("2xx"), Path: cloudflare.F("/healthz"),
		Description: cloudflare.F("tunnelgate")})
	check(t, err)
	return m.ID
}

func newPool(t *testing.T, c *cloudflare.Client, name, monitor string, origins ...lb.OriginParam) string {
	t.Helper()
	p := lb.PoolNewParams{AccountID: cloudflare.F(acctID), Name: cloudflare.F(name), Origins: cloudflare.F(origins)}
	if monitor != "" {
		p.Monitor = cloudflare.F(monitor)
	}
	pool, err := c.LoadBalancers.Pools.New(context.Background(), p)
	check(t, err)
	return pool.ID
}

func newLB(c *cloudflare.Client, name string, pools ...string) (*lb.LoadBalancer, error) {
	return c.LoadBalancers.New(context.Background(), lb.LoadBalancerNewParams{ZoneID: cloudflare.F(zoneID),
		Name: cloudflare.F(name), DefaultPools: cloudflare.F(pools), FallbackPool: cloudflare.F(pools[0]),
		Proxied: cloudflare.F(true), SteeringPolicy: cloudflare.F(lb.SteeringPolicyRandom),
		SessionAffinity: cloudflare.F(lb.SessionAffinityCookie), SessionAffinityTTL: cloudflare.F(3600.0)})
}

// Monitors: created with the spec's defaults and ours, listed, replaced
// by PUT (absent fields back to defaults), changed by PATCH (only the
// fields sent), refused when incomplete, and deleted.
func TestMonitorLifecycle(t *testing.T) {
	f, c := setup(t)
	ctx := context.Background()
	mons := c.LoadBalancers.Monitors
	acct := cloudflare.F(acctID)

	m, err := mons.New(ctx, lb.MonitorNewParams{AccountID: acct, ExpectedCodes: cloudflare.F("200"),
		Interval: cloudflare.F(int64(30)), Header: cloudflare.F(map[string][]string{"Host": {"app.example.com"}})})
	check(t, err)
	if !lbIDRE.MatchString(m.ID) || m.Type != "http" || m.Method != "GET" || m.Path != "/" || m.Interval != 30 ||
		m.Timeout != 5 || m.Retries != 2 || m.Header["Host"][0] != "app.example.com" {
		t.Fatalf("created %s", m.JSON.RawJSON())
	}
	list, err := mons.List(ctx, lb.MonitorListParams{AccountID: acct})
	check(t, err)
	if len(list.Result) != 1 || list.Result[0].ID != m.ID {
		t.Fatalf("list %s", list.JSON.RawJSON())
	}

	put, err := mons.Update(ctx, m.ID, lb.MonitorUpdateParams{AccountID: acct, ExpectedCodes: cloudflare.F("2xx"),
		Type: cloudflare.F(lb.MonitorUpdateParamsTypeHTTPS)})
	check(t, err)
	if put.Type != "https" || put.Interval != 60 || len(put.Header) != 0 || put.ExpectedCodes != "2xx" {
		t.Fatalf("after PUT %s", put.JSON.RawJSON())
	}
	patched, err := mons.Edit(ctx, m.ID, lb.MonitorEditParams{AccountID: acct, Path: cloudflare.F("/ready")})
	check(t, err)
	if patched.Type != "https" || patched.Path != "/ready" || patched.ExpectedCodes != "2xx" {
		t.Fatalf("after PATCH %s", patched.JSON.RawJSON())
	}
	got, err := mons.Get(ctx, m.ID, lb.MonitorGetParams{AccountID: acct})
	check(t, err)
	if got.Path != "/ready" || f.Monitors(acctID)[0].Path != "/ready" {
		t.Fatalf("get %s", got.JSON.RawJSON())
	}

	for name, p := range map[string]lb.MonitorNewParams{
		"no expected_codes": {AccountID: acct},
		"bad type":          {AccountID: acct, Type: cloudflare.F(lb.MonitorNewParamsType("ftp"))},
		"bad codes":         {AccountID: acct, ExpectedCodes: cloudflare.F("ok")},
		"bad method":        {AccountID: acct, ExpectedCodes: cloudflare.F("200"), Method: cloudflare.F("POST")},
		"tcp without port":  {AccountID: acct, Type: cloudflare.F(lb.MonitorNewParamsTypeTCP)},
		"interval too short": {AccountID: acct, ExpectedCodes: cloudflare.F("200"), Interval: cloudflare.F(int64(10)),
			Timeout: cloudflare.F(int64(5)), Retries: cloudflare.F(int64(2))},
	} {
		_, err := mons.New(ctx, p)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		apiErr(t, err, http.StatusBadRequest, 1101)
	}
	_, err = mons.Edit(ctx, m.ID, lb.MonitorEditParams{AccountID: acct, Method: cloudflare.F("PUT")})
	apiErr(t, err, http.StatusBadRequest, 1101)
	if f.Monitors(acctID)[0].Method != "GET" {
		t.Error("a refused PATCH changed the monitor")
	}

	for _, body := range []string{`{"type":`, `"http"`, `{"interval":"often"}`} {
		_, err := mons.New(ctx, lb.MonitorNewParams{AccountID: acct}, option.WithRequestBody("application/json", []byte(body)))
		apiErr(t, err, http.StatusBadRequest, 9207)
	}

	_, err = mons.Delete(ctx, m.ID, lb.MonitorDeleteParams{AccountID: acct})
	check(t, err)
	_, err = mons.Get(ctx, m.ID, lb.MonitorGetParams{AccountID: acct})
	apiErr(t, err, http.StatusNotFound, 1102)
}

// Pools: required fields, origins with tunnel addresses and Host headers,
// defaults, the list's monitor filter, PUT and PATCH, and every origin
// rule.
func TestPoolLifecycle(t *testing.T) {
	f, c := setup(t)
	ctx := context.Background()
	pools := c.LoadBalancers.Pools
	acct := cloudflare.F(acctID)
	mon := newMonitor(t, c)

	p, err := pools.New(ctx, lb.PoolNewParams{AccountID: acct, Name: cloudflare.F("app-example-com"),
		Monitor: cloudflare.F(mon), Description: cloudflare.F("tunnelgate: app.example.com"),
		Origins: cloudflare.F([]lb.OriginParam{tunnelOrigin("east", "t-east", "app.example.com"),
			{Name: cloudflare.F("west"), Address: cloudflare.F("t-west.cfargotunnel.com"), Weight: cloudflare.F(0.25),
				Enabled: cloudflare.F(false)}})})
	check(t, err)
	if !lbIDRE.MatchString(p.ID) || !p.Enabled || p.MinimumOrigins != 1 || p.Monitor != mon || len(p.Origins) != 2 ||
		p.Origins[0].Header.Host[0] != "app.example.com" || p.Origins[0].Weight != 1 || !p.Origins[0].Enabled ||
		p.Origins[1].Weight != 0.25 || p.Origins[1].Enabled || p.Origins[1].DisabledAt.IsZero() {
		t.Fatalf("created %s", p.JSON.RawJSON())
	}
	other := newPool(t, c, "other", "", tunnelOrigin("a", "t-a", "other.example.com"))
	list, err := pools.List(ctx, lb.PoolListParams{AccountID: acct, Monitor: cloudflare.F(mon)})
	check(t, err)
	if len(list.Result) != 1 || list.Result[0].ID != p.ID {
		t.Fatalf("list by monitor %s", list.JSON.RawJSON())
	}
	list, err = pools.List(ctx, lb.PoolListParams{AccountID: acct})
	check(t, err)
	if len(list.Result) != 2 || list.Result[1].ID != other {
		t.Fatalf("list %s", list.JSON.RawJSON())
	}

	// PATCH changes only the origins; the monitor and description stay.
	edited, err := pools.Edit(ctx, p.ID, lb.PoolEditParams{AccountID: acct,
		Origins: cloudflare.F([]lb.OriginParam{tunnelOrigin("east", "t-east", "app.example.com")})})
	check(t, err)
	if len(edited.Origins) != 1 || edited.Monitor != mon || edited.Description != "tunnelgate: app.example.com" {
		t.Fatalf("after PATCH %s", edited.JSON.RawJSON())
	}
	// PUT replaces: the monitor and description are gone.
	put, err := pools.Update(ctx, p.ID, lb.PoolUpdateParams{AccountID: acct, Name: cloudflare.F("app-example-com"),
		Origins: cloudflare.F([]lb.OriginParam{tunnelOrigin("east", "t-east", "app.example.com")})})
	check(t, err)
	if put.Monitor != "" || put.Description != "" {
		t.Fatalf("after PUT %s", put.JSON.RawJSON())
	}

	bad := map[string][]lb.OriginParam{
		"no origins":       {},
		"duplicate name":   {tunnelOrigin("x", "t1", "h"), tunnelOrigin("x", "t2", "h")},
		"no name":          {{Address: cloudflare.F("t.cfargotunnel.com")}},
		"no address":       {{Name: cloudflare.F("x")}},
		"weight above one": {{Name: cloudflare.F("x"), Address: cloudflare.F("a"), Weight: cloudflare.F(1.5)}},
		"negative weight":  {{Name: cloudflare.F("x"), Address: cloudflare.F("a"), Weight: cloudflare.F(-0.1)}},
		"weight step":      {{Name: cloudflare.F("x"), Address: cloudflare.F("a"), Weight: cloudflare.F(0.505)}},
		"two Host values": {{Name: cloudflare.F("x"), Address: cloudflare.F("a"),
			Header: cloudflare.F(lb.HeaderParam{Host: cloudflare.F([]string{"a", "b"})})}},
	}
	for name, origins := range bad {
		_, err := pools.New(ctx, lb.PoolNewParams{AccountID: acct, Name: cloudflare.F("bad"), Origins: cloudflare.F(origins)})
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		apiErr(t, err, http.StatusBadRequest, 1101)
		_, err = pools.Edit(ctx, p.ID, lb.PoolEditParams{AccountID: acct, Origins: cloudflare.F(origins)})
		apiErr(t, err, http.StatusBadRequest, 1101)
	}
	if got := f.Pools(acctID)[0]; len(got.Origins) != 1 || got.Origins[0].Name != "east" {
		t.Errorf("refused PATCHes changed the pool: %+v", got)
	}
	for name, p := range map[string]lb.PoolNewParams{
		"no name":         {AccountID: acct, Origins: cloudflare.F([]lb.OriginParam{tunnelOrigin("x", "t", "h")})},
		"bad name":        {AccountID: acct, Name: cloudflare.F("app.example.com"), Origins: cloudflare.F([]lb.OriginParam{tunnelOrigin("x", "t", "h")})},
		"no origins":      {AccountID: acct, Name: cloudflare.F("x")},
		"unknown monitor": {AccountID: acct, Name: cloudflare.F("x"), Monitor: cloudflare.F(strings.Repeat("0", 32)), Origins: cloudflare.F([]lb.OriginParam{tunnelOrigin("x", "t", "h")})},
	} {
		_, err := pools.New(ctx, p)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		apiErr(t, err, http.StatusBadRequest, 1101)
	}
	// Another header than Host, or a body that is not JSON.
	for body, code := range map[string]int64{
		`{"name":"x","origins":[{"name":"a","address":"b","header":{"X-Other":["v"]}}]}`: 1101,
		`{"name":`: 9207, `[]`: 9207,
		`{"name":"x","origins":[{"name":"a","address":"b","weight":"heavy"}]}`: 9207,
	} {
		_, err := pools.New(ctx, lb.PoolNewParams{AccountID: acct}, option.WithRequestBody("application/json", []byte(body)))
		apiErr(t, err, http.StatusBadRequest, code)
	}

	_, err = pools.Delete(ctx, other, lb.PoolDeleteParams{AccountID: acct})
	check(t, err)
	_, err = pools.Get(ctx, other, lb.PoolGetParams{AccountID: acct})
	apiErr(t, err, http.StatusNotFound, 1102)
}

// A monitor a pool uses, and a pool a load balancer uses (as a default
// or as the fallback), cannot be deleted until they are released.
func TestLBReferencesBlockDeletes(t *testing.T) {
	_, c := setup(t)
	ctx := context.Background()
	acct := cloudflare.F(acctID)
	mon := newMonitor(t, c)
	a := newPool(t, c, "a", mon, tunnelOrigin("east", "t1", "app.example.com"))
	b := newPool(t, c, "b", "", tunnelOrigin("east", "t1", "app.example.com"))

	_, err := c.LoadBalancers.Monitors.Delete(ctx, mon, lb.MonitorDeleteParams{AccountID: acct})
	apiErr(t, err, http.StatusConflict, 1104)

	l, err := c.LoadBalancers.New(ctx, lb.LoadBalancerNewParams{ZoneID: cloudflare.F(zoneID), Name: cloudflare.F("app.example.com"),
		DefaultPools: cloudflare.F([]string{a}), FallbackPool: cloudflare.F(b)})
	check(t, err)
	for _, id := range []string{a, b} {
		_, err = c.LoadBalancers.Pools.Delete(ctx, id, lb.PoolDeleteParams{AccountID: acct})
		apiErr(t, err, http.StatusConflict, 1104)
	}
	_, err = c.LoadBalancers.Delete(ctx, l.ID, lb.LoadBalancerDeleteParams{ZoneID: cloudflare.F(zoneID)})
	check(t, err)
	_, err = c.LoadBalancers.Pools.Delete(ctx, a, lb.PoolDeleteParams{AccountID: acct})
	check(t, err)
	_, err = c.LoadBalancers.Monitors.Delete(ctx, mon, lb.MonitorDeleteParams{AccountID: acct})
	check(t, err)
}

// Load balancers: created on a hostname of the zone with our settings,
// one per name, read, listed, replaced, patched and deleted.
func TestLoadBalancerLifecycle(t *testing.T) {
	f, c := setup(t)
	ctx := context.Background()
	z := cloudflare.F(zoneID)
	pool := newPool(t, c, "app", "", tunnelOrigin("east", "t1", "app.example.com"))

	l, err := newLB(c, "App.Example.com.", pool)
	check(t, err)
	if !lbIDRE.MatchString(l.ID) || l.Name != "app.example.com" || !l.Enabled || !l.Proxied || l.SteeringPolicy != "random" ||
		l.SessionAffinity != "cookie" || l.SessionAffinityTTL != 3600 || !slices.Equal(l.DefaultPools, []string{pool}) ||
		l.FallbackPool != pool {
		t.Fatalf("created %s", l.JSON.RawJSON())
	}
	_, err = newLB(c, "app.example.com", pool)
	apiErr(t, err, http.StatusConflict, 1103)

	for name, p := range map[string]lb.LoadBalancerNewParams{
		"outside the zone": {ZoneID: z, Name: cloudflare.F("app.example.org"), DefaultPools: cloudflare.F([]string{pool}), FallbackPool: cloudflare.F(pool)},
		"suffix only":      {ZoneID: z, Name: cloudflare.F("appexample.com"), DefaultPools: cloudflare.F([]string{pool}), FallbackPool: cloudflare.F(pool)},
		"bad label":        {ZoneID: z, Name: cloudflare.F("a_b.example.com"), DefaultPools: cloudflare.F([]string{pool}), FallbackPool: cloudflare.F(pool)},
		"no name":          {ZoneID: z, DefaultPools: cloudflare.F([]string{pool}), FallbackPool: cloudflare.F(pool)},
		"no default pools": {ZoneID: z, Name: cloudflare.F("b.example.com"), FallbackPool: cloudflare.F(pool)},
		"empty pools":      {ZoneID: z, Name: cloudflare.F("b.example.com"), DefaultPools: cloudflare.F([]string{}), FallbackPool: cloudflare.F(pool)},
		"no fallback":      {ZoneID: z, Name: cloudflare.F("b.example.com"), DefaultPools: cloudflare.F([]string{pool})},
		"unknown pool":     {ZoneID: z, Name: cloudflare.F("b.example.com"), DefaultPools: cloudflare.F([]string{strings.Repeat("a", 32)}), FallbackPool: cloudflare.F(pool)},
		"bad steering": {ZoneID: z, Name: cloudflare.F("b.example.com"), DefaultPools: cloudflare.F([]string{pool}), FallbackPool: cloudflare.F(pool),
			SteeringPolicy: cloudflare.F(lb.SteeringPolicy("round_robin"))},
		"bad affinity": {ZoneID: z, Name: cloudflare.F("b.example.com"), DefaultPools: cloudflare.F([]string{pool}), FallbackPool: cloudflare.F(pool),
			SessionAffinity: cloudflare.F(lb.SessionAffinity("sticky"))},
		"header ttl too long": {ZoneID: z, Name: cloudflare.F("b.example.com"), DefaultPools: cloudflare.F([]string{pool}), FallbackPool: cloudflare.F(pool),
			SessionAffinity: cloudflare.F(lb.SessionAffinityHeader), SessionAffinityTTL: cloudflare.F(7200.0)},
		"cookie ttl too short": {ZoneID: z, Name: cloudflare.F("b.example.com"), DefaultPools: cloudflare.F([]string{pool}), FallbackPool: cloudflare.F(pool),
			SessionAffinity: cloudflare.F(lb.SessionAffinityCookie), SessionAffinityTTL: cloudflare.F(60.0)},
	} {
		_, err := c.LoadBalancers.New(ctx, p)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		apiErr(t, err, http.StatusBadRequest, 1101)
	}
	for _, body := range []string{`{"name":`, `[]`, `{"name":"b.example.com","default_pools":"` + pool + `","fallback_pool":"` + pool + `"}`} {
		_, err := c.LoadBalancers.New(ctx, lb.LoadBalancerNewParams{ZoneID: z}, option.WithRequestBody("application/json", []byte(body)))
		apiErr(t, err, http.StatusBadRequest, 9207)
	}
	// The empty steering policy is one the spec allows; so is the apex.
	apex, err := c.LoadBalancers.New(ctx, lb.LoadBalancerNewParams{ZoneID: z, Name: cloudflare.F("example.com"),
		DefaultPools: cloudflare.F([]string{pool}), FallbackPool: cloudflare.F(pool), SteeringPolicy: cloudflare.F(lb.SteeringPolicyEmpty)})
	check(t, err)

	list, err := c.LoadBalancers.List(ctx, lb.LoadBalancerListParams{ZoneID: z})
	check(t, err)
	if len(list.Result) != 2 || list.Result[0].ID != l.ID || list.Result[1].ID != apex.ID {
		t.Fatalf("list %s", list.JSON.RawJSON())
	}
	patched, err := c.LoadBalancers.Edit(ctx, l.ID, lb.LoadBalancerEditParams{ZoneID: z, Enabled: cloudflare.F(false),
		Description: cloudflare.F("managed by tunnelgate")})
	check(t, err)
	if patched.Enabled || patched.Description != "managed by tunnelgate" || patched.SessionAffinityTTL != 3600 {
		t.Fatalf("after PATCH %s", patched.JSON.RawJSON())
	}
	_, err = c.LoadBalancers.Edit(ctx, l.ID, lb.LoadBalancerEditParams{ZoneID: z, Name: cloudflare.F("example.com")})
	apiErr(t, err, http.StatusConflict, 1103)
	_, err = c.LoadBalancers.Edit(ctx, l.ID, lb.LoadBalancerEditParams{ZoneID: z, Name: cloudflare.F("APP.example.com")})
	check(t, err) // its own name is no conflict
	put, err := c.LoadBalancers.Update(ctx, l.ID, lb.LoadBalancerUpdateParams{ZoneID: z, Name: cloudflare.F("www.example.com"),
		DefaultPools: cloudflare.F([]string{pool}), FallbackPool: cloudflare.F(pool)})
	check(t, err)
	if put.Name != "www.example.com" || !put.Enabled || put.Proxied || put.SessionAffinity != "none" || put.Description != "" {
		t.Fatalf("after PUT %s", put.JSON.RawJSON())
	}
	got, err := c.LoadBalancers.Get(ctx, l.ID, lb.LoadBalancerGetParams{ZoneID: z})
	check(t, err)
	if got.Name != "www.example.com" || f.LoadBalancers(zoneID)[0].Name != "www.example.com" {
		t.Fatalf("get %s", got.JSON.RawJSON())
	}
	_, err = c.LoadBalancers.Delete(ctx, l.ID, lb.LoadBalancerDeleteParams{ZoneID: z})
	check(t, err)
	_, err = c.LoadBalancers.Get(ctx, l.ID, lb.LoadBalancerGetParams{ZoneID: z})
	apiErr(t, err, http.StatusNotFound, 1102)
}

// The account's quotas: pools, origins per pool, load balancers.
func TestLBLimits(t *testing.T) {
	f, c := setup(t)
	ctx := context.Background()
	f.SetLBLimits(acctID, cffake.LBLimits{Pools: 1, OriginsPerPool: 2, LoadBalancers: 1})
	o := func(n string) lb.OriginParam { return tunnelOrigin(n, "t-"+n, "app.example.com") }

	_, err := c.LoadBalancers.Pools.New(ctx, lb.PoolNewParams{AccountID: cloudflare.F(acctID), Name: cloudflare.F("a"),
		Origins: cloudflare.F([]lb.OriginParam{o("1"), o("2"), o("3")})})
	apiErr(t, err, http.StatusBadRequest, 1105)
	a := newPool(t, c, "a", "", o("1"), o("2"))
	_, err = c.LoadBalancers.Pools.Edit(ctx, a, lb.PoolEditParams{AccountID: cloudflare.F(acctID),
		Origins: cloudflare.F([]lb.OriginParam{o("1"), o("2"), o("3")})})
	apiErr(t, err, http.StatusBadRequest, 1105)
	_, err = c.LoadBalancers.Pools.New(ctx, lb.PoolNewParams{AccountID: cloudflare.F(acctID), Name: cloudflare.F("b"),
		Origins: cloudflare.F([]lb.OriginParam{o("1")})})
	apiErr(t, err, http.StatusBadRequest, 1105)

	_, err = newLB(c, "app.example.com", a)
	check(t, err)
	_, err = newLB(c, "www.example.com", a)
	apiErr(t, err, http.StatusBadRequest, 1105)
}

// An account without Load Balancing gets the same refusal on every call.
func TestLBNotEntitled(t *testing.T) {
	f, c := setup(t)
	ctx := context.Background()
	acct := cloudflare.F(acctID)
	pool := f.AddPool(acctID, "seeded", cffake.PoolOrigin{Name: "a", Address: "t.cfargotunnel.com", Enabled: true})
	f.SetLBEntitled(acctID, false)
	calls := map[string]func() error{
		"list monitors": func() error {
			_, err := c.LoadBalancers.Monitors.List(ctx, lb.MonitorListParams{AccountID: acct})
			return err
		},
		"create monitor": func() error {
			_, err := c.LoadBalancers.Monitors.New(ctx, lb.MonitorNewParams{AccountID: acct, ExpectedCodes: cloudflare.F("200")})
			return err
		},
		"list pools": func() error {
			_, err := c.LoadBalancers.Pools.List(ctx, lb.PoolListParams{AccountID: acct})
			return err
		},
		"get pool": func() error {
			_, err := c.LoadBalancers.Pools.Get(ctx, pool, lb.PoolGetParams{AccountID: acct})
			return err
		},
		"pool health": func() error {
			_, err := c.LoadBalancers.Pools.Health.Get(ctx, pool, lb.PoolHealthGetParams{AccountID: acct})
			return err
		},
		"list load balancers": func() error {
			_, err := c.LoadBalancers.List(ctx, lb.LoadBalancerListParams{ZoneID: cloudflare.F(zoneID)})
			return err
		},
		"create load balancer": func() error { _, err := newLB(c, "app.example.com", pool); return err },
	}
	for name, call := range calls {
		err := call()
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		apiErr(t, err, http.StatusForbidden, 1106)
	}
	f.SetLBEntitled(acctID, true)
	_, err := newLB(c, "app.example.com", pool)
	check(t, err)
}

// Pool health reports each enabled origin under its address, as the
// spec's example shows it, and the pool healthy while minimum_origins of
// them are.
func TestPoolHealth(t *testing.T) {
	f, c := setup(t)
	ctx := context.Background()
	pool := f.AddPool(acctID, "app",
		cffake.PoolOrigin{Name: "east", Address: "t-east.cfargotunnel.com", Enabled: true, Host: "app.example.com"},
		cffake.PoolOrigin{Name: "west", Address: "t-west.cfargotunnel.com", Enabled: true, Host: "app.example.com"},
		cffake.PoolOrigin{Name: "off", Address: "t-off.cfargotunnel.com"})
	type originHealth struct {
		Healthy bool `json:"healthy"`
	}
	health := func() (bool, map[string]bool) {
		t.Helper()
		h, err := c.LoadBalancers.Pools.Health.Get(ctx, pool, lb.PoolHealthGetParams{AccountID: cloudflare.F(acctID)})
		check(t, err)
		var raw struct {
			PoolID    string `json:"pool_id"`
			PopHealth map[string]struct {
				Healthy bool                      `json:"healthy"`
				Origins []map[string]originHealth `json:"origins"`
			} `json:"pop_health"`
		}
		check(t, json.Unmarshal([]byte(h.JSON.RawJSON()), &raw))
		pop, ok := raw.PopHealth[cffake.HealthPoP]
		if raw.PoolID != pool || !ok {
			t.Fatalf("health %s", h.JSON.RawJSON())
		}
		origins := map[string]bool{}
		for _, o := range pop.Origins {
			for addr, st := range o {
				origins[addr] = st.Healthy
			}
		}
		return pop.Healthy, origins
	}
	if ok, o := health(); !ok || len(o) != 2 || !o["t-east.cfargotunnel.com"] || !o["t-west.cfargotunnel.com"] {
		t.Fatalf("all healthy: %v %v", ok, o)
	}
	if !f.SetOriginHealth(acctID, pool, "east", false) || f.SetOriginHealth(acctID, pool, "nope", false) {
		t.Fatal("SetOriginHealth")
	}
	if ok, o := health(); !ok || o["t-east.cfargotunnel.com"] || !o["t-west.cfargotunnel.com"] {
		t.Fatalf("east down: %v %v", ok, o)
	}
	f.SetOriginHealth(acctID, pool, "west", false)
	if ok, _ := health(); ok {
		t.Fatal("the pool is healthy with no healthy origin")
	}
}

// A seeded pool and another writer's change of its origins show through
// the API; origins not enabled are listed with disabled_at.
func TestSeededPool(t *testing.T) {
	f, c := setup(t)
	pool := f.AddPool(acctID, "app", cffake.PoolOrigin{Name: "east", Address: "t1.cfargotunnel.com", Enabled: true})
	if !f.SetPoolOrigins(acctID, pool, cffake.PoolOrigin{Name: "west", Address: "t2.cfargotunnel.com", Weight: 0.5}) {
		t.Fatal("SetPoolOrigins")
	}
	p, err := c.LoadBalancers.Pools.Get(context.Background(), pool, lb.PoolGetParams{AccountID: cloudflare.F(acctID)})
	check(t, err)
	if len(p.Origins) != 1 || p.Origins[0].Name != "west" || p.Origins[0].Enabled || p.Origins[0].DisabledAt.IsZero() ||
		p.Origins[0].Weight != 0.5 {
		t.Fatalf("pool %s", p.JSON.RawJSON())
	}
	id := f.AddLoadBalancer(zoneID, "app.example.com", pool)
	if got := f.LoadBalancers(zoneID); len(got) != 1 || got[0].ID != id || got[0].FallbackPool != pool {
		t.Fatalf("seeded load balancer %+v", got)
	}
	_, err = c.LoadBalancers.Pools.Delete(context.Background(), pool, lb.PoolDeleteParams{AccountID: cloudflare.F(acctID)},
		option.WithMaxRetries(0))
	apiErr(t, err, http.StatusConflict, 1104)
}
