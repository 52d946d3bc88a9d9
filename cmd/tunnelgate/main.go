// Command tunnelgate is tunnelgate's binary: each role (controller,
// proxy, standalone) is a subcommand of it. The proxy also ships as a
// binary of its own, cmd/tunnelgate-proxy, which is what proxy Pods run:
// without the controller linked in it takes less memory. Both run the
// same command, cmd/internal/proxycmd.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/tunnelgate/tunnelgate/cmd/internal/cli"
	"github.com/tunnelgate/tunnelgate/cmd/internal/proxycmd"
)

// version is replaced at build time with -ldflags "-X main.version=...".
var version = "dev"

// usage is the top-level help, printed by help and on a bad command line.
const usage = `tunnelgate: Kubernetes Gateway API on Cloudflare Tunnel.

Usage:
  tunnelgate <command> [flags]

Commands:
  controller  watch a cluster: Gateway API statuses, and configs for proxies
  standalone  serve Gateway API YAML files without a cluster (-check lints them)
  proxy       serve traffic: config from a controller (-controller) or a file (-config)
  demo        show how the compiled router picks a rule for sample requests
  version     print the version
  help        print this help

Run "tunnelgate <command> -h" for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the process exit code: 0 on
// success, 1 when the command failed, 2 when the command line is wrong.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "version":
		return cli.Version("tunnelgate version", version, rest, stdout, stderr)
	case "controller":
		return runController(rest, stdout, stderr)
	case "proxy":
		return proxycmd.Run("tunnelgate proxy", rest, stdout, stderr)
	case "standalone":
		return runStandalone(rest, stdout, stderr)
	case "demo":
		fs := newFlagSet("demo", "compile an embedded route set and show which rule wins each sample request", stderr)
		if code, done := cli.Parse(fs, rest); done {
			return code
		}
		if err := demo(stdout); err != nil {
			fmt.Fprintf(stderr, "tunnelgate demo: %v\n", err)
			return 1
		}
		return 0
	default:
		fmt.Fprintf(stderr, "tunnelgate: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}

// newFlagSet returns the flag set of the subcommand name, which does what
// doc says (cli.NewFlagSet).
func newFlagSet(name, doc string, stderr io.Writer) *flag.FlagSet {
	return cli.NewFlagSet("tunnelgate "+name, doc, stderr)
}
