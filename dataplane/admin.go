package dataplane

import (
	"fmt"
	"net/http"
	"net/http/pprof"
)

// AdminHandler serves the admin listener: /healthz (the process is up),
// /readyz (a config is loaded), /config (the version served and the last
// rejection), /metrics (Prometheus text, see metrics.go) and /debug/pprof/.
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
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
