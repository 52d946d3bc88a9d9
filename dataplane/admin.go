// This file implements the admin listener's handler.

package dataplane

import (
	"fmt"
	"net/http"

	"github.com/tunnelgate/tunnelgate/internal/pprofgate"
)

// PprofMode is Options.Pprof: who may read /debug/pprof/ on the admin
// listener. The zero value serves loopback peers only (kubectl
// port-forward) and refuses the rest; see internal/pprofgate.
type PprofMode = pprofgate.Mode

// AdminHandler serves the admin listener: /healthz (the process is up),
// /readyz (a config is loaded), /config (the version served and the last
// rejection), /metrics (Prometheus text, see metrics.go) and /debug/pprof/
// (to the peers Options.Pprof allows: loopback only by default).
func (p *Proxy) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !p.Ready() {
			http.Error(w, "no configuration loaded yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /config", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "version: %s\n", p.Version())
		if err := p.LastError(); err != nil {
			fmt.Fprintf(w, "last rejected config: %v\n", err)
		}
	})
	mux.Handle("GET /metrics", p.metricsEndpoint())
	mux.Handle("/debug/pprof/", pprofgate.Handler(p.opts.Pprof))
	return mux
}
