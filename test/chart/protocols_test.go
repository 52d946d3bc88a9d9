package chart

import (
	"bufio"
	"context"
	encbinary "encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	"github.com/tunnelgate/tunnelgate/ctrl/provision"
	"github.com/tunnelgate/tunnelgate/test/connector"
)

// Every protocol a Gateway routes goes through the chart's default path:
// visitor → edge → cloudflared (test/connector) in a proxy Pod → the
// origin the chart's GatewayClassConfig names → a backend Pod. A
// WebSocket handshake and an echo, a server-sent event stream read event
// by event, and a gRPC call (the standard health check, to a grpc-go
// server, through the proxy's TLS origin over HTTP/2) all pass.
//
// With proxy.originTransport=unix (an opt-in), cloudflared reaches the
// proxy over a unix socket: HTTP, server-sent events and gRPC still pass,
// and a WebSocket gets cloudflared's 502 before reaching the proxy
// (cloudflare/cloudflared#560), the limit docs/install.md states.
//
// A Gateway on a data plane of its own, with a tunnel of its own, goes
// through the plane's cloudflared and proxy (provision.OriginPort, loopback
// TCP): every protocol passes there too.
//
// And a TCPRoute on a TCP listener with a public hostname (the Gateway's
// tcp-hostnames annotation): the tunnel
// document sends the hostname to a tcp:// service, the proxy's origin
// port for the route on loopback, and a visitor's stream (what
// `cloudflared access tcp` opens) carries bytes both ways through
// cloudflared and the proxy to the backend Pod, in every mode (through a
// unix origin socket, the origin ports are still loopback TCP).
func TestProtocolsThroughTheTunnel(t *testing.T) {
	for _, c := range []struct {
		name string
		set  []string
		// unix: the opt-in, whose WebSocket gets 502.
		unix bool
		// plane: the Gateway has a data plane and a tunnel of its own.
		plane bool
	}{
		{name: "default"},
		{name: "unix", set: []string{"proxy.originTransport=unix"}, unix: true},
		{name: "plane", plane: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := startRig(t, "proto"+c.name, c.set...)
			r.dumpPodsOnFailure(t, r.ns)
			ctx := t.Context()
			app := r.class + "-app"
			r.dumpPodsOnFailure(t, app)
			params := ""
			if c.plane {
				r.edge.RouteByDNS(r.fake)
				params = `
  infrastructure:
    parametersRef: {group: tunnelgate.dev, kind: GatewayConfig, name: own}`
			}
			r.apply(t, fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: own, namespace: %[1]s}
spec:
  dataPlane: Dedicated
  replicas: 1
  tunnel: {name: %[1]s-tunnel}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: proto, namespace: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: proto}}
  template:
    metadata: {labels: {app: proto}}
    spec:
      containers:
      - name: proto
        image: %[3]s
        imagePullPolicy: Never
        ports: [{containerPort: 8080}, {containerPort: 9090}]
---
apiVersion: v1
kind: Service
metadata: {name: proto, namespace: %[1]s}
spec:
  selector: {app: proto}
  ports:
  - {name: http, port: 80, targetPort: 8080}
  - {name: grpc, port: 9090, targetPort: 9090, appProtocol: kubernetes.io/h2c}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: gw
  namespace: %[1]s
  annotations: {tunnelgate.dev/tcp-hostnames: tcp=stream.example.com}
spec:
  gatewayClassName: %[2]s
  listeners:
  - {name: http, protocol: HTTP, port: 80, hostname: "*.example.com"}
  - {name: tcp, protocol: TCP, port: 5000}%[4]s
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: %[1]s}
spec:
  parentRefs: [{name: gw}]
  hostnames: [web.example.com]
  rules: [{backendRefs: [{name: proto, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: grpc, namespace: %[1]s}
spec:
  parentRefs: [{name: gw}]
  hostnames: [grpc.example.com]
  rules: [{backendRefs: [{name: proto, port: 9090}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: stream, namespace: %[1]s}
spec:
  parentRefs: [{name: gw, sectionName: tcp}]
  rules: [{backendRefs: [{name: proto, port: 80}]}]
`, app, r.class, protocolsImage, params))
			for _, d := range []string{r.controller(), r.proxy()} {
				waitRolledOut(t, r.kube, r.ns, d, 3*time.Minute)
			}
			tunnel, connectors := r.class+"-tunnel", 2
			if c.plane {
				waitRolledOut(t, r.kube, app, provision.Name("gw", r.class), 3*time.Minute)
				tunnel, connectors = app+"-tunnel", 1
			}
			visitor := r.edge.Client(10 * time.Second)
			eventually(t, 90*time.Second, "both hostnames through the edge", func() error {
				if n := len(r.edge.ConnectorsOf(tunnelID(t, r, tunnel))); n != connectors {
					return fmt.Errorf("%d connectors of %s registered, want %d", n, tunnel, connectors)
				}
				if err := visitText(visitor, "http://web.example.com/hello", "protocols /hello"); err != nil {
					return err
				}
				if _, err := grpcHealthCheck(visitor, "http://grpc.example.com"); err != nil {
					return err
				}
				return streamText(ctx, r.edge, "stream.example.com", "/first")
			})
			doc := r.tunnelDocument(t, tunnel)
			t.Logf("the tunnel's ingress document: %s", doc)
			if c.unix != strings.Contains(doc, `"service":"unix:`) {
				t.Errorf("values %v: the ingress document sends HTTP hostnames to a unix: service: %v; want that only with proxy.originTransport=unix", c.set, !c.unix)
			}
			if want := fmt.Sprintf(`"service":"http://localhost:%d"`, provision.OriginPort); c.plane && !strings.Contains(doc, want) {
				t.Errorf("the plane's tunnel document does not send HTTP hostnames to %s", want)
			}
			if !strings.Contains(doc, `{"hostname":"stream.example.com","service":"tcp://localhost:`) {
				t.Errorf("the tunnel document does not send stream.example.com to a tcp:// service on loopback")
			}

			// Every proxy Pod serves each protocol: the edge takes the
			// connectors in turn, so each check runs twice in a row.
			for i := range 2 {
				if err := visitText(visitor, "http://web.example.com/again", "protocols /again"); err != nil {
					t.Errorf("HTTP, request %d: %v", i, err)
				}
			}
			for i := range 2 {
				err := webSocketEcho(ctx, r.edge, "http://web.example.com/ws")
				switch {
				case c.unix && !errors.Is(err, errWebSocket502):
					t.Errorf("WebSocket %d over the unix socket: %v; want cloudflared's 502 (cloudflare/cloudflared#560)", i, err)
				case !c.unix && err != nil:
					t.Errorf("WebSocket %d: %v", i, err)
				}
			}
			for i := range 2 {
				if err := sseTwoEvents(visitor, "http://web.example.com/events"); err != nil {
					t.Errorf("server-sent events, stream %d: %v", i, err)
				}
			}
			for i := range 2 {
				if err := streamText(ctx, r.edge, "stream.example.com", fmt.Sprintf("/stream-%d", i)); err != nil {
					t.Errorf("TCP stream %d: %v", i, err)
				}
			}
			for i := range 2 {
				status, err := grpcHealthCheck(visitor, "http://grpc.example.com")
				if err != nil || status != healthpb.HealthCheckResponse_SERVING {
					t.Errorf("gRPC health check %d: %v, %v; want SERVING", i, status, err)
				}
			}
		})
	}
}

// tunnelDocument is the ingress document the controller wrote for the
// tunnel named name.
func (r *rig) tunnelDocument(t *testing.T, name string) string {
	t.Helper()
	doc, _ := r.fake.TunnelConfig(rigAccount, tunnelID(t, r, name))
	return string(doc)
}

// visitText is a visitor's GET of url, answered 200 with want.
func visitText(c *http.Client, url, want string) error {
	res, err := c.Get(url)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK || string(b) != want {
		return fmt.Errorf("GET %s: %s %q (%v); want 200 %q", url, res.Status, b, err, want)
	}
	return nil
}

// streamText opens a visitor's stream to hostname, which a TCPRoute
// sends to the protocols backend's HTTP port, writes an HTTP/1.1 GET of
// path on it and reads the answer: the request's bytes and the answer's
// cross cloudflared and the proxy as they are.
func streamText(ctx context.Context, e *connector.Edge, hostname, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := e.Stream(ctx, hostname, "")
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := io.WriteString(s, "GET "+path+" HTTP/1.1\r\nHost: "+hostname+"\r\nConnection: close\r\n\r\n"); err != nil {
		return fmt.Errorf("writing the request: %w", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(s), nil)
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if want := "protocols " + path; err != nil || res.StatusCode != http.StatusOK || string(b) != want {
		return fmt.Errorf("GET %s over a stream to %s: %s %q (%v); want 200 %q", path, hostname, res.Status, b, err, want)
	}
	return nil
}

// errWebSocket502 is a WebSocket handshake answered 502.
var errWebSocket502 = errors.New("handshake answered 502")

// webSocketEcho opens a visitor's WebSocket to url and checks that two
// messages come back as sent.
func webSocketEcho(ctx context.Context, e *connector.Edge, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := e.WebSocket(ctx, url, http.Header{"Origin": {"https://web.example.com"}})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		if res.StatusCode == http.StatusBadGateway {
			return fmt.Errorf("%w: %q", errWebSocket502, b)
		}
		return fmt.Errorf("handshake answered %s: %q", res.Status, b)
	}
	conn := res.Body.(io.ReadWriteCloser)
	for _, msg := range []string{"hello through the tunnel", "and back again"} {
		if _, err := conn.Write([]byte(msg)); err != nil {
			return fmt.Errorf("writing %q: %w", msg, err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(conn, got); err != nil || string(got) != msg {
			return fmt.Errorf("echo of %q: %q, %v", msg, got, err)
		}
	}
	return nil
}

// sseTwoEvents reads a server-sent event stream that sends two events and
// then stays open: both must arrive while it is open (within the client's
// timeout), which they cannot if anything on the way holds the answer
// back until it ends.
func sseTwoEvents(c *http.Client, url string) error {
	res, err := c.Get(url)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		return fmt.Errorf("GET %s: %s, Content-Type %q", url, res.Status, res.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(res.Body)
	for i := 1; i <= 2; i++ {
		var event []string
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return fmt.Errorf("event %d: %q, %w", i, event, err)
			}
			if line == "\n" {
				break
			}
			event = append(event, line)
		}
		if want := []string{fmt.Sprintf("data: event %d\n", i)}; !slices.Equal(event, want) {
			return fmt.Errorf("event %d: %q, want %q", i, event, want)
		}
	}
	return nil
}

// grpcHealthCheck calls grpc.health.v1.Health/Check for the server as a
// whole (an empty request) at base, as a gRPC client does through
// Cloudflare, and returns the status it answers.
func grpcHealthCheck(c *http.Client, base string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	req, _ := http.NewRequest("POST", base+"/grpc.health.v1.Health/Check", strings.NewReader("\x00\x00\x00\x00\x00"))
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	res, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, err
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/grpc" {
		return 0, fmt.Errorf("%s: %s, Content-Type %q: %.200q", req.URL, res.Status, res.Header.Get("Content-Type"), body)
	}
	if s := res.Trailer.Get("Grpc-Status"); s != "0" {
		return 0, fmt.Errorf("%s: grpc-status %q (%q) in trailers %v", req.URL, s, res.Trailer.Get("Grpc-Message"), res.Trailer)
	}
	if len(body) < 5 || body[0] != 0 || int(encbinary.BigEndian.Uint32(body[1:5])) != len(body)-5 {
		return 0, fmt.Errorf("%s: not one gRPC message: %q", req.URL, body)
	}
	var reply healthpb.HealthCheckResponse
	if err := proto.Unmarshal(body[5:], &reply); err != nil {
		return 0, err
	}
	return reply.GetStatus(), nil
}
