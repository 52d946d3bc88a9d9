package prism_test

import (
	"strings"
	"testing"

	"github.com/cloudflare/cloudflare-go/v7"
	"github.com/cloudflare/cloudflare-go/v7/accounts"
	"github.com/cloudflare/cloudflare-go/v7/zero_trust"

	"github.com/tunnelgate/tunnelgate/test/prism"
)

// TestSpecPatchesAreNeeded proves each correction spec.go makes to
// Cloudflare's spec: the spec as shipped refuses a request the real API
// documents and accepts, and the patched one accepts it. When a new
// cloudflare-go fixes the spec, the first half fails (and Start already
// refuses the stale patch): drop the patch then.
func TestSpecPatchesAreNeeded(t *testing.T) {
	raw := prism.StartWithT(t, prism.Options{Unpatched: true})
	patched := prism.StartT(t)
	ctx := t.Context()

	t.Run("ingress-catch-all", func(t *testing.T) {
		// The shortest valid document: one hostname, then the catch-all.
		params := zero_trust.TunnelCloudflaredConfigurationUpdateParams{
			AccountID: cloudflare.F(accountID),
			Config: cloudflare.F(zero_trust.TunnelCloudflaredConfigurationUpdateParamsConfig{
				Ingress: cloudflare.F([]zero_trust.TunnelCloudflaredConfigurationUpdateParamsConfigIngress{
					{Hostname: cloudflare.F("app.example.com"), Service: cloudflare.F("http://10.0.0.7:8080")},
					{Service: cloudflare.F("http_status:404")},
				}),
			}),
		}
		update := func(srv *prism.Server) func() error {
			client := newClient(t, srv)
			return func() error {
				_, err := client.ZeroTrust.Tunnels.Cloudflared.Configurations.Update(ctx, tunnelID, params)
				return err
			}
		}
		ex, _ := send(t, raw, update(raw))
		if !ex.Rejected() {
			t.Errorf("Cloudflare's spec now accepts the catch-all rule without hostname (%s): drop the ingress-catch-all patch in spec.go and this case", ex)
		} else if !hasViolation(ex, "request.body.config.ingress.1", "'hostname'") {
			t.Errorf("the unpatched spec refuses the catch-all for another reason: %s", ex)
		}
		accepted(t, patched, update(patched))
	})

	t.Run("accounts-with-token", func(t *testing.T) {
		list := func(srv *prism.Server) func() error {
			client := newClient(t, srv) // authenticates with an API token
			return func() error {
				_, err := client.Accounts.List(ctx, accounts.AccountListParams{})
				return err
			}
		}
		ex, _ := send(t, raw, list(raw))
		if ex.Status != 401 {
			t.Errorf("Cloudflare's spec now lets an API token list accounts (%s): drop the accounts-with-token patch in spec.go and this case", ex)
		}
		accepted(t, patched, list(patched))
	})
}

func hasViolation(ex prism.Exchange, location, message string) bool {
	for _, v := range ex.RequestErrors() {
		if strings.Join(v.Location, ".") == location && strings.Contains(v.Message, message) {
			return true
		}
	}
	return false
}

// TestPathsNotServed: a request to an endpoint missing from DefaultPaths is
// refused, so a new call of the controller cannot pass unchecked.
func TestPathsNotServed(t *testing.T) {
	srv := prism.StartWithT(t, prism.Options{Paths: []string{"/accounts"}})
	client := newClient(t, srv)
	ex, err := send(t, srv, func() error {
		_, err := client.ZeroTrust.Tunnels.Cloudflared.Token.Get(t.Context(), tunnelID, zero_trust.TunnelCloudflaredTokenGetParams{AccountID: cloudflare.F(accountID)})
		return err
	})
	if ex.Status != 404 || err == nil || !strings.Contains(string(ex.ResponseBody), "NO_PATH_MATCHED") {
		t.Fatalf("want 404 NO_PATH_MATCHED_ERROR, got %s (client error %v)", ex, err)
	}
	accepted(t, srv, func() error {
		_, err := client.Accounts.List(t.Context(), accounts.AccountListParams{})
		return err
	})
}
