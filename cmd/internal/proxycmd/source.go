// This file implements the config source: the controller, or a file
// reloaded on SIGHUP.

package proxycmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tunnelgate/tunnelgate/cmd/internal/cli"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// startConfigSource starts watching -controller, or loads -config and
// reloads it on SIGHUP. stop ends the watch or the reloads, and returns
// once they have ended. On an error, code is the exit code it calls for.
func (r *run) startConfigSource(ctx context.Context) (stop func(), code int, err error) {
	if r.f.watch.URL != "" {
		stop, err := r.watchController(ctx)
		if err != nil {
			return nil, 2, err
		}
		return stop, 0, nil
	}
	if err := loadFile(r.p, r.f.file); err != nil {
		return nil, 1, err
	}
	return r.reloadOnHangup(), 0, nil
}

// watchController starts the client of -controller on a goroutine of its
// own. Until the cache or the controller gives a config the proxy is not
// ready (/readyz 503, requests 503); the listeners open meanwhile. stop
// ends the client, and returns once it has stopped.
func (r *run) watchController(ctx context.Context) (stop func(), err error) {
	opts := r.f.watch
	opts.Log, opts.ProxyID = r.log, cli.EnvOr("POD_NAME", cli.Hostname())
	watch, err := configwatch.New(r.p, opts)
	if err != nil {
		return nil, err
	}
	r.watch = watch
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		watch.Run(ctx)
	}()
	return func() { cancel(); <-done }, nil
}

// reloadOnHangup loads -config again on each SIGHUP; a config that does
// not load is logged, and the last one kept. stop ends the reloads, and
// returns once the last has finished.
func (r *run) reloadOnHangup() (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range hup {
			if err := loadFile(r.p, r.f.file); err != nil {
				r.log.Error("reload failed; still serving the previous config", "err", err)
			}
		}
	}()
	return func() {
		// Once Stop returns no signal is sent on hup, so it can be
		// closed, which ends the loop.
		signal.Stop(hup)
		close(hup)
		<-done
	}
}

// loadFile serves the config in file.
func loadFile(p *dataplane.Proxy, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var cfg proxycfg.Config
	if err := proxycfg.DecodeConfig(b, &cfg); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	// The version is the content's, as the controller's and standalone
	// mode's are: whatever the file says is replaced. A fresh Encoder
	// computes it: one kept for the next reload would hold the JSON of
	// every element for the life of the proxy (5 MB of RSS at 5,000
	// routes), to save the encoding of a reload that comes on SIGHUP.
	if cfg.Version, err = proxycfg.ContentVersion(&cfg); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := p.Load(&cfg); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}
