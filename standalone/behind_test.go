package standalone

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/testpki"
)

// behindCloudflaredFiles is a Gateway for app.example.com with an HTTP
// listener whose route redirects to HTTPS, and an HTTPS listener whose
// route goes to a backend on port: the usual HTTP-to-HTTPS setup.
func behindCloudflaredFiles(t *testing.T, port int) string {
	t.Helper()
	cert, key := testpki.NewCA(t, "test CA").IssueServer(t, "app.example.com")
	b64 := base64.StdEncoding.EncodeToString
	return fixture.ClassYAML("tunnelgate", translate.DefaultControllerName, "") + "---\n" +
		fixture.GatewayYAML("", "gw", "tunnelgate",
			"{name: http, protocol: HTTP, port: 80, hostname: app.example.com}",
			"{name: https, protocol: HTTPS, port: 443, hostname: app.example.com, tls: {certificateRefs: [{name: app-cert}]}}") +
		fmt.Sprintf(`---
apiVersion: v1
kind: Secret
metadata: {name: app-cert}
type: kubernetes.io/tls
data: {tls.crt: %s, tls.key: %s}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: to-https}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  rules:
  - filters:
    - type: RequestRedirect
      requestRedirect: {scheme: https, statusCode: 301}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app}
spec:
  parentRefs: [{name: gw, sectionName: https}]
  rules:
  - backendRefs: [{name: echo, port: 80}]
%s`, b64(cert), b64(key), serveBackends(map[string]int{"echo": port}))
}

// serveFiles runs Serve on files until the test ends and returns the
// address of Listen.
func serveFiles(t *testing.T, files string, o Options) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "all.yaml"), []byte(files), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Paths, o.Listen = []string{dir}, "127.0.0.1:0"
	o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	b := startServe(t, o, 10*time.Second)
	if o.BehindCloudflared {
		if b.Plain != "" {
			t.Errorf("behind cloudflared, a plain listener is open too: %+v", b)
		}
		return b.Origin
	}
	if b.Origin != "" {
		t.Errorf("a trusted origin listener is open without BehindCloudflared: %+v", b)
	}
	return b.Plain
}

// startServe runs Serve with o (whose Ready it sets) until the test ends,
// and returns what it bound once it listens, within wait. When the test
// ends it stops Serve, which must return, without an error, within wait.
func startServe(tb testing.TB, o Options, wait time.Duration) dataplane.Bound {
	tb.Helper()
	bound := make(chan dataplane.Bound, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	o.Ready = func(b dataplane.Bound) { bound <- b }
	go func() { done <- Serve(ctx, o) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("Serve: %v", err)
			}
		case <-time.After(wait):
			tb.Errorf("Serve did not return %v after its context ended", wait)
		}
	})
	select {
	case b := <-bound:
		return b
	case err := <-done:
		tb.Fatalf("Serve ended: %v", err)
	case <-time.After(wait):
		tb.Fatalf("not listening after %v", wait)
	}
	return dataplane.Bound{}
}

// cloudflaredRequest sends what cloudflared sends an origin for a visitor
// who used scheme, and returns the status, the Location and the headers
// the backend saw (nil unless it answered).
func cloudflaredRequest(t *testing.T, addr, scheme string) (status int, location string, seen http.Header) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/page?q=1", nil)
	req.Host = "app.example.com"
	req.Header.Set("Cf-Connecting-Ip", "203.0.113.7")
	req.Header.Set("Cf-Ray", "8f00000000000000-AMS")
	req.Header.Set("Cf-Visitor", `{"scheme":"`+scheme+`"}`)
	req.Header.Set("X-Forwarded-For", "203.0.113.7")
	req.Header.Set("X-Forwarded-Proto", scheme)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == 200 {
		if err := json.NewDecoder(resp.Body).Decode(&seen); err != nil {
			t.Fatalf("the backend's answer: %v", err)
		}
	}
	return resp.StatusCode, resp.Header.Get("Location"), seen
}

// Behind cloudflared, standalone follows the origin listener's rules:
// the Cf-* headers reach the backend, X-Forwarded-Proto is the visitor's
// scheme, and the client address is Cf-Connecting-Ip with cloudflared's
// address appended to X-Forwarded-For. A visitor who came over HTTPS gets
// the HTTPS listener's route, not the HTTP listener's redirect again (the
// loop); one who came over HTTP is redirected.
func TestServeBehindCloudflared(t *testing.T) {
	addr := serveFiles(t, behindCloudflaredFiles(t, fixture.HeaderEcho(t)), Options{BehindCloudflared: true})

	status, loc, seen := cloudflaredRequest(t, addr, "https")
	if status != 200 {
		t.Fatalf("an https visitor: %d (Location %q), want 200 from the backend", status, loc)
	}
	for name, want := range map[string]string{
		"Cf-Connecting-Ip":  "203.0.113.7",
		"Cf-Ray":            "8f00000000000000-AMS",
		"Cf-Visitor":        `{"scheme":"https"}`,
		"X-Forwarded-Proto": "https",
		"X-Forwarded-For":   "203.0.113.7, 127.0.0.1",
	} {
		if got := seen.Get(name); got != want {
			t.Errorf("the backend saw %s %q, want %q", name, got, want)
		}
	}

	if status, loc, _ := cloudflaredRequest(t, addr, "http"); status != 301 || loc != "https://app.example.com/page?q=1" {
		t.Errorf("an http visitor: %d Location %q, want 301 to https://app.example.com/page?q=1", status, loc)
	}
}

// Without BehindCloudflared the listener trusts nobody: what a client
// claims in the Cf-* and forwarding headers is dropped, the scheme is the
// listener's own (http), so the same request gets the HTTP listener's
// redirect.
func TestServeUntrustedByDefault(t *testing.T) {
	addr := serveFiles(t, behindCloudflaredFiles(t, fixture.HeaderEcho(t)), Options{})

	if status, loc, _ := cloudflaredRequest(t, addr, "https"); status != 301 || loc != "https://app.example.com/page?q=1" {
		t.Errorf("a request claiming https: %d Location %q, want the HTTP listener's 301", status, loc)
	}

	// An HTTP-only hostname shows what reaches a backend.
	files := serveGateway + serveBackends(map[string]int{"echo": fixture.HeaderEcho(t)}) + `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [app.example.com]
  rules: [{backendRefs: [{name: echo, port: 80}]}]
`
	addr = serveFiles(t, files, Options{})
	status, _, seen := cloudflaredRequest(t, addr, "https")
	if status != 200 {
		t.Fatalf("status %d, want 200", status)
	}
	for _, name := range []string{"Cf-Connecting-Ip", "Cf-Ray", "Cf-Visitor"} {
		if v, ok := seen[name]; ok {
			t.Errorf("the backend saw %s %q from an untrusted client", name, v)
		}
	}
	if got := seen.Get("X-Forwarded-Proto"); got != "http" {
		t.Errorf("X-Forwarded-Proto %q, want the listener's http", got)
	}
	if got := seen.Get("X-Forwarded-For"); got != "127.0.0.1" {
		t.Errorf("X-Forwarded-For %q, want the peer alone", got)
	}
}
