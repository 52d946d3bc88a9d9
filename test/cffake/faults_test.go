package cffake_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/cloudflare/cloudflare-go/v7"
	"github.com/cloudflare/cloudflare-go/v7/accounts"
	"github.com/cloudflare/cloudflare-go/v7/dns"
	"github.com/cloudflare/cloudflare-go/v7/option"
	"github.com/cloudflare/cloudflare-go/v7/zero_trust"

	"github.com/tunnelgate/tunnelgate/test/cffake"
)

func statuses(f *cffake.Fake) []int {
	var out []int
	for _, c := range f.Calls() {
		out = append(out, c.Status)
	}
	return out
}

// cloudflare-go's own retry (two by default) waits for Retry-After.
func TestRateLimitRetryAfterIsHonoured(t *testing.T) {
	f, _ := setup(t)
	c := newClient(f, 2)
	f.Fail(cffake.Fault{Status: http.StatusTooManyRequests, RetryAfter: 150 * time.Millisecond, Times: 2})

	start := time.Now()
	_, err := create(c, txt("t", "v"))
	elapsed := time.Since(start)
	check(t, err)
	// Without the header cloudflare-go would back off 0.5s then 1s (less
	// jitter), over a second in all.
	if elapsed < 300*time.Millisecond || elapsed > 1000*time.Millisecond {
		t.Fatalf("two 150ms Retry-Afters took %v", elapsed)
	}
	if got := statuses(f); !slices.Equal(got, []int{429, 429, 200}) {
		t.Fatalf("statuses = %v", got)
	}
	if n := len(f.Records(zoneID)); n != 1 {
		t.Fatalf("%d records after retries", n)
	}
}

func TestRateLimitWholeSeconds(t *testing.T) {
	f, c := setup(t)
	f.Fail(cffake.Fault{Status: http.StatusTooManyRequests, RetryAfter: time.Second, Times: 1})
	var resp *http.Response
	_, err := c.Accounts.Get(context.Background(), accounts.AccountGetParams{AccountID: cloudflare.F(acctID)},
		option.WithResponseInto(&resp))
	e := apiErr(t, err, http.StatusTooManyRequests, 971)
	if ra := e.Response.Header.Get("Retry-After"); ra != "1" {
		t.Fatalf("Retry-After = %q", ra)
	}
	// Times used up: the next call goes through.
	_, err = c.Accounts.Get(context.Background(), accounts.AccountGetParams{AccountID: cloudflare.F(acctID)})
	check(t, err)
}

func TestServerErrors(t *testing.T) {
	f, c := setup(t)
	for _, status := range []int{500, 502, 503} {
		f.Fail(cffake.Fault{Status: status, Times: 1})
		_, err := create(c, txt("t", "v"))
		apiErr(t, err, status, 10013)
	}
	if n := len(f.Records(zoneID)); n != 0 {
		t.Fatalf("failed requests created %d records", n)
	}

	// With retries, a transient 500 is absorbed.
	f.Fail(cffake.Fault{Status: 500, Times: 1, RetryAfter: 10 * time.Millisecond})
	check(t, firstErr(create(newClient(f, 1), txt("t", "v"))))

	// An edge page that is not JSON still becomes a *cloudflare.Error, with
	// no entries in Errors.
	f.Fail(cffake.Fault{Status: 502, Times: 1, RawBody: "error code: 502"})
	_, err := create(c, txt("u", "v"))
	var e *cloudflare.Error
	if !errors.As(err, &e) || e.StatusCode != 502 || len(e.Errors) != 0 {
		t.Fatalf("non-JSON 502 gave %#v", err)
	}
}

func TestFaultMatchesRoute(t *testing.T) {
	f, c := setup(t)
	ctx := context.Background()
	f.AddTunnel(acctID, tunnelID, "gw")
	f.Fail(cffake.Fault{Match: cffake.Route("PUT /accounts/{account_id}/cfd_tunnel/{tunnel_id}/configurations"),
		Status: http.StatusServiceUnavailable})

	check(t, firstErr(create(c, txt("t", "v"))))
	_, err := c.ZeroTrust.Tunnels.Cloudflared.Configurations.Update(ctx, tunnelID, validConfig())
	apiErr(t, err, http.StatusServiceUnavailable, 10013)
	_, err = c.ZeroTrust.Tunnels.Cloudflared.Configurations.Update(ctx, tunnelID, validConfig())
	apiErr(t, err, http.StatusServiceUnavailable, 10013) // Times 0: until cleared

	f.ClearFaults()
	_, err = c.ZeroTrust.Tunnels.Cloudflared.Configurations.Update(ctx, tunnelID, validConfig())
	check(t, err)
	if _, v := f.TunnelConfig(acctID, tunnelID); v != 1 {
		t.Fatalf("version %d, want only the last PUT applied", v)
	}
}

func TestSlowResponse(t *testing.T) {
	f, c := setup(t)
	f.Fail(cffake.Fault{Delay: 5 * time.Second, Times: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.ZeroTrust.Tunnels.Cloudflared.New(ctx, zero_trust.TunnelCloudflaredNewParams{
		AccountID: cloudflare.F(acctID), Name: cloudflare.F("gw")})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("timed-out call took %v", d)
	}
	// The fake saw the client leave, answered nothing and changed nothing.
	deadline := time.Now().Add(2 * time.Second)
	for len(f.Calls()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := statuses(f); !slices.Equal(got, []int{0}) || len(f.Tunnels(acctID)) != 0 {
		t.Fatalf("statuses %v, tunnels %v", got, f.Tunnels(acctID))
	}

	// A delay alone slows a normal answer.
	f.Fail(cffake.Fault{Delay: 150 * time.Millisecond, Times: 1})
	start = time.Now()
	rec, err := create(c, txt("t", "v"))
	check(t, err)
	if d := time.Since(start); d < 150*time.Millisecond || rec.ID == "" {
		t.Fatalf("delayed create took %v", d)
	}
}

func TestCloseCutsDelays(t *testing.T) {
	f, c := setup(t)
	arrived := make(chan struct{}, 1)
	f.Fail(cffake.Fault{Delay: time.Minute, Match: func(*http.Request) bool {
		arrived <- struct{}{}
		return true
	}})
	done := make(chan error, 1)
	go func() {
		_, err := c.DNS.Records.Get(context.Background(), "x", dns.RecordGetParams{ZoneID: zoneF})
		done <- err
	}()
	<-arrived
	f.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("request survived Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the delayed request")
	}
}
