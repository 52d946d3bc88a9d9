package standalone

import (
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane"
)

// FuzzLoadTranslate feeds bytes to standalone mode as a YAML file: Load,
// then, for what it accepts, Translate, the config's JSON encoding and
// the status printers must never panic; the proxy must accept the config;
// and a warm Cache must not change it. Load's strict decoding and
// defaults are what stand between user YAML and translate, which, in a
// cluster, only sees objects an API server validated.
func FuzzLoadTranslate(f *testing.F) {
	for _, seed := range loadSeeds {
		f.Add([]byte(seed))
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, err := LoadBytes("fuzz.yaml", data)
		if err != nil {
			return
		}
		in := &translate.Input{
			Snapshot:           *snap,
			ControllerName:     translate.DefaultControllerName,
			Now:                now,
			AnyEndpointAddress: true,
		}
		out := translate.Translate(in)
		if _, err := json.Marshal(out.Config); err != nil {
			t.Fatalf("the config does not marshal: %v", err)
		}
		// Whatever the input, the proxy takes what translate emits: a bad
		// object is reported on its status, never by a refused config.
		p := dataplane.New(dataplane.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		defer p.Close()
		if err := p.Load(&out.Config); err != nil {
			t.Fatalf("the proxy refuses the translated config: %v", err)
		}
		Describe(io.Discard, snap, out)
		NotReady(out)

		// The Cache changes nothing: write the statuses back (new objects,
		// as the API server returns them), then a warm translation must
		// equal a cold one.
		for i, r := range in.HTTPRoutes {
			c := r.DeepCopy()
			c.Status.Parents = out.HTTPRoutes[types.NamespacedName{Namespace: r.Namespace, Name: r.Name}]
			in.HTTPRoutes[i] = c
		}
		for i, r := range in.GRPCRoutes {
			c := r.DeepCopy()
			c.Status.Parents = out.GRPCRoutes[types.NamespacedName{Namespace: r.Namespace, Name: r.Name}]
			in.GRPCRoutes[i] = c
		}
		cold, _ := json.Marshal(translate.Translate(in).Config)
		cache := translate.NewCache()
		for range 2 {
			warm, _ := json.Marshal(cache.Translate(in).Config)
			if string(warm) != string(cold) {
				t.Fatalf("with a warm cache the config differs:\ncold %s\nwarm %s", cold, warm)
			}
		}
	})
}

var loadSeeds = []string{
	// The quickstart: a class, a Gateway, a route, its Service and
	// EndpointSlice, written short and left to defaulting.
	`apiVersion: gateway.networking.k8s.io/v1
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
  - {name: http, protocol: HTTP, port: 8080, hostname: "*.example.com"}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app}
spec:
  parentRefs: [{name: gw}]
  hostnames: [app.example.com]
  rules:
  - matches:
    - path: {type: PathPrefix, value: /api}
      headers: [{name: x-version, value: "2"}]
      queryParams: [{type: RegularExpression, name: q, value: "^a+$"}]
    backendRefs: [{name: api, port: 80}]
  - backendRefs: [{name: api, port: 80, weight: 0}, {name: missing, port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: api}
spec:
  ports: [{name: http, port: 80, targetPort: 9000}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: api-1
  labels: {kubernetes.io/service-name: api}
addressType: IPv4
ports: [{name: http, port: 9000}]
endpoints:
- addresses: [127.0.0.1]
- addresses: [127.0.0.2]
  conditions: {ready: false}
`,
	// gRPC across namespaces, allowed by a ReferenceGrant, in a List.
	`apiVersion: v1
kind: List
items:
- apiVersion: gateway.networking.k8s.io/v1
  kind: GatewayClass
  metadata: {name: tunnelgate}
  spec: {controllerName: tunnelgate.dev/controller}
- apiVersion: gateway.networking.k8s.io/v1
  kind: Gateway
  metadata: {name: gw, namespace: infra}
  spec:
    gatewayClassName: tunnelgate
    listeners:
    - name: grpc
      protocol: HTTP
      port: 8443
      allowedRoutes: {namespaces: {from: All}, kinds: [{kind: GRPCRoute}]}
- apiVersion: gateway.networking.k8s.io/v1
  kind: GRPCRoute
  metadata: {name: echo, namespace: apps}
  spec:
    parentRefs: [{name: gw, namespace: infra, sectionName: grpc}]
    hostnames: [grpc.example.com]
    rules:
    - matches:
      - method: {service: echo.Echo, method: Ping}
        headers: [{name: x-env, value: prod}]
      filters:
      - type: RequestHeaderModifier
        requestHeaderModifier: {set: [{name: x-a, value: b}]}
      backendRefs: [{name: echo, namespace: backends, port: 9090}]
- apiVersion: gateway.networking.k8s.io/v1beta1
  kind: ReferenceGrant
  metadata: {name: allow, namespace: backends}
  spec:
    from: [{group: gateway.networking.k8s.io, kind: GRPCRoute, namespace: apps}]
    to: [{group: "", kind: Service}]
- apiVersion: v1
  kind: Service
  metadata: {name: echo, namespace: backends}
  spec:
    ports: [{name: grpc, port: 9090, appProtocol: kubernetes.io/h2c}]
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata:
    name: echo-1
    namespace: backends
    labels: {kubernetes.io/service-name: echo}
  addressType: IPv4
  ports: [{name: grpc, port: 9090}]
  endpoints: [{addresses: [127.0.0.1]}]
`,
	// Filters, a ListenerSet, an ExternalBackend behind a BackendTLSPolicy.
	`apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: tunnelgate}
spec:
  controllerName: tunnelgate.dev/controller
  parametersRef: {group: tunnelgate.dev, kind: GatewayClassConfig, name: cfg}
---
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayClassConfig
metadata: {name: cfg}
spec: {origin: {port: 8080}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: tunnelgate
  allowedListeners: {namespaces: {from: Same}}
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {name: extra}
spec:
  parentRef: {name: gw}
  listeners: [{name: more, protocol: HTTP, port: 81, hostname: more.example.com}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: filters}
spec:
  parentRefs: [{name: gw}, {kind: ListenerSet, name: extra}]
  rules:
  - matches: [{path: {type: Exact, value: /old}}]
    filters:
    - type: RequestRedirect
      requestRedirect: {scheme: https, path: {type: ReplaceFullPath, replaceFullPath: /new}}
  - matches: [{path: {value: /v1}}]
    filters:
    - type: URLRewrite
      urlRewrite: {hostname: ext.example.com, path: {type: ReplacePrefixMatch, replacePrefixMatch: /}}
    - type: CORS
      cors: {allowOrigins: ["https://*.example.com"], allowMethods: [GET]}
    timeouts: {request: 10s}
    backendRefs: [{group: tunnelgate.dev, kind: ExternalBackend, name: ext, port: 443}]
---
apiVersion: tunnelgate.dev/v1alpha1
kind: ExternalBackend
metadata: {name: ext}
spec: {host: ext.example.com, port: 443, protocol: https}
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: ext-tls}
spec:
  targetRefs: [{group: tunnelgate.dev, kind: ExternalBackend, name: ext}]
  validation:
    hostname: ext.example.com
    caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ca}
data: {ca.crt: "-----BEGIN CERTIFICATE-----\nnot really\n-----END CERTIFICATE-----\n"}
`,
	// A TLS listener with its Secret, and a route with no rules at all.
	`apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: tunnelgate}
spec: {controllerName: tunnelgate.dev/controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: tls}
spec:
  gatewayClassName: tunnelgate
  listeners:
  - name: https
    protocol: HTTPS
    port: 443
    tls: {certificateRefs: [{name: cert}]}
---
apiVersion: v1
kind: Secret
metadata: {name: cert}
type: kubernetes.io/tls
stringData: {tls.crt: x, tls.key: "y"}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: empty}
spec:
  parentRefs: [{name: tls}]
`,
	// GatewayConfigs: a Gateway on the shared plane through one, one
	// refused for a Dedicated plane, one naming a GatewayConfig that is
	// not there, and a mode the CRD would refuse.
	`apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: tunnelgate}
spec: {controllerName: tunnelgate.dev/controller}
---
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: shared}
spec: {dataPlane: Shared}
---
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: own}
spec:
  dataPlane: Dedicated
  autoscaling: {minReplicas: 2, maxReplicas: 5}
  proxy: {resources: {requests: {cpu: 100m}}}
  tunnel: {name: own, deleteWithGateway: true}
  proxyArgs: [-log-level=debug]
---
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: odd}
spec: {dataPlane: PerGateway}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: a}
spec:
  gatewayClassName: tunnelgate
  listeners: [{name: http, protocol: HTTP, port: 80, hostname: a.example.com}]
  infrastructure: {parametersRef: {group: tunnelgate.dev, kind: GatewayConfig, name: shared}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: b}
spec:
  gatewayClassName: tunnelgate
  listeners: [{name: http, protocol: HTTP, port: 80, hostname: b.example.com}]
  infrastructure: {parametersRef: {group: tunnelgate.dev, kind: GatewayConfig, name: own}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: c}
spec:
  gatewayClassName: tunnelgate
  listeners: [{name: http, protocol: HTTP, port: 80, hostname: c.example.com}]
  infrastructure: {parametersRef: {group: tunnelgate.dev, kind: GatewayConfig, name: missing}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: d}
spec:
  gatewayClassName: tunnelgate
  listeners: [{name: http, protocol: HTTP, port: 80, hostname: d.example.com}]
  infrastructure: {parametersRef: {group: tunnelgate.dev, kind: GatewayConfig, name: odd}}
`,
	// Broken: an unknown field, a duplicate and an unknown kind.
	`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: typo}
spec:
  parentRefs: [{name: gw, sectonName: http}]
---
apiVersion: v1
kind: Service
metadata: {name: a}
---
apiVersion: v1
kind: Service
metadata: {name: a}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
`,
	// DNSPolicies on a listener, a route and nothing there, one with a
	// mode the CRD would refuse; a GatewayClassConfig whose tunnel
	// rotates on a schedule too short.
	`apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: tunnelgate}
spec:
  controllerName: tunnelgate.dev/controller
  parametersRef: {group: tunnelgate.dev, kind: GatewayClassConfig, name: cfg}
---
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayClassConfig
metadata: {name: cfg}
spec:
  tunnel: {name: t, credentialRotation: {interval: 10m}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: tunnelgate
  listeners: [{name: http, protocol: HTTP, port: 80, hostname: "*.example.com"}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  parentRefs: [{name: gw}]
  hostnames: [a.example.com]
---
apiVersion: tunnelgate.dev/v1alpha1
kind: DNSPolicy
metadata: {name: listener}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw, sectionName: http}]
  records: Unmanaged
---
apiVersion: tunnelgate.dev/v1alpha1
kind: DNSPolicy
metadata: {name: route}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r}, {group: gateway.networking.k8s.io, kind: HTTPRoute, name: absent}]
---
apiVersion: tunnelgate.dev/v1alpha1
kind: DNSPolicy
metadata: {name: odd}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r}]
  records: Sometimes
`,
}
