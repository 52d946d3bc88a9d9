// This file reads the server's certificates from files, and again when
// they change.

package configserver

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
)

// TLSFiles name the PEM files of the server's TLS identity.
type TLSFiles struct {
	// CertFile and KeyFile are the server's certificate chain and key.
	CertFile, KeyFile string
	// ClientCAFile, when set, makes client certificates required: a
	// proxy must present one that chains to these CAs, in addition to
	// its bearer token.
	ClientCAFile string
}

// TLSConfig returns a server TLS config that reads files and re-reads
// them when they change, so a certificate renewed in a mounted Secret
// (cert-manager) is served without a restart. A file that no longer
// parses is logged and the previous identity kept. Both ends are
// tunnelgate, so TLS 1.3 is the least version.
func TLSConfig(files TLSFiles, log *slog.Logger) (*tls.Config, error) {
	if files.CertFile == "" || files.KeyFile == "" {
		return nil, errors.New("TLS needs both a certificate and a key file")
	}
	if log == nil {
		log = slog.Default()
	}
	r := &tlsReloader{files: files, log: log}
	if err := r.load(); err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// GetCertificate is there for http.Server.ServeTLS, which wants
		// some way to a certificate; handshakes use GetConfigForClient.
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			c, err := r.current()
			if err != nil {
				return nil, err
			}
			return &c.Certificates[0], nil
		},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return r.current() },
	}, nil
}

// tlsReloader keeps the config built from files, rebuilding it when a
// file's contents change. It reads the files on every handshake: they
// are small, and proxies hold long polls, so handshakes are rare. (File
// times would be cheaper to check, but a same-size replacement within
// their granularity would go unnoticed.)
type tlsReloader struct {
	files TLSFiles
	log   *slog.Logger

	mu     sync.Mutex
	loaded [3][]byte // cert, key, client CA as last loaded
	cfg    *tls.Config
}

func (r *tlsReloader) current() (*tls.Config, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := r.read()
	if err == nil && bytes.Equal(b[0], r.loaded[0]) && bytes.Equal(b[1], r.loaded[1]) && bytes.Equal(b[2], r.loaded[2]) {
		return r.cfg, nil
	}
	if err == nil {
		err = r.build(b)
	}
	if err != nil {
		r.log.Error("TLS files changed but do not load; serving the previous certificate", "err", err)
	}
	return r.cfg, nil
}

func (r *tlsReloader) load() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := r.read()
	if err != nil {
		return err
	}
	return r.build(b)
}

func (r *tlsReloader) read() (b [3][]byte, err error) {
	for i, name := range []string{r.files.CertFile, r.files.KeyFile, r.files.ClientCAFile} {
		if name == "" {
			continue
		}
		if b[i], err = os.ReadFile(name); err != nil {
			return b, err
		}
	}
	return b, nil
}

func (r *tlsReloader) build(b [3][]byte) error {
	cert, err := tls.X509KeyPair(b[0], b[1])
	if err != nil {
		return fmt.Errorf("server certificate %s: %w", r.files.CertFile, err)
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		// HTTP/1.1 only: a proxy has one request open at a time, so
		// HTTP/2's multiplexing buys nothing here.
		NextProtos: []string{"http/1.1"},
	}
	if r.files.ClientCAFile != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b[2]) {
			return fmt.Errorf("client CA: no PEM certificate in %s", r.files.ClientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	r.cfg, r.loaded = cfg, b
	return nil
}
