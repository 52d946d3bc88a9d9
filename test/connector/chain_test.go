// This file implements the test of a TCPRoute behind Access from its
// objects to an SSH session through the tunnel's path.

package connector

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/standalone"
	"github.com/tunnelgate/tunnelgate/test/realbackend"
	"github.com/tunnelgate/tunnelgate/test/testaccess"
)

// chainObjects are a tunnel's GatewayClass, a Gateway whose TCP listener
// the tcp-hostnames annotation publishes, a TCPRoute to an sshd Service
// whose one endpoint is at sshdAddr, and an AccessPolicy on the route.
func chainObjects(sshdAddr string) string {
	host, port, _ := net.SplitHostPort(sshdAddr)
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: cloudflare}
type: Opaque
data: {token: dG9rZW4=}
---
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayClassConfig
metadata: {name: tunneled}
spec:
  credentialsRef: {namespace: default, name: cloudflare}
  tunnel: {name: tunneled}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: tunneled}
spec:
  controllerName: tunnelgate.dev/controller
  parametersRef: {group: tunnelgate.dev, kind: GatewayClassConfig, name: tunneled}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: edge
  annotations: {tunnelgate.dev/tcp-hostnames: ssh=ssh.example.com}
spec:
  gatewayClassName: tunneled
  listeners: [{name: ssh, protocol: TCP, port: 2222}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: ssh}
spec:
  parentRefs: [{name: edge, sectionName: ssh}]
  rules: [{backendRefs: [{name: sshd, port: 22}]}]
---
apiVersion: v1
kind: Service
metadata: {name: sshd}
spec:
  ports: [{name: ssh, port: 22, appProtocol: ssh}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: sshd-1
  labels: {kubernetes.io/service-name: sshd}
addressType: IPv4
ports: [{name: ssh, port: %s}]
endpoints:
- addresses: [%q]
---
apiVersion: tunnelgate.dev/v1alpha1
kind: AccessPolicy
metadata: {name: ssh-users}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: TCPRoute, name: ssh}]
  teamDomain: acme.cloudflareaccess.com
  audiences: [aud-ssh]
`, port, host)
}

// A TCPRoute behind an AccessPolicy, from its objects to an SSH session
// along the tunnel's path, with every part tunnelgate runs: translate
// makes the proxy's config and the tunnel's hostnames; the proxy serves
// the config, the route's origin port among it; ctrl/cloudflare writes
// the ingress document the stand-in for cloudflared runs, whose rule
// carries cloudflared's Access check; and the visitor's side does what
// `cloudflared access ssh --url` does (a local port, each connection to
// it one stream with the visitor's token), under the real OpenSSH client
// logging in to a real sshd. Without a token, or with a token for another
// application, the stream is refused before the proxy is reached, and
// the client's session fails.
func TestSSHThroughTheTunnelBehindAccess(t *testing.T) {
	sshd := realbackend.StartSSHD(t)
	snap, err := standalone.LoadBytes("chain.yaml", []byte(chainObjects(sshd.Addr)))
	if err != nil {
		t.Fatal(err)
	}
	out := translate.Translate(&translate.Input{Snapshot: *snap, ControllerName: translate.DefaultControllerName, Now: time.Now(),
		Tunnels: map[string]*translate.TunnelState{"tunneled": {ID: "tunnel-id"}}, AnyEndpointAddress: true})
	if st := out.TCPRoutes[types.NamespacedName{Namespace: "default", Name: "ssh"}]; len(st) != 1 || !meta.IsStatusConditionTrue(st[0].Conditions, "Accepted") {
		t.Fatalf("TCPRoute ssh: %+v; want Accepted", st)
	}

	// The proxy, as a shared proxy's replica runs it.
	shared, _ := out.ProxyConfigs()
	p := dataplane.New(dataplane.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := p.Load(shared); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, dataplane.ServeOptions{Origin: "127.0.0.1:0", CertDir: t.TempDir()}) }()
	t.Cleanup(func() { stop(); <-served; p.Close() })
	var originPort int
	for _, r := range shared.Routes {
		if r.Name == "ssh" {
			originPort = r.OriginPort
		}
	}
	if originPort == 0 {
		t.Fatalf("the shared proxies' config gives TCPRoute ssh no origin port: %+v", shared.Routes)
	}
	waitFor(t, "the route's origin port open", func() bool {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(originPort)))
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	// The tunnel's document, as the controller PUTs it, run by the
	// stand-in for cloudflared, which reads team acme's keys here.
	doc, err := json.Marshal(cloudflare.BuildDocument(out.Hostnames, nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`{"hostname":"ssh.example.com","service":"ssh://localhost:%d","originRequest":{"access":{"required":true,"teamName":"acme","audTag":["aud-ssh"]}}}`, originPort); !strings.Contains(string(doc), want) {
		t.Fatalf("ingress document %s; want the rule %s", doc, want)
	}
	key := testaccess.Key(t, "acme")
	certs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(testaccess.Certs(t, map[string]*rsa.PublicKey{"k1": &key.PublicKey}))
	}))
	defer certs.Close()
	e := serveStreams(t, string(doc), certs.URL)
	token := func(aud string) string {
		now := time.Now()
		return testaccess.Sign(t, jose.RS256, key, "k1", testaccess.JSON(t, map[string]any{
			"aud": []string{aud}, "iss": "https://acme.cloudflareaccess.com", "sub": "u1", "email": "ops@example.com",
			"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(), "type": "app",
		}), nil)
	}

	for name, tok := range map[string]string{"no token": "", "another application's": token("aud-other")} {
		_, err := e.Stream(ctx, "ssh.example.com", tok)
		if r, ok := errors.AsType[*StreamRefused](err); !ok || r.Status != http.StatusForbidden {
			t.Errorf("%s: %v; want refused with 403", name, err)
		}
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := sshd.Command(sctx, visitorPort(t, e, tok), "echo", "hello").CombinedOutput()
		cancel()
		if err == nil {
			t.Errorf("%s: ssh logged in (%q); want the session refused", name, out)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got, err := sshd.Command(sctx, visitorPort(t, e, token("aud-ssh")), "echo", "hello").CombinedOutput()
	if err != nil || string(got) != "hello\n" {
		t.Fatalf("ssh with a valid token: %q, %v; want hello", got, err)
	}
}

// visitorPort does what `cloudflared access ssh --hostname
// ssh.example.com --url 127.0.0.1:PORT` does on a visitor's machine: it
// listens on loopback and carries each connection as a stream to the
// hostname with token, until the test ends. It returns the address.
func visitorPort(t *testing.T, e *Edge, token string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				s, err := e.Stream(ctx, "ssh.example.com", token)
				if err != nil {
					return // refused: the client sees its connection closed
				}
				defer s.Close()
				go func() { _, _ = io.Copy(s, c); s.Close() }()
				_, _ = io.Copy(c, s)
			}()
		}
	}()
	return ln.Addr().String()
}
