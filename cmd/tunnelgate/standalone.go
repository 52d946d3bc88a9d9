package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/standalone"
)

// pathList is a repeatable -f flag.
type pathList []string

func (p *pathList) String() string     { return strings.Join(*p, ",") }
func (p *pathList) Set(v string) error { *p = append(*p, v); return nil }

func runStandalone(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("standalone", "serve Gateway API YAML without a cluster, or check it with -check", stderr)
	var paths pathList
	fs.Var(&paths, "f", "YAML `file or directory` of Gateway API objects, Services and EndpointSlices (repeatable)")
	listen := fs.String("listen", "127.0.0.1:8080", "address serving every HTTP listener of the accepted Gateways, by hostname")
	admin := fs.String("admin", "", "admin listener (health, readiness, metrics, pprof); empty disables")
	pprofMode := addPprofFlag(fs)
	check := fs.Bool("check", false, "print every object's conditions and exit: 1 if a route is not Accepted with ResolvedRefs")
	controller := fs.String("controller-name", translate.DefaultControllerName, "GatewayClass controllerName to serve")
	if code, done := parse(fs, args); done {
		return code
	}
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "tunnelgate standalone: at least one -f PATH is required")
		return 2
	}
	if *check {
		return checkFiles(paths, *controller, *listen, stdout, stderr)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := standalone.Serve(ctx, standalone.Options{
		Paths: paths, Listen: *listen, Admin: *admin, Pprof: *pprofMode, ControllerName: *controller, Log: log,
		Ready: func(b dataplane.Bound) { log.Info("listening", "addr", b.Plain, "admin", b.Admin) },
	})
	if err != nil {
		fmt.Fprintf(stderr, "tunnelgate standalone: %v\n", err)
		return 1
	}
	return 0
}

// checkFiles is the linter: it prints what a user would see with kubectl
// describe, and fails when a route would not serve as written.
func checkFiles(paths []string, controller, listen string, stdout, stderr io.Writer) int {
	res, err := standalone.Build(paths, controller, listen, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "tunnelgate standalone: %v\n", err)
		return 1
	}
	standalone.Describe(stdout, res.Snapshot, res.Output)
	p := dataplane.New(dataplane.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Close()
	if err := p.Load(&res.Output.Config); err != nil {
		fmt.Fprintf(stderr, "tunnelgate standalone: the proxy refuses the translated config (a bug; please report it): %v\n", err)
		return 1
	}
	if bad := standalone.NotReady(res.Output); len(bad) > 0 {
		fmt.Fprintf(stderr, "\n%d route parent(s) not ready:\n", len(bad))
		for _, l := range bad {
			fmt.Fprintln(stderr, "  "+l)
		}
		return 1
	}
	return 0
}
