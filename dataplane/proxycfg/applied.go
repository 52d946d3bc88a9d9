// This file implements Applied: how a proxy took a config.

package proxycfg

// Applied says how a proxy made a config the one it serves, by the
// contract in the package doc: what it could keep by identity and stamp,
// and so how much it compiled. The proxy returns it (dataplane's
// Proxy.Apply); the config client counts it in its metrics.
type Applied int

const (
	// AppliedAll: the config was compiled and swapped in whole.
	AppliedAll Applied = iota + 1
	// AppliedClusters: only cluster definitions differed from the config
	// served; those clusters were replaced and nothing was compiled.
	AppliedClusters
	// AppliedRoutes: routes were edited in place, added or deleted, or
	// listeners added, removed or edited; those routes were compiled,
	// the tables of their listeners updated, and those of the changed
	// listeners built.
	AppliedRoutes
)
