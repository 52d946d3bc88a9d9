package proxycmd

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// The certificate `tunnelgate proxy -cert-dir` (and tunnelgate-proxy) makes is one cloudflared
// accepts: it is valid for the originServerName the controller writes
// into the ingress document of a gRPC hostname, and chains to the CA the
// proxy writes for the document's caPool. Checked as cloudflared checks
// it, by an HTTP/2 request over TLS to the listener.
func TestGeneratedOriginCertMatchesTheIngressDocument(t *testing.T) {
	doc := cloudflare.BuildDocument([]translate.Hostname{{Name: "grpc.example.com", GRPC: true}}, nil)
	var serverName string
	for _, r := range doc.Ingress {
		if r.Hostname == "grpc.example.com" && r.OriginRequest != nil {
			serverName = r.OriginRequest.OriginServerName
		}
	}
	if serverName == "" {
		t.Fatalf("no originServerName for the gRPC hostname in %+v", doc)
	}

	dir := filepath.Join(t.TempDir(), "certs")
	b, stop, stderr := runProxyCommand(t, "-config", "../../../examples/proxy/config.json",
		"-listen-tls", "127.0.0.1:0", "-cert-dir", dir)
	defer stop()
	caPEM, err := os.ReadFile(b.OriginCA)
	if err != nil {
		t.Fatalf("the CA for caPool: %v\n%s", err, stderr)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("the CA file holds no certificate")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		ForceAttemptHTTP2: true,
		TLSClientConfig:   &tls.Config{ServerName: serverName, RootCAs: roots},
	}}
	defer client.CloseIdleConnections()
	res, err := client.Get("https://" + b.OriginTLS + "/")
	if err != nil {
		t.Fatalf("TLS to the origin as %q: %v\n%s", serverName, err, stderr)
	}
	res.Body.Close()
	if res.ProtoMajor != 2 {
		t.Errorf("the TLS origin answered over %s; cloudflared's http2Origin needs HTTP/2", res.Proto)
	}
}
