package cffake_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/cloudflare/cloudflare-go/v7"
	"github.com/cloudflare/cloudflare-go/v7/option"
	"github.com/cloudflare/cloudflare-go/v7/zero_trust"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestTunnelLifecycle(t *testing.T) {
	f, c := setup(t)
	ctx := context.Background()
	tun := c.ZeroTrust.Tunnels.Cloudflared
	acct := cloudflare.F(acctID)

	created, err := tun.New(ctx, zero_trust.TunnelCloudflaredNewParams{AccountID: acct,
		Name: cloudflare.F("gw"), ConfigSrc: cloudflare.F(zero_trust.TunnelCloudflaredNewParamsConfigSrcCloudflare)})
	check(t, err)
	if !uuidRE.MatchString(created.ID) || created.Name != "gw" || created.ConfigSrc != "cloudflare" ||
		created.Status != "inactive" || created.CreatedAt.IsZero() || !created.DeletedAt.IsZero() {
		t.Fatalf("created = %s", created.JSON.RawJSON())
	}

	_, err = tun.New(ctx, zero_trust.TunnelCloudflaredNewParams{AccountID: acct, Name: cloudflare.F("gw")})
	apiErr(t, err, http.StatusConflict, 1013)

	local, err := tun.New(ctx, zero_trust.TunnelCloudflaredNewParams{AccountID: acct, Name: cloudflare.F("local-one")})
	check(t, err)
	if local.ConfigSrc != "local" {
		t.Errorf("config_src defaults to %q, want local", local.ConfigSrc)
	}

	got, err := tun.Get(ctx, created.ID, zero_trust.TunnelCloudflaredGetParams{AccountID: acct})
	check(t, err)
	if got.ID != created.ID || got.AccountTag != acctID {
		t.Fatalf("get = %s", got.JSON.RawJSON())
	}

	tok, err := tun.Token.Get(ctx, created.ID, zero_trust.TunnelCloudflaredTokenGetParams{AccountID: acct})
	check(t, err)
	raw, err := base64.StdEncoding.DecodeString(*tok)
	check(t, err)
	var parts struct{ A, T, S string }
	check(t, json.Unmarshal(raw, &parts))
	secret, err := base64.StdEncoding.DecodeString(parts.S)
	if parts.A != acctID || parts.T != created.ID || err != nil || len(secret) < 32 {
		t.Fatalf("token = %s", raw)
	}
	// The edge's side: the token names the tunnel; a forged secret does not.
	if a, id, err := f.CheckTunnelToken(*tok); err != nil || a != acctID || id != created.ID {
		t.Errorf("CheckTunnelToken = %s %s %v, want the created tunnel", a, id, err)
	}
	forged, _ := json.Marshal(map[string]string{"a": acctID, "t": created.ID, "s": base64.StdEncoding.EncodeToString(make([]byte, 32))})
	for _, bad := range []string{base64.StdEncoding.EncodeToString(forged), "not base64!", base64.StdEncoding.EncodeToString([]byte("[]"))} {
		if _, _, err := f.CheckTunnelToken(bad); err == nil {
			t.Errorf("CheckTunnelToken(%q) accepted", bad)
		}
	}

	renamed, err := tun.Edit(ctx, local.ID, zero_trust.TunnelCloudflaredEditParams{AccountID: acct, Name: cloudflare.F("renamed")})
	check(t, err)
	if renamed.Name != "renamed" {
		t.Fatalf("edit = %s", renamed.JSON.RawJSON())
	}

	deleted, err := tun.Delete(ctx, created.ID, zero_trust.TunnelCloudflaredDeleteParams{AccountID: acct})
	check(t, err)
	if deleted.DeletedAt.IsZero() {
		t.Fatalf("delete result has no deleted_at: %s", deleted.JSON.RawJSON())
	}
	_, err = tun.Token.Get(ctx, created.ID, zero_trust.TunnelCloudflaredTokenGetParams{AccountID: acct})
	apiErr(t, err, http.StatusNotFound, 1003)
	if _, _, err := f.CheckTunnelToken(*tok); err == nil {
		t.Error("CheckTunnelToken accepts the token of a deleted tunnel")
	}
	_, err = tun.Delete(ctx, created.ID, zero_trust.TunnelCloudflaredDeleteParams{AccountID: acct})
	apiErr(t, err, http.StatusNotFound, 1003)

	byName := func(p zero_trust.TunnelCloudflaredListParams) int {
		t.Helper()
		p.AccountID, p.Name = acct, cloudflare.F("gw")
		page, err := tun.List(ctx, p)
		check(t, err)
		return len(page.Result)
	}
	if n := byName(zero_trust.TunnelCloudflaredListParams{}); n != 1 {
		t.Errorf("list by name without is_deleted = %d tunnels, want the deleted one", n)
	}
	if n := byName(zero_trust.TunnelCloudflaredListParams{IsDeleted: cloudflare.F(false)}); n != 0 {
		t.Errorf("is_deleted=false = %d tunnels", n)
	}

	// The name is free again once the old tunnel is deleted.
	again, err := tun.New(ctx, zero_trust.TunnelCloudflaredNewParams{AccountID: acct, Name: cloudflare.F("gw")})
	check(t, err)
	if again.ID == created.ID {
		t.Fatal("new tunnel reused the deleted ID")
	}
	if n := len(f.Tunnels(acctID)); n != 3 {
		t.Fatalf("Tunnels = %d, want 3 (one deleted)", n)
	}
}

func TestTunnelListPaging(t *testing.T) {
	f, c := setup(t)
	for i := range 25 {
		f.AddTunnel(acctID, fmt.Sprintf("00000000-0000-4000-8000-%012d", i), fmt.Sprintf("t%02d", i))
	}
	it := c.ZeroTrust.Tunnels.Cloudflared.ListAutoPaging(context.Background(),
		zero_trust.TunnelCloudflaredListParams{AccountID: cloudflare.F(acctID), PerPage: cloudflare.F(10.0)})
	seen := map[string]bool{}
	for it.Next() {
		if it.Current().ConfigSrc != "cloudflare" {
			t.Fatalf("seeded tunnel = %s", it.Current().JSON.RawJSON())
		}
		seen[it.Current().Name] = true
	}
	check(t, it.Err())
	if len(seen) != 25 {
		t.Fatalf("auto-paging saw %d of 25 tunnels", len(seen))
	}
	first, err := c.ZeroTrust.Tunnels.Cloudflared.List(context.Background(),
		zero_trust.TunnelCloudflaredListParams{AccountID: cloudflare.F(acctID)})
	check(t, err)
	if len(first.Result) != 20 {
		t.Fatalf("default page holds %d tunnels, want 20", len(first.Result))
	}
}

const tunnelID = "6ff42ae2-765d-4adf-8112-31c55c1551ef"

func validConfig() zero_trust.TunnelCloudflaredConfigurationUpdateParams {
	type ingress = zero_trust.TunnelCloudflaredConfigurationUpdateParamsConfigIngress
	return zero_trust.TunnelCloudflaredConfigurationUpdateParams{
		AccountID: cloudflare.F(acctID),
		Config: cloudflare.F(zero_trust.TunnelCloudflaredConfigurationUpdateParamsConfig{
			Ingress: cloudflare.F([]ingress{
				{Hostname: cloudflare.F("app.example.com"), Service: cloudflare.F("http://proxy:8080"),
					OriginRequest: cloudflare.F(zero_trust.TunnelCloudflaredConfigurationUpdateParamsConfigIngressOriginRequest{
						ConnectTimeout: cloudflare.F(int64(30))})},
				{Hostname: cloudflare.F("api.example.com"), Path: cloudflare.F("^/v1/"), Service: cloudflare.F("https://proxy:8443")},
				{Service: cloudflare.F("http_status:404")},
			}),
		}),
	}
}

func TestTunnelConfiguration(t *testing.T) {
	f, c := setup(t)
	ctx := context.Background()
	f.AddTunnel(acctID, tunnelID, "gw")
	cfg := c.ZeroTrust.Tunnels.Cloudflared.Configurations
	get := zero_trust.TunnelCloudflaredConfigurationGetParams{AccountID: cloudflare.F(acctID)}

	before, err := cfg.Get(ctx, tunnelID, get)
	check(t, err)
	if before.Version != 0 || before.TunnelID != tunnelID {
		t.Fatalf("unconfigured = %s", before.JSON.RawJSON())
	}

	for want := int64(1); want <= 2; want++ {
		res, err := cfg.Update(ctx, tunnelID, validConfig())
		check(t, err)
		if res.Version != want || res.Source != "cloudflare" || res.TunnelID != tunnelID {
			t.Fatalf("PUT %d = %s", want, res.JSON.RawJSON())
		}
	}
	doc, version := f.TunnelConfig(acctID, tunnelID)
	if version != 2 || !strings.Contains(string(doc), `"connectTimeout":30`) {
		t.Fatalf("stored config v%d %s", version, doc)
	}
	after, err := cfg.Get(ctx, tunnelID, get)
	check(t, err)
	ing := after.Config.Ingress
	if after.Version != 2 || len(ing) != 3 || ing[1].Path != "^/v1/" || ing[2].Hostname != "" || ing[2].Service != "http_status:404" {
		t.Fatalf("GET after PUT = %s", after.JSON.RawJSON())
	}
	if route := f.Calls()[1].Route; route != "PUT /accounts/{account_id}/cfd_tunnel/{tunnel_id}/configurations" {
		t.Fatalf("route = %q", route)
	}

	_, err = cfg.Update(ctx, "00000000-0000-4000-8000-000000000000", validConfig())
	apiErr(t, err, http.StatusNotFound, 1003)
}

func TestTunnelConfigurationValidation(t *testing.T) {
	f, c := setup(t)
	ctx := context.Background()
	f.AddTunnel(acctID, tunnelID, "gw")
	_, err := c.ZeroTrust.Tunnels.Cloudflared.Configurations.Update(ctx, tunnelID, validConfig())
	check(t, err)

	rule := func(fields string) string { return `{` + fields + `}` }
	catchAll := rule(`"service":"http_status:404"`)
	for name, ingress := range map[string]string{
		"no rules":               ``,
		"last rule has hostname": rule(`"hostname":"a.example.com","service":"http://x:80"`),
		"last rule has path":     rule(`"path":"^/x","service":"http://x:80"`),
		"rule without service":   rule(`"hostname":"a.example.com"`) + `,` + catchAll,
		"catch-all before last":  catchAll + `,` + catchAll,
		"wildcard in the middle": rule(`"hostname":"a.*.example.com","service":"http://x:80"`) + `,` + catchAll,
		"hostname with port":     rule(`"hostname":"a.example.com:443","service":"http://x:80"`) + `,` + catchAll,
		"bad path regex":         rule(`"hostname":"a.example.com","path":"(","service":"http://x:80"`) + `,` + catchAll,
		"service with path":      rule(`"hostname":"a.example.com","service":"http://x:80/app"`) + `,` + catchAll,
		"service without scheme": rule(`"hostname":"a.example.com","service":"x:80"`) + `,` + catchAll,
		"duration as string":     rule(`"hostname":"a.example.com","service":"http://x:80","originRequest":{"connectTimeout":"30s"}`) + `,` + catchAll,
	} {
		t.Run(name, func(t *testing.T) {
			body := []byte(`{"config":{"ingress":[` + ingress + `]}}`)
			_, err := c.ZeroTrust.Tunnels.Cloudflared.Configurations.Update(ctx, tunnelID,
				zero_trust.TunnelCloudflaredConfigurationUpdateParams{AccountID: cloudflare.F(acctID)},
				option.WithRequestBody("application/json", body))
			apiErr(t, err, http.StatusBadRequest, 1056)
			if _, v := f.TunnelConfig(acctID, tunnelID); v != 1 {
				t.Fatalf("refused PUT changed the version to %d", v)
			}
		})
	}

	// The same raw route accepts a good document, wildcard and "*" catch-all included.
	good := `{"config":{"ingress":[{"hostname":"*.example.com","service":"unix:/run/p.sock"},{"hostname":"*","service":"http_status:404"}],"originRequest":{"noTLSVerify":true}}}`
	_, err = c.ZeroTrust.Tunnels.Cloudflared.Configurations.Update(ctx, tunnelID,
		zero_trust.TunnelCloudflaredConfigurationUpdateParams{AccountID: cloudflare.F(acctID)},
		option.WithRequestBody("application/json", []byte(good)))
	check(t, err)
	if _, v := f.TunnelConfig(acctID, tunnelID); v != 2 {
		t.Fatalf("version = %d after a good PUT", v)
	}
}
