package cffake_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/cloudflare/cloudflare-go/v7"
	"github.com/cloudflare/cloudflare-go/v7/zero_trust"
)

// A tunnel with connectors cannot be deleted until they are cleaned up:
// one client's, then all of them.
func TestDeleteNeedsNoConnections(t *testing.T) {
	f, c := setup(t)
	ctx := context.Background()
	tun := c.ZeroTrust.Tunnels.Cloudflared
	acct := cloudflare.F(acctID)
	created, err := tun.New(ctx, zero_trust.TunnelCloudflaredNewParams{AccountID: acct,
		Name: cloudflare.F("gw"), ConfigSrc: cloudflare.F(zero_trust.TunnelCloudflaredNewParamsConfigSrcCloudflare)})
	check(t, err)
	for _, id := range []string{"c1", "c2"} {
		check(t, f.Connect(acctID, created.ID, id))
	}
	got, err := tun.Get(ctx, created.ID, zero_trust.TunnelCloudflaredGetParams{AccountID: acct})
	check(t, err)
	if got.Status != "healthy" {
		t.Errorf("status with connectors = %q, want healthy", got.Status)
	}
	list, err := tun.Connections.Get(ctx, created.ID, zero_trust.TunnelCloudflaredConnectionGetParams{AccountID: acct})
	check(t, err)
	if len(list.Result) != 2 || list.Result[0].ID != "c1" {
		t.Errorf("connections = %+v", list.Result)
	}

	_, err = tun.Delete(ctx, created.ID, zero_trust.TunnelCloudflaredDeleteParams{AccountID: acct})
	apiErr(t, err, http.StatusBadRequest, 1022)

	_, err = tun.Connections.Delete(ctx, created.ID, zero_trust.TunnelCloudflaredConnectionDeleteParams{AccountID: acct, ClientID: cloudflare.F("c1")})
	check(t, err)
	if got := f.Connections(acctID, created.ID); !slices.Equal(got, []string{"c2"}) {
		t.Errorf("after removing c1: %v", got)
	}
	_, err = tun.Delete(ctx, created.ID, zero_trust.TunnelCloudflaredDeleteParams{AccountID: acct})
	apiErr(t, err, http.StatusBadRequest, 1022)

	_, err = tun.Connections.Delete(ctx, created.ID, zero_trust.TunnelCloudflaredConnectionDeleteParams{AccountID: acct})
	check(t, err)
	if got := f.Connections(acctID, created.ID); len(got) != 0 {
		t.Errorf("after cleanup: %v", got)
	}
	_, err = tun.Delete(ctx, created.ID, zero_trust.TunnelCloudflaredDeleteParams{AccountID: acct})
	check(t, err)
	if err := f.Connect(acctID, created.ID, "c3"); err == nil {
		t.Error("a connector connected to a deleted tunnel")
	}
}
