package cffake_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/cloudflare/cloudflare-go/v7"
	"github.com/cloudflare/cloudflare-go/v7/accounts"
	"github.com/cloudflare/cloudflare-go/v7/dns"
	"github.com/cloudflare/cloudflare-go/v7/option"
	"github.com/cloudflare/cloudflare-go/v7/zones"
)

func TestURLAndCalls(t *testing.T) {
	f, c := setup(t)
	if !strings.HasSuffix(f.URL(), "/client/v4/") {
		t.Fatalf("URL %q should end in the production base path", f.URL())
	}
	ctx := context.Background()
	_, err := c.Zones.Get(ctx, zones.ZoneGetParams{ZoneID: cloudflare.F(zoneID)})
	check(t, err)

	calls := f.Calls()
	if len(calls) != 1 {
		t.Fatalf("calls = %+v", calls)
	}
	want := "GET /zones/{zone_id}"
	if got := calls[0]; got.Method != "GET" || got.Path != "/zones/"+zoneID || got.Route != want || got.Status != 200 {
		t.Fatalf("call = %+v, want GET /zones/%s route %q status 200", got, zoneID, want)
	}
	f.ResetCalls()
	if n := len(f.Calls()); n != 0 {
		t.Fatalf("%d calls after ResetCalls", n)
	}
}

func TestAuth(t *testing.T) {
	f, _ := setup(t)
	ctx := context.Background()
	bad := cloudflare.NewClient(option.WithAPIToken("wrong"), option.WithBaseURL(f.URL()), option.WithMaxRetries(0))
	_, err := bad.DNS.Records.New(ctx, dns.RecordNewParams{ZoneID: cloudflare.F(zoneID), Body: dns.TXTRecordParam{
		Name: cloudflare.F("x"), Type: cloudflare.F(dns.TXTRecordTypeTXT), Content: cloudflare.F("v"), TTL: cloudflare.F(dns.TTL1),
	}})
	e := apiErr(t, err, http.StatusForbidden, 10000)
	if e.Errors[0].Message != "Authentication error" {
		t.Errorf("message = %q", e.Errors[0].Message)
	}
	if strings.Contains(e.JSON.RawJSON(), "wrong") || strings.Contains(e.JSON.RawJSON(), token) {
		t.Errorf("error body echoes a token: %s", e.JSON.RawJSON())
	}
	if n := len(f.Records(zoneID)); n != 0 {
		t.Fatalf("unauthorised create left %d records", n)
	}

	anon := cloudflare.NewClient(option.WithBaseURL(f.URL()), option.WithMaxRetries(0))
	_, err = anon.Accounts.Get(ctx, accounts.AccountGetParams{AccountID: cloudflare.F(acctID)})
	apiErr(t, err, http.StatusBadRequest, 9106)
}

func TestUnknownRoutes(t *testing.T) {
	_, c := setup(t)
	ctx := context.Background()
	var res any
	err := c.Get(ctx, "zones/"+zoneID+"/no_such_thing", nil, &res)
	e := apiErr(t, err, http.StatusNotFound, 7003)
	if !strings.Contains(e.Errors[0].Message, "Could not route to /zones/"+zoneID+"/no_such_thing") {
		t.Errorf("message = %q", e.Errors[0].Message)
	}
	err = c.Delete(ctx, "zones/"+zoneID, nil, &res)
	apiErr(t, err, http.StatusMethodNotAllowed, 7001)
	_, err = c.Zones.Get(ctx, zones.ZoneGetParams{ZoneID: cloudflare.F("00000000000000000000000000000000")})
	apiErr(t, err, http.StatusNotFound, 7003)
}
