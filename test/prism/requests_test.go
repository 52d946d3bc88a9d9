package prism_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/cloudflare/cloudflare-go/v7"
	"github.com/cloudflare/cloudflare-go/v7/accounts"
	"github.com/cloudflare/cloudflare-go/v7/dns"
	"github.com/cloudflare/cloudflare-go/v7/option"
	"github.com/cloudflare/cloudflare-go/v7/zero_trust"
	"github.com/cloudflare/cloudflare-go/v7/zones"

	"github.com/tunnelgate/tunnelgate/test/prism"
)

// Identifiers in the formats the API uses: 32 hex digits for accounts,
// zones and records, a UUID for tunnels.
const (
	accountID = "023e105f4ecef8ad9ca31a8372d0c353"
	zoneID    = "9a7806061c88ada191ed06f989cc3dac"
	recordID  = "372e67954025e0ba6aaa6d586b9e0b59"
	tunnelID  = "f70ff985-a4ef-4643-bbbc-4a0ed4fc8415"
	tunnelDNS = tunnelID + ".cfargotunnel.com"
)

// newClient is a cloudflare-go client of srv authenticating with an API
// token, as tunnelgate does, and with no CLOUDFLARE_* variable of the
// environment (NewClient reads them: a real token or base URL must not
// leak in, and a test must not depend on them).
func newClient(t *testing.T, srv *prism.Server, opts ...option.RequestOption) *cloudflare.Client {
	t.Helper()
	for _, k := range []string{"CLOUDFLARE_BASE_URL", "CLOUDFLARE_API_TOKEN", "CLOUDFLARE_API_KEY",
		"CLOUDFLARE_EMAIL", "CLOUDFLARE_API_USER_SERVICE_KEY", "CLOUDFLARE_CUSTOM_HEADERS"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	return cloudflare.NewClient(append([]option.RequestOption{
		option.WithAPIToken("Sn3lZJTBX6kkg7OdcBUAxOO963GEIyGQqnFTOFYY"),
		option.WithBaseURL(srv.URL()),
		option.WithMaxRetries(0),
	}, opts...)...)
}

// send runs call, which must make exactly one request, and returns what
// Prism said of it and the client's error.
func send(t *testing.T, srv *prism.Server, call func() error) (prism.Exchange, error) {
	t.Helper()
	before := len(srv.Exchanges())
	err := call()
	got := srv.Exchanges()[before:]
	if len(got) != 1 {
		t.Fatalf("want one request, the client sent %d: %v (client error: %v)", len(got), got, err)
	}
	return got[0], err
}

// accepted fails the test unless Prism accepted the request call sends
// (2xx, no complaint) and the client read the answer.
func accepted(t *testing.T, srv *prism.Server, call func() error) prism.Exchange {
	t.Helper()
	ex, err := send(t, srv, call)
	if ex.Rejected() || ex.Status/100 != 2 {
		t.Fatalf("Prism refused the request: %s\nbody: %s", ex, ex.RequestBody)
	}
	if err != nil {
		t.Fatalf("Prism accepted %s %s but the client failed: %v", ex.Method, ex.Path, err)
	}
	return ex
}

// refused fails the test unless Prism answered the request call sends with
// status and a request violation whose location and message contain
// location and message.
func refused(t *testing.T, srv *prism.Server, status int, location, message string, call func() error) {
	t.Helper()
	ex, err := send(t, srv, call)
	if ex.Status != status || err == nil {
		t.Fatalf("want %d and a client error, got %s (client error: %v)\nbody: %s", status, ex, err, ex.RequestBody)
	}
	for _, v := range ex.RequestErrors() {
		if strings.Contains(strings.Join(v.Location, "."), location) && strings.Contains(v.Message, message) {
			return
		}
	}
	t.Fatalf("%s: no violation at %q saying %q", ex, location, message)
}

// TestControllerRequests sends one request of each kind a tunnel and DNS
// controller sends, as cloudflare-go builds them, and checks that Prism
// finds each valid against Cloudflare's spec.
func TestControllerRequests(t *testing.T) {
	srv := prism.StartT(t)
	client := newClient(t, srv)
	ctx := t.Context()
	ok := func(t *testing.T, call func() error) prism.Exchange { t.Helper(); return accepted(t, srv, call) }

	t.Run("accounts list", func(t *testing.T) {
		ok(t, func() error { _, err := client.Accounts.List(ctx, accounts.AccountListParams{}); return err })
	})
	t.Run("zones list by name and account", func(t *testing.T) {
		ex := ok(t, func() error {
			_, err := client.Zones.List(ctx, zones.ZoneListParams{
				Name:    cloudflare.F("example.com"),
				Account: cloudflare.F(zones.ZoneListParamsAccount{ID: cloudflare.F(accountID)}),
			})
			return err
		})
		if !strings.Contains(ex.Path, "account.id="+accountID) || !strings.Contains(ex.Path, "name=example.com") {
			t.Errorf("query lost a filter: %s", ex.Path)
		}
	})
	t.Run("tunnel list by name, not deleted", func(t *testing.T) {
		ex := ok(t, func() error {
			_, err := client.ZeroTrust.Tunnels.Cloudflared.List(ctx, zero_trust.TunnelCloudflaredListParams{
				AccountID: cloudflare.F(accountID),
				Name:      cloudflare.F("tunnelgate-default-gw"),
				IsDeleted: cloudflare.F(false),
			})
			return err
		})
		if !strings.Contains(ex.Path, "is_deleted=false") {
			t.Errorf("is_deleted=false not sent: %s", ex.Path)
		}
	})
	t.Run("tunnel get", func(t *testing.T) {
		ok(t, func() error {
			_, err := client.ZeroTrust.Tunnels.Cloudflared.Get(ctx, tunnelID, zero_trust.TunnelCloudflaredGetParams{AccountID: cloudflare.F(accountID)})
			return err
		})
	})
	t.Run("tunnel create, remotely managed", func(t *testing.T) {
		ex := ok(t, func() error {
			_, err := client.ZeroTrust.Tunnels.Cloudflared.New(ctx, zero_trust.TunnelCloudflaredNewParams{
				AccountID: cloudflare.F(accountID),
				Name:      cloudflare.F("tunnelgate-default-gw"),
				ConfigSrc: cloudflare.F(zero_trust.TunnelCloudflaredNewParamsConfigSrcCloudflare),
			})
			return err
		})
		if !strings.Contains(string(ex.RequestBody), `"config_src":"cloudflare"`) {
			t.Errorf("config_src not sent: %s", ex.RequestBody)
		}
	})
	t.Run("tunnel token get", func(t *testing.T) {
		ok(t, func() error {
			_, err := client.ZeroTrust.Tunnels.Cloudflared.Token.Get(ctx, tunnelID, zero_trust.TunnelCloudflaredTokenGetParams{AccountID: cloudflare.F(accountID)})
			return err
		})
	})
	t.Run("tunnel delete", func(t *testing.T) {
		ok(t, func() error {
			_, err := client.ZeroTrust.Tunnels.Cloudflared.Delete(ctx, tunnelID, zero_trust.TunnelCloudflaredDeleteParams{AccountID: cloudflare.F(accountID)})
			return err
		})
	})
	t.Run("tunnel configuration get", func(t *testing.T) {
		ok(t, func() error {
			_, err := client.ZeroTrust.Tunnels.Cloudflared.Configurations.Get(ctx, tunnelID, zero_trust.TunnelCloudflaredConfigurationGetParams{AccountID: cloudflare.F(accountID)})
			return err
		})
	})
	t.Run("tunnel configuration update", func(t *testing.T) {
		ex := ok(t, func() error {
			_, err := client.ZeroTrust.Tunnels.Cloudflared.Configurations.Update(ctx, tunnelID, tunnelConfig(accountID))
			return err
		})
		// What Prism accepted is the document meant: three rules, the
		// last a catch-all with nothing but a service.
		var sent struct {
			Config struct {
				Ingress []map[string]any `json:"ingress"`
			} `json:"config"`
		}
		if err := json.Unmarshal(ex.RequestBody, &sent); err != nil {
			t.Fatal(err)
		}
		rules := sent.Config.Ingress
		if len(rules) != 3 || len(rules[2]) != 1 || rules[2]["service"] != "http_status:404" {
			t.Errorf("ingress sent: %v", rules)
		}
		if or, _ := rules[1]["originRequest"].(map[string]any); or["noTLSVerify"] != false {
			t.Errorf("noTLSVerify false was not sent: %v", rules[1])
		}
	})
	t.Run("dns list by name and type", func(t *testing.T) {
		ok(t, func() error {
			_, err := client.DNS.Records.List(ctx, dns.RecordListParams{
				ZoneID: cloudflare.F(zoneID),
				Name:   cloudflare.F(dns.RecordListParamsName{Exact: cloudflare.F("app.example.com")}),
				Type:   cloudflare.F(dns.RecordListParamsTypeCNAME),
			})
			return err
		})
	})
	t.Run("dns create CNAME, proxied", func(t *testing.T) {
		ok(t, func() error {
			_, err := client.DNS.Records.New(ctx, dns.RecordNewParams{ZoneID: cloudflare.F(zoneID), Body: cname("app.example.com")})
			return err
		})
	})
	t.Run("dns create TXT", func(t *testing.T) {
		ok(t, func() error {
			_, err := client.DNS.Records.New(ctx, dns.RecordNewParams{ZoneID: cloudflare.F(zoneID), Body: ownerTXT("app.example.com")})
			return err
		})
	})
	t.Run("dns update (PUT)", func(t *testing.T) {
		ok(t, func() error {
			_, err := client.DNS.Records.Update(ctx, recordID, dns.RecordUpdateParams{ZoneID: cloudflare.F(zoneID), Body: cname("app.example.com")})
			return err
		})
	})
	t.Run("dns edit (PATCH)", func(t *testing.T) {
		ok(t, func() error {
			_, err := client.DNS.Records.Edit(ctx, recordID, dns.RecordEditParams{ZoneID: cloudflare.F(zoneID), Body: cname("app.example.com")})
			return err
		})
	})
	t.Run("dns delete", func(t *testing.T) {
		ok(t, func() error {
			_, err := client.DNS.Records.Delete(ctx, recordID, dns.RecordDeleteParams{ZoneID: cloudflare.F(zoneID)})
			return err
		})
	})
	t.Run("dns batch", func(t *testing.T) {
		ex := ok(t, func() error {
			_, err := client.DNS.Records.Batch(ctx, dns.RecordBatchParams{
				ZoneID: cloudflare.F(zoneID),
				Posts: cloudflare.F([]dns.RecordBatchParamsPostUnion{
					cname("new.example.com"), ownerTXT("new.example.com"),
				}),
				Patches: cloudflare.F([]dns.BatchPatchUnionParam{
					dns.BatchPatchCNAMERecordParam{ID: cloudflare.F(recordID), CNAMERecordParam: cname("app.example.com")},
				}),
				Puts: cloudflare.F([]dns.BatchPutUnionParam{
					dns.BatchPutTXTRecordParam{ID: cloudflare.F("6a2e3bd2e7bb1f7de2c4b6ef0d26b69e"), TXTRecordParam: ownerTXT("app.example.com")},
				}),
				Deletes: cloudflare.F([]dns.RecordBatchParamsDelete{{ID: cloudflare.F("0f2a51de3c8e4d8a1b7f2e6c9d0a3b45")}}),
			})
			return err
		})
		for _, k := range []string{`"posts"`, `"patches"`, `"puts"`, `"deletes"`} {
			if !strings.Contains(string(ex.RequestBody), k) {
				t.Errorf("batch without %s: %s", k, ex.RequestBody)
			}
		}
	})

	// Validation is on: malformed requests are refused, with the reason.
	t.Run("refused: dns record without type", func(t *testing.T) {
		refused(t, srv, 422, "request.body", "required property 'type'", func() error {
			body := dns.CNAMERecordParam{ // cname without its Type
				Name:    cloudflare.F("app.example.com"),
				Content: cloudflare.F(tunnelDNS),
				Proxied: cloudflare.F(true),
				TTL:     cloudflare.F(dns.TTL1),
			}
			_, err := client.DNS.Records.New(ctx, dns.RecordNewParams{ZoneID: cloudflare.F(zoneID), Body: body})
			return err
		})
	})
	t.Run("refused: duration as a string", func(t *testing.T) {
		refused(t, srv, 422, "request.body.config.originRequest.connectTimeout", "must be integer", func() error {
			_, err := client.ZeroTrust.Tunnels.Cloudflared.Configurations.Update(ctx, tunnelID, tunnelConfig(accountID),
				option.WithJSONSet("config.originRequest.connectTimeout", "30s"))
			return err
		})
	})
	t.Run("refused: no credentials", func(t *testing.T) {
		anonymous := cloudflare.NewClient(option.WithBaseURL(srv.URL()), option.WithMaxRetries(0))
		ex, err := send(t, srv, func() error {
			_, err := anonymous.DNS.Records.List(ctx, dns.RecordListParams{ZoneID: cloudflare.F(zoneID)})
			return err
		})
		if ex.Status != 401 || err == nil {
			t.Fatalf("want 401, got %s (client error %v)", ex, err)
		}
	})
}

// tunnelConfig is a remotely managed tunnel's configuration as tunnelgate
// writes it: a rule per hostname, one to a TLS origin over HTTP/2 (gRPC),
// and the catch-all last.
func tunnelConfig(account string) zero_trust.TunnelCloudflaredConfigurationUpdateParams {
	type rule = zero_trust.TunnelCloudflaredConfigurationUpdateParamsConfigIngress
	return zero_trust.TunnelCloudflaredConfigurationUpdateParams{
		AccountID: cloudflare.F(account),
		Config: cloudflare.F(zero_trust.TunnelCloudflaredConfigurationUpdateParamsConfig{
			Ingress: cloudflare.F([]rule{
				{
					Hostname: cloudflare.F("app.example.com"),
					Service:  cloudflare.F("http://10.0.0.7:8080"),
				},
				{
					Hostname: cloudflare.F("grpc.example.com"),
					Path:     cloudflare.F("^/helloworld\\."),
					Service:  cloudflare.F("unix+tls:/run/tunnelgate/proxy.sock"),
					OriginRequest: cloudflare.F(zero_trust.TunnelCloudflaredConfigurationUpdateParamsConfigIngressOriginRequest{
						HTTP2Origin:      cloudflare.F(true),
						OriginServerName: cloudflare.F("grpc.example.com"),
						CAPool:           cloudflare.F("/etc/tunnelgate/ca.pem"),
						NoTLSVerify:      cloudflare.F(false),
					}),
				},
				{Service: cloudflare.F("http_status:404")},
			}),
			OriginRequest: cloudflare.F(zero_trust.TunnelCloudflaredConfigurationUpdateParamsConfigOriginRequest{
				ConnectTimeout: cloudflare.F(int64(30)),
			}),
		}),
	}
}

// cname is the record routing a hostname to the tunnel. TTL 1 is
// "automatic"; the spec requires a TTL.
func cname(name string) dns.CNAMERecordParam {
	return dns.CNAMERecordParam{
		Name:    cloudflare.F(name),
		Type:    cloudflare.F(dns.CNAMERecordTypeCNAME),
		Content: cloudflare.F(tunnelDNS),
		Proxied: cloudflare.F(true),
		TTL:     cloudflare.F(dns.TTL1),
		Comment: cloudflare.F("managed by tunnelgate"),
	}
}

// ownerTXT is a record claiming a hostname for one tunnelgate instance.
func ownerTXT(name string) dns.TXTRecordParam {
	return dns.TXTRecordParam{
		Name:    cloudflare.F("_tunnelgate." + name),
		Type:    cloudflare.F(dns.TXTRecordTypeTXT),
		Content: cloudflare.F(`"heritage=tunnelgate,owner=default/gw,tunnel=` + tunnelID + `"`),
		TTL:     cloudflare.F(dns.TTL1),
	}
}
