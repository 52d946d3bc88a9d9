// This file implements the standalone command.

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tunnelgate/tunnelgate/cmd/internal/cli"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/standalone"
)

// pathList is a repeatable -f flag.
type pathList []string

func (p *pathList) String() string     { return strings.Join(*p, ",") }
func (p *pathList) Set(v string) error { *p = append(*p, v); return nil }

func runStandalone(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return standaloneMain(ctx, args, stdout, stderr, nil)
}

// standaloneMain is runStandalone until ctx ends; ready, if set, is told
// the bound addresses (tests listen on ":0").
func standaloneMain(ctx context.Context, args []string, stdout, stderr io.Writer, ready func(dataplane.Bound)) int {
	fs := newFlagSet("standalone", "serve Gateway API YAML without a cluster, or check it with -check", stderr)
	var paths pathList
	fs.Var(&paths, "f", "YAML `file or directory` of Gateway API objects, Services and EndpointSlices (repeatable)")
	listen := fs.String("listen", "127.0.0.1:8080", "`address` serving every HTTP listener of the accepted Gateways, by hostname: host:port or unix:/path; TCP and TLS listeners are served on their own ports on its host")
	behind := fs.Bool("behind-cloudflared", false, "serve -listen as the origin of a cloudflared on this machine: trust the Cf-* and X-Forwarded-* headers it passes on "+
		"(the visitor's address and scheme). Only when nothing but cloudflared can reach -listen (loopback or a unix socket): any other client could forge them")
	admin := fs.String("admin", "", "admin listener (health, readiness, metrics, pprof); empty disables")
	pprofMode := cli.AddPprofFlag(fs)
	slashes := cli.AddEncodedSlashesFlag(fs)
	check := fs.Bool("check", false, "print every object's conditions and exit: 1 if a route is not Accepted with ResolvedRefs")
	controller := fs.String("controller-name", translate.DefaultControllerName, "GatewayClass controllerName to serve")
	logf := cli.AddLogFlags(fs)
	accessLog := cli.AddAccessLogFlags(fs)
	if code, done := cli.Parse(fs, args); done {
		return code
	}
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "tunnelgate standalone: at least one -f PATH is required")
		return 2
	}
	if *check {
		return checkFiles(paths, *controller, *listen, stdout, stderr)
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "tunnelgate standalone: %v\n", err)
		return code
	}
	obs, err := cli.OpenRequestObservability(ctx, logf, accessLog, stdout, stderr)
	if err != nil {
		return fail(2, err)
	}
	defer obs.Close()
	log := obs.Log
	if *behind && !loopbackOnly(*listen) {
		log.Warn("-behind-cloudflared trusts every peer's Cf-* and X-Forwarded-* headers, and -listen is not a loopback address or a unix socket: "+
			"make sure nothing but cloudflared can reach it", "listen", *listen)
	}
	err = standalone.Serve(ctx, standalone.Options{
		Paths: paths, Listen: *listen, BehindCloudflared: *behind, Admin: *admin, Pprof: *pprofMode, EncodedSlashes: *slashes, ControllerName: *controller,
		Log: log, AccessLog: obs.AccessLog, Tracer: obs.Tracer,
		Ready: func(b dataplane.Bound) {
			if *behind {
				log.Info("listening", "origin", b.Origin, "admin", b.Admin, "trust", "cloudflared's forwarding headers")
			} else {
				log.Info("listening", "addr", b.Plain, "admin", b.Admin)
			}
			if ready != nil {
				ready(b)
			}
		},
	})
	if err != nil {
		return fail(1, err)
	}
	return 0
}

// loopbackOnly reports whether only processes on this machine can reach
// addr: a unix socket, or a loopback address ("localhost" included).
func loopbackOnly(addr string) bool {
	if strings.HasPrefix(addr, "unix:") {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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
