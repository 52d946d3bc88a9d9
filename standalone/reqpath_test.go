package standalone

import (
	"testing"

	"github.com/tunnelgate/tunnelgate/test/testnet"
)

// Standalone mode serves with the proxy's request path: repeated slashes
// merged and dot segments removed before routing, encoded slashes
// refused unless the Gateway's GatewayConfig (or -encoded-slashes) says
// otherwise; the backend gets the path the router matched.
func TestServeRequestPath(t *testing.T) {
	backends := serveBackends(map[string]int{"one": echoBackend(t, "one"), "two": echoBackend(t, "two")})
	files := serveGateway + backends + "---\n" + serveRoutes
	// The same Gateway, given a GatewayConfig that decodes them.
	withConfig := `
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: decode}
spec: {encodedSlashes: Decode}
---` + serveGateway + `  infrastructure:
    parametersRef: {group: tunnelgate.dev, kind: GatewayConfig, name: decode}
` + backends + "---\n" + serveRoutes

	type want struct {
		status int
		body   string // for a 200: what the backend answered
	}
	ok := func(body string) want { return want{200, body} }
	refused := want{status: 400}
	for _, c := range []struct {
		name, files, flag string
		want              map[string]want
	}{
		{"default", files, "", map[string]want{
			"//v2/a":      ok("two /v2/a added="),
			"/x/..//v2/a": ok("two /v2/a added="),
			"/v2%2Fa":     refused,
			"/v2/a%00":    refused,
		}},
		{"GatewayConfig Decode", withConfig, "", map[string]want{
			"/v2%2Fa":  ok("two /v2/a added="),
			"/%2Fv2/a": ok("two /v2/a added="),
		}},
		{"-encoded-slashes keep", files, "Keep", map[string]want{
			"/v2%2Fa": ok("one /v2/a added=yes"), // one element "v2%2Fa": the "/" rule
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := serveFiles(t, c.files, Options{EncodedSlashes: c.flag})
			for target, w := range c.want {
				status, body := testnet.RawGET(t, addr, "app.example.com", target)
				if status != w.status || w.status == 200 && body != w.body {
					t.Errorf("%s: %d %q, want %d %q", target, status, body, w.status, w.body)
				}
			}
		})
	}
}
