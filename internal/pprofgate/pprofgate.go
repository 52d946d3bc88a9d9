// Package pprofgate serves Go's profiler (net/http/pprof) on an admin
// listener to the peers a Mode allows.
//
// The admin listener also serves /metrics, so in a cluster other pods may
// be allowed to reach it; a profile or a goroutine dump tells them far
// more than metrics do. By default (Loopback) the profiler answers only
// peers on the host's own loopback: kubectl port-forward connects to a pod
// from inside the pod's network namespace, over its loopback, so
// profiling through it keeps working. The peer is the TCP peer of the
// connection (http.Request.RemoteAddr); no header is believed.
//
// Both tunnelgate processes mount Handler on their admin mux, and their
// commands take the Mode from the -pprof flag.
package pprofgate

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
)

// Mode says who may read the profiler. The zero value is Loopback.
type Mode uint8

const (
	// Loopback serves loopback peers (127.0.0.0/8, ::1) and unix socket
	// peers, and refuses everyone else with 403.
	Loopback Mode = iota
	// All serves every peer that reaches the listener.
	All
	// Off serves no one (404).
	Off
)

var names = [...]string{Loopback: "loopback", All: "all", Off: "off"}

// String returns the Mode's flag value: loopback, all or off.
func (m Mode) String() string {
	if int(m) < len(names) {
		return names[m]
	}
	return fmt.Sprintf("Mode(%d)", m)
}

// Set parses a flag value, so *Mode is a flag.Value.
func (m *Mode) Set(s string) error {
	for i, n := range names {
		if s == n {
			*m = Mode(i)
			return nil
		}
	}
	return errors.New("want loopback, all or off")
}

// Refused is the body a refused peer gets, and Disabled the one everyone
// gets with Off. Both name the flag that changes it.
const (
	Refused  = "pprof answers loopback peers only (kubectl port-forward); start the process with -pprof all to serve it to every peer\n"
	Disabled = "pprof is off (-pprof off); start the process with -pprof loopback or -pprof all to serve it\n"
)

// Handler serves /debug/pprof/ and everything below it, as net/http/pprof
// does, to the peers m allows. Mount it at "/debug/pprof/".
func Handler(m Mode) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case m == Off:
			plain(w, http.StatusNotFound, Disabled)
		case m == All || local(r):
			mux.ServeHTTP(w, r)
		default:
			plain(w, http.StatusForbidden, Refused)
		}
	})
}

// local reports whether r came from this host's loopback: an IP peer in
// 127.0.0.0/8 or ::1 (IPv4-mapped too), or a peer on a unix socket, whose
// file permissions already decide who may connect.
func local(r *http.Request) bool {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && a.Network() == "unix" {
		return true
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

func plain(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprint(w, body)
}
