// This file implements the test of stream routes served in standalone mode.

package standalone

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/realbackend"
	"github.com/tunnelgate/tunnelgate/test/testpki"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// Standalone mode serves a Gateway's TCP and TLS listeners on their own
// ports, on -listen's host: the real OpenSSH client logs in to a real
// sshd through a TCPRoute, and a TLS client completes its handshake
// with OpenSSL's s_server through a TLSRoute chosen by server name,
// while HTTP stays on -listen.
func TestServeStreamRoutes(t *testing.T) {
	sshd := realbackend.StartSSHD(t)
	ca := testpki.NewCA(t, "standalone passthrough CA")
	cert, key := ca.IssueServer(t, "secure.example.com")
	tlsd := realbackend.StartTLSServer(t, cert, key)
	sshPort, tlsPort := freeTestPort(t), freeTestPort(t)
	port := func(addr string) int {
		_, p, _ := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(p)
		return n
	}
	doc := fixture.ClassYAML("tunnelgate", translate.DefaultControllerName, "") + "---\n" +
		fixture.GatewayYAML("", "gw", "tunnelgate",
			fmt.Sprintf(`{name: ssh, protocol: TCP, port: %d}`, sshPort),
			fmt.Sprintf(`{name: tls, protocol: TLS, port: %d, hostname: "*.example.com", tls: {mode: Passthrough}}`, tlsPort)) +
		serveBackends(map[string]int{"sshd": port(sshd.Addr), "tlsd": port(tlsd)}) + `---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: ssh}
spec:
  parentRefs: [{name: gw, sectionName: ssh}]
  rules: [{backendRefs: [{name: sshd, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: secure}
spec:
  parentRefs: [{name: gw, sectionName: tls}]
  hostnames: [secure.example.com]
  rules: [{backendRefs: [{name: tlsd, port: 80}]}]
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "streams.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	startServe(t, Options{Paths: []string{dir}, Listen: "127.0.0.1:0", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, 10*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := sshd.Command(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(sshPort)), "echo", "hello").CombinedOutput()
	if err != nil || string(out) != "hello\n" {
		t.Errorf("ssh through the TCP listener: %q, %v", out, err)
	}

	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: &tls.Config{ServerName: "secure.example.com", RootCAs: roots}}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(tlsPort)))
	if err != nil {
		t.Fatalf("TLS through the TLS listener: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET / HTTP/1.0\r\n\r\n")
	if body, _ := io.ReadAll(c); !strings.HasPrefix(string(body), "HTTP/1.0 200 ok") {
		t.Errorf("TLS through the TLS listener: s_server answered %.100q", body)
	}
}

// freeTestPort is a loopback port free now.
func freeTestPort(t *testing.T) int {
	t.Helper()
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}
