package standalone

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// Standalone mode serves with the proxy's request path: repeated slashes
// merged and dot segments removed before routing, encoded slashes
// refused unless the Gateway's GatewayConfig (or -encoded-slashes) says
// otherwise; the backend gets the path the router matched.
func TestServeRequestPath(t *testing.T) {
	backends := serveBackends(map[string]int{"one": echoBackend(t, "one"), "two": echoBackend(t, "two")})
	files := serveGateway + backends + "---\n" + serveRoutes
	withConfig := `
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: decode}
spec: {encodedSlashes: Decode}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: tunnelgate}
spec: {controllerName: tunnelgate.dev/controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: tunnelgate
  listeners:
  - {name: http, protocol: HTTP, port: 80, hostname: "*.example.com"}
  - {name: other, protocol: HTTP, port: 8080, hostname: "other.test"}
  infrastructure:
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
				status, body := rawGet(t, addr, "app.example.com", target)
				if status != w.status || w.status == 200 && body != w.body {
					t.Errorf("%s: %d %q, want %d %q", target, status, body, w.status, w.body)
				}
			}
		})
	}
}

// rawGet sends GET target to addr as written, with host.
func rawGet(t *testing.T, addr, host, target string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
