// Package cli is what the command lines of tunnelgate's commands share:
// `tunnelgate controller`, `tunnelgate standalone`, and the proxy, which
// runs as `tunnelgate proxy` and as the tunnelgate-proxy binary.
//
// Each command parses its own flags with a flag set from NewFlagSet and
// Parse, which report errors and -h instead of exiting, so a command is a
// function of its arguments that tests call. The flags several commands
// take are declared here once, with their defaults and help: -pprof
// (AddPprofFlag), -log-level and -log-format (AddLogFlags), and the access
// log's (AddAccessLogFlags). A command that serves requests opens its
// process log, access log and tracer together with
// OpenRequestObservability; tracing has no flags, it follows the standard
// OTEL_* environment variables (internal/telemetry).
//
// The package depends on the data plane's observability alone, not on the
// controller's packages: the proxy's binary links it without Kubernetes.
package cli
