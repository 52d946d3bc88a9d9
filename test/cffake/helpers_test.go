package cffake_test

import (
	"errors"
	"os"
	"testing"

	"github.com/cloudflare/cloudflare-go/v7"
	"github.com/cloudflare/cloudflare-go/v7/option"

	"github.com/tunnelgate/tunnelgate/test/cffake"
)

const (
	token  = "t0ken"
	acctID = "0123456789abcdef0123456789abcdef"
	zoneID = "fedcba9876543210fedcba9876543210"
)

// cfEnv are the variables cloudflare.NewClient reads; a developer's real
// credentials must not leak into these tests.
var cfEnv = []string{"CLOUDFLARE_API_KEY", "CLOUDFLARE_API_USER_SERVICE_KEY", "CLOUDFLARE_API_TOKEN",
	"CLOUDFLARE_EMAIL", "CLOUDFLARE_BASE_URL", "CLOUDFLARE_CUSTOM_HEADERS"}

// setup starts a fake with one account and one zone (example.com) and
// returns it with a client that does not retry.
func setup(t *testing.T) (*cffake.Fake, *cloudflare.Client) {
	t.Helper()
	for _, k := range cfEnv {
		t.Setenv(k, "") // restores the value after the test
		os.Unsetenv(k)
	}
	f := cffake.New(cffake.Options{Token: token})
	t.Cleanup(f.Close)
	f.AddAccount(acctID, "Acme")
	f.AddZone(zoneID, "example.com", acctID)
	return f, newClient(f, 0)
}

func newClient(f *cffake.Fake, retries int, opts ...option.RequestOption) *cloudflare.Client {
	return cloudflare.NewClient(append([]option.RequestOption{
		option.WithAPIToken(token), option.WithBaseURL(f.URL()), option.WithMaxRetries(retries),
	}, opts...)...)
}

// apiErr asserts err is a Cloudflare API error with this status and first
// error code.
func apiErr(t *testing.T, err error, status int, code int64) *cloudflare.Error {
	t.Helper()
	var e *cloudflare.Error
	if !errors.As(err, &e) {
		t.Fatalf("want API error %d/%d, got %v", status, code, err)
	}
	if e.StatusCode != status || len(e.Errors) == 0 || e.Errors[0].Code != code {
		t.Fatalf("want API error %d/%d, got %d %s", status, code, e.StatusCode, e.JSON.RawJSON())
	}
	return e
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
