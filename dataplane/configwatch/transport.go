// This file implements the token and TLS read from files.

package configwatch

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// readToken reads the bearer token file. Mounted Secrets are replaced
// whole by the kubelet, so reading it per request picks up a rotation;
// a trailing newline, which editors and echo add, is not part of it.
func readToken(file string) (string, error) {
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	tok := string(bytes.TrimSpace(b))
	if tok == "" {
		return "", fmt.Errorf("token: %s is empty", file)
	}
	return tok, nil
}

// transport is the HTTP client for the controller, rebuilt when the CA
// or client certificate files change. Only Run's goroutine uses it.
type transport struct {
	files [3][]byte // CA, certificate, key as last read
	hc    *http.Client
}

// client returns the HTTP client for the files' current contents. The
// files are small and a request lasts up to a minute, so reading them
// each time costs nothing that matters.
func (t *transport) client(o *Options) (*http.Client, error) {
	var files [3][]byte
	for i, name := range []string{o.CAFile, o.CertFile, o.KeyFile} {
		if name == "" {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("TLS files: %w", err)
		}
		files[i] = b
	}
	if t.hc != nil && bytes.Equal(files[0], t.files[0]) && bytes.Equal(files[1], t.files[1]) && bytes.Equal(files[2], t.files[2]) {
		return t.hc, nil
	}
	// Both ends are tunnelgate: TLS 1.3 only.
	tc := &tls.Config{MinVersion: tls.VersionTLS13}
	if files[0] != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(files[0]) {
			return nil, fmt.Errorf("TLS files: no PEM certificate in %s", o.CAFile)
		}
		tc.RootCAs = pool
	}
	if files[1] != nil {
		cert, err := tls.X509KeyPair(files[1], files[2])
		if err != nil {
			return nil, fmt.Errorf("TLS files: client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if t.hc != nil {
		t.hc.CloseIdleConnections()
	}
	t.files = files
	t.hc = &http.Client{
		// A redirect is not followed: the controller never sends one,
		// and the token must not go where it points.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	t.hc.Transport = &http.Transport{
		// No proxy from the environment: the controller is in the
		// cluster, and an HTTPS_PROXY meant for egress must not carry
		// the config and its token.
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		TLSClientConfig:       tc,
		MaxIdleConnsPerHost:   1,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0, // a held request has no head until it ends; the request's deadline bounds it
	}
	return t.hc, nil
}
