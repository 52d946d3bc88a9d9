// Package proxycmd is the proxy command: its flags, where its config comes
// from, and serving until it is told to stop. Two binaries run it: the
// tunnelgate binary as `tunnelgate proxy`, and tunnelgate-proxy, a binary
// that is the proxy alone, which the chart's and the dedicated planes'
// proxy containers run.
//
// Why a binary of its own: a process's resident set holds the pages of its
// binary that start-up touches, and the tunnelgate binary links the
// controller (client-go, the Kubernetes and Gateway API types, the
// Cloudflare client), whose package initialisation touches tens of
// megabytes of them. So the command depends on the data plane and
// cmd/internal/cli alone, never on the controller's packages or Kubernetes';
// cmd/tunnelgate-proxy's tests fail if its dependencies grow any.
//
// The config comes from the controller (-controller: the proxies of a
// deployment; configwatch, with a cache file served at start) or from a
// file (-config: how the proxy is benchmarked and debugged without a
// controller; SIGHUP reloads it, and a config that does not load is
// logged and not applied).
package proxycmd
