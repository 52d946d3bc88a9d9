// This file serves on a listener, with shutdown.

package configserver

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Serve serves Handler on ln, over TLS when tlsConfig is set (see
// TLSConfig), until ctx ends. Then it drains (held requests are answered
// at once) and waits up to 10 s for answers being written.
func (s *Server) Serve(ctx context.Context, ln net.Listener, tlsConfig *tls.Config) error {
	srv := &http.Server{
		Handler: s.Handler(),
		// A proxy sends a small request head at once; one that does not
		// is not a proxy.
		ReadHeaderTimeout: 10 * time.Second,
		// No WriteTimeout: a held request legitimately lasts MaxWait,
		// and a document of megabytes may follow.
		IdleTimeout: 2 * time.Minute,
		TLSConfig:   tlsConfig,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	done := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			done <- srv.ServeTLS(ln, "", "")
		} else {
			done <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	s.Drain()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
