package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// The quickstart must stay valid: make run serves it.
func TestStandaloneCheckQuickstart(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"standalone", "-check", "-f", "../../examples/quickstart"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"Gateway default/demo", "HTTPRoute default/api", "HTTPRoute default/web", "Attached Routes:  2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// -check fails, naming the route and the reason, when a route would not
// serve as written.
func TestStandaloneCheckReportsBrokenRoute(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../examples/quickstart/gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	route := `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: orphan, namespace: default}
spec:
  parentRefs: [{name: demo}]
  hostnames: [www.example.com]
  rules: [{backendRefs: [{name: missing, port: 80}]}]
`
	if err := os.WriteFile(filepath.Join(dir, "all.yaml"), append(src, route...), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"standalone", "-check", "-f", dir}, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1\nstderr:\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "default/orphan") || !strings.Contains(errb.String(), "BackendNotFound") {
		t.Errorf("stderr does not name the route and reason:\n%s", errb.String())
	}
}

func TestStandaloneUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"standalone"}, &out, &errb); code != 2 {
		t.Fatalf("no -f: exit %d, want 2", code)
	}
	errb.Reset()
	if code := run([]string{"standalone", "-check", "-f", "/nonexistent/path"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "/nonexistent/path") {
		t.Fatalf("missing path: exit %d, stderr %q", code, errb.String())
	}
}

// runStandaloneCommand runs the standalone command on args until the
// test ends, and returns the bound addresses, what stops it (its exit
// code) and its stderr.
func runStandaloneCommand(t *testing.T, args ...string) (dataplane.Bound, func() int, *testproc.SyncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan dataplane.Bound, 1)
	exit := make(chan int, 1)
	stderr := &testproc.SyncBuffer{}
	go func() { exit <- standaloneMain(ctx, args, io.Discard, stderr, func(b dataplane.Bound) { ready <- b }) }()
	var b dataplane.Bound
	select {
	case b = <-ready:
	case code := <-exit:
		t.Fatalf("standalone exited %d:\n%s", code, stderr)
	case <-time.After(10 * time.Second):
		t.Fatalf("standalone not listening after 10 s:\n%s", stderr)
	}
	stop := sync.OnceValue(func() int { cancel(); return <-exit })
	t.Cleanup(func() { stop() })
	return b, stop, stderr
}

// standaloneFiles writes a Gateway serving app.example.com over HTTP
// from a backend that echoes the request's headers as JSON, and returns
// the directory.
func standaloneFiles(t *testing.T) string {
	t.Helper()
	port := fixture.HeaderEcho(t)
	dir := t.TempDir()
	files := fixture.ClassYAML("tunnelgate", "tunnelgate.dev/controller", "") + "---\n" +
		fixture.GatewayYAML("", "gw", "tunnelgate", fixture.HTTP80) + fmt.Sprintf(`---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app}
spec:
  parentRefs: [{name: gw}]
  hostnames: [app.example.com]
  rules: [{backendRefs: [{name: echo, port: 80}]}]
---
apiVersion: v1
kind: Service
metadata: {name: echo}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: echo, labels: {kubernetes.io/service-name: echo}}
addressType: IPv4
ports: [{name: http, port: %d}]
endpoints: [{addresses: ["127.0.0.1"]}]
`, port)
	if err := os.WriteFile(filepath.Join(dir, "all.yaml"), []byte(files), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// viaCloudflared sends what cloudflared sends for an https visitor to
// app.example.com over c, and returns the headers the backend saw.
func viaCloudflared(t *testing.T, c *http.Client, url string) http.Header {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Host = "app.example.com"
	req.Header.Set("Cf-Connecting-Ip", "203.0.113.7")
	req.Header.Set("Cf-Visitor", `{"scheme":"https"}`)
	req.Header.Set("X-Forwarded-Proto", "https")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var seen http.Header
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&seen); err != nil {
		t.Fatal(err)
	}
	return seen
}

// -behind-cloudflared reaches the listener, on TCP and on a unix socket
// (as cloudflared's unix: service connects), with the access log on;
// without it, the client's Cf-* headers are dropped.
func TestStandaloneBehindCloudflared(t *testing.T) {
	dir := standaloneFiles(t)
	logFile := filepath.Join(t.TempDir(), "access.log")
	b, stop, stderr := runStandaloneCommand(t, "-f", dir, "-listen", "127.0.0.1:0", "-behind-cloudflared",
		"-access-log", logFile, "-log-format", "json")
	if b.Origin == "" || b.Plain != "" {
		t.Fatalf("bound %+v: want the origin listener alone", b)
	}
	seen := viaCloudflared(t, http.DefaultClient, "http://"+b.Origin+"/hello")
	if seen.Get("Cf-Connecting-Ip") != "203.0.113.7" || seen.Get("Cf-Visitor") != `{"scheme":"https"}` || seen.Get("X-Forwarded-Proto") != "https" {
		t.Errorf("behind cloudflared the backend saw %v", seen)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	text, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(text), &line); err != nil {
		t.Fatalf("access log %q: %v", text, err)
	}
	// The client is the visitor, as cloudflared says.
	if line["route"] != "default/app" || line["path"] != "/hello" || line["status"] != float64(200) || line["client_ip"] != "203.0.113.7" {
		t.Errorf("access log line %v", line)
	}
	first, _, _ := strings.Cut(stderr.String(), "\n")
	if !json.Valid([]byte(first)) {
		t.Errorf("-log-format json: first log line %q is not JSON", first)
	}
	if strings.Contains(stderr.String(), "not a loopback address") {
		t.Errorf("a loopback -listen is warned about:\n%s", stderr)
	}

	sock := filepath.Join(t.TempDir(), "tg.sock")
	runStandaloneCommand(t, "-f", dir, "-listen", "unix:"+sock, "-behind-cloudflared")
	overSocket := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	if seen := viaCloudflared(t, overSocket, "http://app.example.com/"); seen.Get("Cf-Connecting-Ip") != "203.0.113.7" {
		t.Errorf("over the unix socket the backend saw %v", seen)
	}

	b, _, _ = runStandaloneCommand(t, "-f", dir, "-listen", "127.0.0.1:0")
	if seen := viaCloudflared(t, http.DefaultClient, "http://"+b.Plain+"/"); seen.Get("Cf-Connecting-Ip") != "" || seen.Get("X-Forwarded-Proto") != "http" {
		t.Errorf("without -behind-cloudflared the backend saw %v", seen)
	}
}

// -behind-cloudflared on an address others may reach is warned about
// (192.0.2.1, a documentation address, is not this machine's: the warning
// is written, then the listener fails to open).
func TestStandaloneWarnsOfAReachableTrustedListener(t *testing.T) {
	var stderr bytes.Buffer
	code := standaloneMain(context.Background(), []string{"-f", standaloneFiles(t), "-listen", "192.0.2.1:8080", "-behind-cloudflared"}, io.Discard, &stderr, nil)
	if code != 1 || !strings.Contains(stderr.String(), "not a loopback address") {
		t.Errorf("exit %d, want 1 after a warning:\n%s", code, stderr.String())
	}
	for addr, want := range map[string]bool{"127.0.0.1:80": true, "[::1]:80": true, "localhost:80": true, "unix:/run/tg.sock": true,
		":80": false, "0.0.0.0:80": false, "192.0.2.1:80": false, "example.com:80": false} {
		if got := loopbackOnly(addr); got != want {
			t.Errorf("loopbackOnly(%q) = %v", addr, got)
		}
	}
}

// The observability flags are checked as the proxy command checks them.
func TestStandaloneObservabilityFlagErrors(t *testing.T) {
	for _, args := range [][]string{{"-log-level", "loud"}, {"-access-log", "stdout", "-access-log-sample", "2"}} {
		var stderr bytes.Buffer
		args = append([]string{"-f", standaloneFiles(t)}, args...)
		if code := standaloneMain(context.Background(), args, io.Discard, &stderr, nil); code != 2 || !strings.Contains(stderr.String(), args[2]) {
			t.Errorf("%q: exit %d, stderr %q; want 2 naming %s", args, code, stderr.String(), args[2])
		}
	}
}

// Tracing follows the OTEL_* variables, as for the proxy command.
func TestStandaloneTracingFromEnv(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_TRACES_SAMPLER", "sometimes")
	var stderr bytes.Buffer
	if code := standaloneMain(context.Background(), []string{"-f", standaloneFiles(t)}, io.Discard, &stderr, nil); code != 2 || !strings.Contains(stderr.String(), `OTEL_TRACES_SAMPLER "sometimes"`) {
		t.Errorf("exit %d, stderr %q; want 2 naming the sampler", code, stderr.String())
	}
}
