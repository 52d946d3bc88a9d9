// Command tunnelgate-proxy is the tunnelgate proxy alone: the command
// `tunnelgate proxy` runs (cmd/internal/proxycmd), with the same flags, in a
// binary that links neither the controller nor Kubernetes' or
// Cloudflare's clients. Proxy Pods run it, the chart's and the dedicated
// planes': a process's resident set holds the pages of its binary that
// start-up touches, and the whole tunnelgate binary's package
// initialisation touches tens of megabytes a proxy never uses.
//
//	tunnelgate-proxy [flags]    serve, as tunnelgate proxy [flags]
//	tunnelgate-proxy version    print the version
//	tunnelgate-proxy -h         list the flags
package main

import (
	"io"
	"os"

	"github.com/tunnelgate/tunnelgate/cmd/internal/cli"
	"github.com/tunnelgate/tunnelgate/cmd/internal/proxycmd"
)

// version is replaced at build time with -ldflags "-X main.version=...".
var version = "dev"

// name is the command's name in its usage and errors.
const name = "tunnelgate-proxy"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the process exit code, as
// proxycmd.Run does. A first argument "version" prints the version: the
// proxy takes no other argument than its flags, so it cannot be meant
// otherwise.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "version" {
		return cli.Version(name+" version", version, args[1:], stdout, stderr)
	}
	return proxycmd.Run(name, args, stdout, stderr)
}
