// This file implements the test of stream routes from their objects
// through the tunnel's path: an SSH session behind Access, and TLS
// passed through.

package connector

import (
	"context"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
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
	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/realbackend"
	"github.com/tunnelgate/tunnelgate/test/testaccess"
	"github.com/tunnelgate/tunnelgate/test/testpki"
)

// chainObjects are a tunnel's GatewayClass, a Gateway whose TCP listener
// the tcp-hostnames annotation publishes, a TCPRoute to an sshd Service
// whose one endpoint is at sshdAddr, an AccessPolicy on the route, and a
// TLSRoute for secure.example.com on the Gateway's TLS listener, passed
// through to a TLS server at tlsAddr.
func chainObjects(sshdAddr, tlsAddr string) string {
	return fixture.TunnelClassYAML("tunneled", translate.DefaultControllerName) + fmt.Sprintf(`---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: edge
  annotations: {tunnelgate.dev/tcp-hostnames: ssh=ssh.example.com}
spec:
  gatewayClassName: tunneled
  listeners:
  - {name: ssh, protocol: TCP, port: 2222}
  - {name: tls, protocol: TLS, port: 443, hostname: "*.example.com", tls: {mode: Passthrough}}
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
%s
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: secure}
spec:
  parentRefs: [{name: edge, sectionName: tls}]
  hostnames: [secure.example.com]
  rules: [{backendRefs: [{name: tlsd, port: 443}]}]
---
apiVersion: v1
kind: Service
metadata: {name: tlsd}
spec:
  ports: [{name: https, port: 443}]
---
%s
---
apiVersion: tunnelgate.dev/v1alpha1
kind: AccessPolicy
metadata: {name: ssh-users}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: TCPRoute, name: ssh}]
  teamDomain: acme.cloudflareaccess.com
  audiences: [aud-ssh]
`, endpointSlice("sshd", "ssh", sshdAddr), endpointSlice("tlsd", "https", tlsAddr))
}

// endpointSlice is the YAML of an EndpointSlice of Service svc whose one
// endpoint is at addr for the port named port.
func endpointSlice(svc, port, addr string) string {
	host, num, _ := net.SplitHostPort(addr)
	return fmt.Sprintf(`apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %[1]s-1
  labels: {kubernetes.io/service-name: %[1]s}
addressType: IPv4
ports: [{name: %[2]s, port: %[3]s}]
endpoints:
- addresses: [%[4]q]`, svc, port, num, host)
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
// the client's session fails. And a TLSRoute beside it: a TLS client's
// handshake crosses the tunnel and the proxy to OpenSSL's s_server,
// which completes it with its own certificate.
func TestStreamsThroughTheTunnel(t *testing.T) {
	sshd := realbackend.StartSSHD(t)
	ca := testpki.NewCA(t, "passthrough CA")
	cert, key := ca.IssueServer(t, "secure.example.com")
	snap, err := standalone.LoadBytes("chain.yaml", []byte(chainObjects(sshd.Addr, realbackend.StartTLSServer(t, cert, key))))
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
	ports := map[string]int{}
	for _, r := range shared.Routes {
		ports[r.Name] = r.OriginPort
	}
	for _, name := range []string{"ssh", "secure"} {
		if ports[name] == 0 {
			t.Fatalf("the shared proxies' config gives route %s no origin port: %+v", name, shared.Routes)
		}
		waitFor(t, "route "+name+"'s origin port open", func() bool {
			c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[name])))
			if err == nil {
				c.Close()
			}
			return err == nil
		})
	}
	originPort := ports["ssh"]

	// The tunnel's document, as the controller PUTs it, run by the
	// stand-in for cloudflared, which reads team acme's keys here.
	doc, err := json.Marshal(cloudflare.BuildDocument(out.Hostnames, nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`{"hostname":"ssh.example.com","service":"ssh://localhost:%d","originRequest":{"access":{"required":true,"teamName":"acme","audTag":["aud-ssh"]}}}`, originPort); !strings.Contains(string(doc), want) {
		t.Fatalf("ingress document %s; want the rule %s", doc, want)
	}
	team := testaccess.Key(t, "acme")
	certs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(testaccess.Certs(t, map[string]*rsa.PublicKey{"k1": &team.PublicKey}))
	}))
	defer certs.Close()
	e := serveStreams(t, string(doc), certs.URL)
	token := func(aud string) string {
		now := time.Now()
		return testaccess.Sign(t, jose.RS256, team, "k1", testaccess.JSON(t, map[string]any{
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
		out, err := sshd.Command(sctx, visitorPort(t, e, "ssh.example.com", tok), "echo", "hello").CombinedOutput()
		cancel()
		if err == nil {
			t.Errorf("%s: ssh logged in (%q); want the session refused", name, out)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got, err := sshd.Command(sctx, visitorPort(t, e, "ssh.example.com", token("aud-ssh")), "echo", "hello").CombinedOutput()
	if err != nil || string(got) != "hello\n" {
		t.Fatalf("ssh with a valid token: %q, %v; want hello", got, err)
	}

	// TLS passthrough: the server's certificate verifies for the
	// hostname, so the handshake is s_server's, through every hop.
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: &tls.Config{ServerName: "secure.example.com", RootCAs: roots}}
	c, err := d.DialContext(sctx, "tcp", visitorPort(t, e, "secure.example.com", ""))
	if err != nil {
		t.Fatalf("TLS through the tunnel: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET / HTTP/1.0\r\n\r\n")
	if body, _ := io.ReadAll(c); !strings.HasPrefix(string(body), "HTTP/1.0 200 ok") {
		t.Errorf("TLS through the tunnel: s_server answered %.100q", body)
	}
}

// visitorPort does what `cloudflared access tcp --hostname H --url
// 127.0.0.1:PORT` does on a visitor's machine: it listens on loopback
// and carries each connection as a stream to hostname with token, until
// the test ends. It returns the address.
func visitorPort(t *testing.T, e *Edge, hostname, token string) string {
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
				s, err := e.Stream(ctx, hostname, token)
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
