package cffake_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/cloudflare/cloudflare-go/v7"
	"github.com/cloudflare/cloudflare-go/v7/accounts"
	"github.com/cloudflare/cloudflare-go/v7/zones"
)

func TestAccountsPaging(t *testing.T) {
	f, c := setup(t)
	ctx := context.Background()
	for i := range 12 {
		f.AddAccount(fmt.Sprintf("%032d", i), fmt.Sprintf("acct-%02d", i))
	}
	f.ResetCalls()

	var ids []string
	it := c.Accounts.ListAutoPaging(ctx, accounts.AccountListParams{PerPage: cloudflare.F(5.0)})
	for it.Next() {
		ids = append(ids, it.Current().ID)
	}
	check(t, it.Err())
	if len(ids) != 13 || ids[0] != acctID {
		t.Fatalf("auto-paging saw %d accounts %v", len(ids), ids)
	}
	// Three full pages and the empty fourth that stops the pager.
	var queries []string
	for _, call := range f.Calls() {
		queries = append(queries, call.Query)
	}
	want := []string{"per_page=5", "page=2&per_page=5", "page=3&per_page=5", "page=4&per_page=5"}
	if !slices.Equal(queries, want) {
		t.Fatalf("queries = %q, want %q", queries, want)
	}

	page, err := c.Accounts.List(ctx, accounts.AccountListParams{PerPage: cloudflare.F(5.0), Page: cloudflare.F(3.0)})
	check(t, err)
	if len(page.Result) != 3 || page.ResultInfo.Page != 3 || page.ResultInfo.PerPage != 5 {
		t.Fatalf("page 3 = %d items, info %s", len(page.Result), page.ResultInfo.JSON.RawJSON())
	}
	if raw := page.JSON.RawJSON(); !containsAll(raw, `"total_count":13`, `"total_pages":3`, `"count":3`) {
		t.Fatalf("result_info incomplete: %s", raw)
	}

	_, err = c.Accounts.List(ctx, accounts.AccountListParams{PerPage: cloudflare.F(100.0)})
	apiErr(t, err, http.StatusBadRequest, 1001)

	a, err := c.Accounts.Get(ctx, accounts.AccountGetParams{AccountID: cloudflare.F(acctID)})
	check(t, err)
	if a.ID != acctID || a.Name != "Acme" {
		t.Fatalf("account = %s", a.JSON.RawJSON())
	}
	_, err = c.Accounts.Get(ctx, accounts.AccountGetParams{AccountID: cloudflare.F("nope")})
	apiErr(t, err, http.StatusNotFound, 7003)
}

func TestZones(t *testing.T) {
	f, c := setup(t)
	ctx := context.Background()
	other := "11111111111111111111111111111111"
	f.AddAccount(other, "Other")
	f.AddZone("22222222222222222222222222222222", "example.org", other)
	for i := range 7 {
		f.AddZone(fmt.Sprintf("3%031d", i), fmt.Sprintf("z%d.example.net", i), acctID)
	}

	names := func(p zones.ZoneListParams) []string {
		t.Helper()
		var out []string
		it := c.Zones.ListAutoPaging(ctx, p)
		for it.Next() {
			out = append(out, it.Current().Name)
		}
		check(t, it.Err())
		return out
	}
	if got := names(zones.ZoneListParams{Name: cloudflare.F("example.org")}); !slices.Equal(got, []string{"example.org"}) {
		t.Errorf("name filter = %v", got)
	}
	if got := names(zones.ZoneListParams{Name: cloudflare.F("EXAMPLE.com")}); !slices.Equal(got, []string{"example.com"}) {
		t.Errorf("name filter is case-insensitive: %v", got)
	}
	if got := names(zones.ZoneListParams{Name: cloudflare.F("ends_with:.example.net")}); len(got) != 7 {
		t.Errorf("ends_with filter = %v", got)
	}
	byAccount := names(zones.ZoneListParams{
		Account: cloudflare.F(zones.ZoneListParamsAccount{ID: cloudflare.F(acctID)}),
		Status:  cloudflare.F(zones.ZoneListParamsStatusActive),
		PerPage: cloudflare.F(5.0),
	})
	if len(byAccount) != 8 || slices.Contains(byAccount, "example.org") {
		t.Errorf("account.id filter across pages = %v", byAccount)
	}
	if got := names(zones.ZoneListParams{Status: cloudflare.F(zones.ZoneListParamsStatusPending)}); len(got) != 0 {
		t.Errorf("status=pending = %v", got)
	}

	z, err := c.Zones.Get(ctx, zones.ZoneGetParams{ZoneID: cloudflare.F(zoneID)})
	check(t, err)
	if z.Name != "example.com" || z.Account.ID != acctID || z.Status != zones.ZoneStatusActive {
		t.Fatalf("zone = %s", z.JSON.RawJSON())
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
