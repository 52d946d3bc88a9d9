// Command tunnelgate is the one tunnelgate binary. Each role (controller,
// proxy, standalone) is a subcommand of it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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
		fs := newFlagSet("version", "print the version", stderr)
		if code, done := parse(fs, rest); done {
			return code
		}
		fmt.Fprintln(stdout, version)
		return 0
	case "controller":
		return runController(rest, stdout, stderr)
	case "proxy":
		return runProxy(rest, stdout, stderr)
	case "standalone":
		return runStandalone(rest, stdout, stderr)
	case "demo":
		fs := newFlagSet("demo", "compile an embedded route set and show which rule wins each sample request", stderr)
		if code, done := parse(fs, rest); done {
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

// newFlagSet returns a flag set for one subcommand that reports errors
// instead of exiting, so run stays testable.
func newFlagSet(name, doc string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: tunnelgate %s [flags]\n\n%s.\n", name, doc)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses a subcommand's flags. done is true when run must return code
// right away: after -h (0) or a bad flag or stray argument (2).
func parse(fs *flag.FlagSet, args []string) (code int, done bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, true
		}
		return 2, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "tunnelgate %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return 2, true
	}
	return 0, false
}
