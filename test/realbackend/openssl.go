// This file implements a TLS server on loopback: OpenSSL's s_server.

package realbackend

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// StartTLSServer runs the machine's `openssl s_server` on a loopback
// port with the PEM certificate chain and key given, answering each
// connection's HTTP request with its -www status page ("HTTP/1.0 200
// ok" and the session's details), until the test ends; it returns the
// address. The TLS is OpenSSL's own, end to end: for what a TLS
// passthrough route must leave untouched. It fails the test without an
// openssl binary (Debian: apt-get install openssl).
func StartTLSServer(t testing.TB, certPEM, keyPEM []byte) string {
	t.Helper()
	bin, err := exec.LookPath("openssl")
	if err != nil {
		t.Fatalf("realbackend: the TLS server is the machine's openssl s_server (Debian: apt-get install openssl): %v", err)
	}
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "s_server", "-accept", "127.0.0.1:"+strconv.Itoa(port), "-cert", cert, "-key", key, "-www", "-quiet")
	cmd.Stdin = strings.NewReader("")
	cmd.SysProcAttr = testproc.SysProcAttr()
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(StartTimeout); time.Now().Before(deadline); time.Sleep(25 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
	}
	t.Fatalf("realbackend: openssl s_server did not open %s within %s", addr, StartTimeout)
	return ""
}
