// This file implements the -pprof flag.

package cli

import (
	"flag"

	"github.com/tunnelgate/tunnelgate/internal/pprofgate"
)

// AddPprofFlag adds -pprof: who may read /debug/pprof/ on the admin
// listener (internal/pprofgate). The default serves loopback peers only,
// which is how kubectl port-forward arrives.
func AddPprofFlag(fs *flag.FlagSet) *pprofgate.Mode {
	m := new(pprofgate.Mode)
	fs.Var(m, "pprof", "who may read /debug/pprof/ on -admin, a `mode`: loopback (the default: peers on this host's loopback, which is how kubectl port-forward connects), all (every peer that reaches -admin) or off")
	return m
}
