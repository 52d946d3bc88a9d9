// Command probe is the one program of the images test/realnode makes for
// itself: a static binary alone in a FROM-scratch image, since there is
// no registry to pull from.
//
//	probe                       the Pod sandbox's process (containerd's sandbox_image):
//	                            sleeps, reaps children, exits 0 on SIGTERM or SIGINT
//	probe pause [-log F] [-name N] [-linger D]
//	                            the same; with -log, appends "N term" to F when
//	                            SIGTERM arrives and "N exit" just before exiting,
//	                            D after it (for tests of the order in which the
//	                            kubelet stops a Pod's containers)
//	probe resolve [-timeout D] NAME...
//	                            looks up each NAME with Go's own resolver (which
//	                            reads /etc/resolv.conf, as the kubelet wrote it),
//	                            retrying until every one resolves or D passes,
//	                            prints "NAME ADDR..." a line each, exits 1 on failure
//	probe get [-host H] [-timeout D] URL
//	                            sends GET URL (with Host H), retrying until an answer
//	                            comes or D passes; prints the status line and the
//	                            Location header, exits 1 on failure
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"
)

func main() {
	args := os.Args[1:]
	cmd := "pause"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "pause":
		os.Exit(pause(args))
	case "resolve":
		os.Exit(resolve(args))
	case "get":
		os.Exit(get(args))
	default:
		fmt.Fprintf(os.Stderr, "probe: unknown command %q (pause, resolve, get)\n", cmd)
		os.Exit(2)
	}
}

func pause(args []string) int {
	fs := flag.NewFlagSet("pause", flag.ContinueOnError)
	logPath := fs.String("log", "", "file to append term and exit lines to")
	name := fs.String("name", "probe", "name in the log lines")
	linger := fs.Duration("linger", 0, "time between SIGTERM and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	note := func(what string) {
		if *logPath == "" {
			return
		}
		f, err := os.OpenFile(*logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			fmt.Fprintf(os.Stderr, "probe: %v\n", err)
			return
		}
		fmt.Fprintf(f, "%s %s %d\n", *name, what, time.Now().UnixNano())
		f.Close()
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	fmt.Printf("%s: running as uid %d\n", *name, os.Getuid())
	for s := range sigs {
		if s == syscall.SIGCHLD {
			// As pid 1 of a Pod's sandbox, reap whatever was reparented here.
			for {
				pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		note("term")
		time.Sleep(*linger)
		note("exit")
		return 0
	}
	return 0
}

func resolve(args []string) int {
	fs := flag.NewFlagSet("resolve", flag.ContinueOnError)
	timeout := fs.Duration("timeout", time.Minute, "how long to keep trying")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "probe resolve: name a host")
		return 2
	}
	deadline := time.Now().Add(*timeout)
	for _, name := range fs.Args() {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			addrs, err := net.DefaultResolver.LookupHost(ctx, name)
			cancel()
			if err == nil {
				sort.Strings(addrs)
				fmt.Printf("%s %s\n", name, strings.Join(addrs, " "))
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "probe resolve: %s: %v\n", name, err)
				return 1
			}
			fmt.Fprintf(os.Stderr, "probe resolve: %s: %v (retrying)\n", name, err)
			time.Sleep(500 * time.Millisecond)
		}
	}
	return 0
}

func get(args []string) int {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	host := fs.String("host", "", "Host header")
	timeout := fs.Duration("timeout", time.Minute, "how long to keep trying")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "probe get: name one URL")
		return 2
	}
	client := &http.Client{
		Timeout:       5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	deadline := time.Now().Add(*timeout)
	for {
		req, err := http.NewRequest(http.MethodGet, fs.Arg(0), nil)
		if err != nil {
			fmt.Fprintf(os.Stderr, "probe get: %v\n", err)
			return 2
		}
		if *host != "" {
			req.Host = *host
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			fmt.Printf("%s %s\nLocation: %s\n", resp.Proto, resp.Status, resp.Header.Get("Location"))
			return 0
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "probe get: %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "probe get: %v (retrying)\n", err)
		time.Sleep(500 * time.Millisecond)
	}
}
