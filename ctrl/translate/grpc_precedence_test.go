package translate_test

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/standalone"
	"github.com/tunnelgate/tunnelgate/test/fixture"
)

// GRPCRoute precedence, through translate and the proxy's router: more
// characters of a matched service first, then of a matched method, then
// more header matches; a full service+method match beats both.
func TestGRPCPrecedence(t *testing.T) {
	objs := fixture.ClassYAML("tg", translate.DefaultControllerName, "") + "---\n" +
		fixture.GatewayYAML("", "gw", "tg", fixture.HTTP80) + `---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: method-only}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{method: {method: Get}, headers: [{name: x-a, value: "1"}, {name: x-b, value: "1"}]}]
    filters: [{type: ExtensionRef, extensionRef: {group: x.example, kind: F, name: m}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: service-only}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{method: {service: pkg.Users}}]
`
	snap, err := standalone.LoadBytes("grpc.yaml", []byte(objs))
	if err != nil {
		t.Fatal(err)
	}
	out := translate.Translate(&translate.Input{Snapshot: *snap, ControllerName: translate.DefaultControllerName, Now: goldenNow})
	p := dataplane.New(dataplane.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Close()
	if err := p.Load(&out.Config); err != nil {
		t.Fatal(err)
	}
	h := p.Handler(0, false)
	// The two rules answer differently: method-only fails closed (its
	// filter cannot be resolved), service-only has no backend.
	const methodOnly, serviceOnly = "cannot be served", "no backend"
	call := func(path string) string {
		req := httptest.NewRequest("POST", path, nil)
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("X-A", "1")
		req.Header.Set("X-B", "1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Header().Get("Grpc-Message") + rec.Body.String()
	}
	// The service-only match wins although the method-only one has more
	// headers and is older: service characters come first.
	if got := call("/pkg.Users/Get"); !strings.Contains(got, serviceOnly) {
		t.Errorf("/pkg.Users/Get: %q, want the service-only rule", got)
	}
	// Another service: only the method-only rule matches.
	if got := call("/pkg.Orders/Get"); !strings.Contains(got, methodOnly) {
		t.Errorf("/pkg.Orders/Get: %q, want the method-only rule", got)
	}
}
