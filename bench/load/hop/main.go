// Command hop is the load client of the load benchmark's "hop" target
// (bench/load/run.sh): it plays cloudflared against an origin, to compare
// the sidecar hop over loopback TCP with the same hop over a unix socket,
// which wrk cannot dial.
//
// It is shaped like cloudflared's origin client: a net/http Transport,
// HTTP/1.1 only, keep-alive, and a fixed number of connections, one per
// worker; each worker sends GETs in a loop, carrying the headers the edge
// adds and cloudflared forwards (see shared/notes/cloudflare.md), and reads
// every body in full. It stops after -duration, or after -max-requests,
// and gives up at -deadline whatever happens.
//
// It prints one line of key=value pairs:
//
//	requests=N errors=N seconds=S rps=R p50_us=L p99_us=L cpu_us=C
//
// requests counts the answers read (whatever their status), errors the
// requests that failed plus the answers that were not 2xx, the latencies
// are those of the answers read, and cpu_us is the client's own CPU time
// (user and system, the whole process). The exit status is 1 when a
// request failed or nothing was answered, 2 for bad flags.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Config is one run.
type Config struct {
	// Addr is "host:port" (TCP) or "unix:/path".
	Addr string
	// Host is the Host header: the public hostname cloudflared passes on.
	Host string
	// Path is the request target.
	Path string
	// Connections is the number of workers, each on its own connection.
	Connections int
	// Duration is how long the workers send requests.
	Duration time.Duration
	// MaxRequests stops the run after this many requests (0: no limit).
	MaxRequests int64
	// Timeout bounds each request.
	Timeout time.Duration
}

// Result is what a run measured.
type Result struct {
	Requests int64         // answers read, whatever their status
	Errors   int64         // failed requests plus non-2xx answers
	Elapsed  time.Duration // from the first request to the last answer
	P50, P99 time.Duration // latency of the answers read
	// FirstError is the first failure, for the log.
	FirstError string
}

// RPS is answers per second.
func (r Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// String is the key=value line run.sh reads.
func (r Result) String() string {
	return fmt.Sprintf("requests=%d errors=%d seconds=%.3f rps=%.1f p50_us=%.1f p99_us=%.1f",
		r.Requests, r.Errors, r.Elapsed.Seconds(), r.RPS(),
		float64(r.P50)/float64(time.Microsecond), float64(r.P99)/float64(time.Microsecond))
}

// headers are what the edge adds and cloudflared forwards to an origin,
// plus what cloudflared sets itself (Cf-Warp-Tag-Id, Connection). The
// values are those of dataplane's BenchmarkProxy request.
var headers = http.Header{
	"User-Agent":        {"Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0"},
	"Accept":            {"*/*"},
	"Accept-Encoding":   {"gzip"},
	"Cf-Connecting-Ip":  {"203.0.113.7"},
	"Cf-Ray":            {"8f0c1a2b3c4d5e6f-AMS"},
	"Cf-Visitor":        {`{"scheme":"https"}`},
	"X-Forwarded-For":   {"203.0.113.7"},
	"X-Forwarded-Proto": {"https"},
	"Cf-Warp-Tag-Id":    {"5c3f2f58-3c1e-4c8e-9f3e-2b9a8d6e7f10"},
	"Connection":        {"keep-alive"},
}

// dialer dials addr whatever address the Transport asks for, so that the
// request URL can carry the public Host for TCP and unix alike.
func dialer(addr string) func(ctx context.Context, _, _ string) (net.Conn, error) {
	network := "tcp"
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, addr = "unix", path
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
}

// newClient is cloudflared's origin client, cut down: HTTP/1.1 over a
// pool of at most n connections, all kept alive.
func newClient(c Config) *http.Client {
	tr := &http.Transport{
		DialContext:         dialer(c.Addr),
		ForceAttemptHTTP2:   false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
		MaxConnsPerHost:     c.Connections,
		MaxIdleConns:        c.Connections,
		MaxIdleConnsPerHost: c.Connections,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // Accept-Encoding is sent as it came
	}
	return &http.Client{Transport: tr, Timeout: c.Timeout}
}

// worker's share of the results.
type worker struct {
	requests, errors int64
	latencies        []time.Duration
	firstError       string
}

// Run sends requests as c says until its duration is over, MaxRequests
// were sent or ctx ends.
func Run(ctx context.Context, c Config) (Result, error) {
	if c.Connections < 1 {
		return Result{}, errors.New("connections must be at least 1")
	}
	if c.Duration <= 0 {
		return Result{}, errors.New("duration must be positive")
	}
	if c.Host == "" {
		c.Host = "app.example.com"
	}
	if c.Path == "" {
		c.Path = "/"
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	url := "http://" + c.Host + c.Path
	if _, err := http.NewRequest(http.MethodGet, url, nil); err != nil {
		return Result{}, err
	}
	client := newClient(c)
	defer client.CloseIdleConnections()

	ctx, cancel := context.WithTimeout(ctx, c.Duration)
	defer cancel()
	var sent atomic.Int64
	workers := make([]worker, c.Connections)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range workers {
		w := &workers[i]
		w.latencies = make([]time.Duration, 0, 4096)
		wg.Go(func() {
			for ctx.Err() == nil {
				if c.MaxRequests > 0 && sent.Add(1) > c.MaxRequests {
					return
				}
				// A fresh request each time, as cloudflared builds one
				// per request it relays; headers are cloned in.
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header = headers.Clone()
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil {
					// Requests carry no context: the run's end lets those
					// in flight finish, so every error is a real one.
					w.errors++
					if w.firstError == "" {
						w.firstError = err.Error()
					}
					continue
				}
				w.latencies = append(w.latencies, time.Since(t0))
				w.requests++
				if resp.StatusCode < 200 || resp.StatusCode > 299 {
					w.errors++
					if w.firstError == "" {
						w.firstError = "status " + resp.Status
					}
				}
			}
		})
	}
	wg.Wait()
	r := Result{Elapsed: time.Since(start)}
	var all []time.Duration
	for i := range workers {
		w := &workers[i]
		r.Requests += w.requests
		r.Errors += w.errors
		if r.FirstError == "" {
			r.FirstError = w.firstError
		}
		all = append(all, w.latencies...)
	}
	slices.Sort(all)
	r.P50, r.P99 = quantile(all, 0.50), quantile(all, 0.99)
	return r, nil
}

// quantile of sorted values (nearest rank), 0 when there are none.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func main() {
	var c Config
	flag.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "origin to load: host:port or unix:/path")
	flag.StringVar(&c.Host, "host", "app.example.com", "Host header (the public hostname)")
	flag.StringVar(&c.Path, "path", "/", "request path")
	flag.IntVar(&c.Connections, "connections", 50, "connections, one worker each")
	flag.DurationVar(&c.Duration, "duration", 8*time.Second, "how long to send requests")
	flag.Int64Var(&c.MaxRequests, "max-requests", 50_000_000, "stop after this many requests (0: no limit)")
	flag.DurationVar(&c.Timeout, "timeout", 10*time.Second, "bound on each request")
	deadline := flag.Duration("deadline", 0, "give up after this long whatever happens (default: duration + timeout + 10s)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "hop: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if *deadline <= 0 {
		*deadline = c.Duration + c.Timeout + 10*time.Second
	}
	// The hard deadline: a run that hangs past it is killed, not waited on.
	time.AfterFunc(*deadline, func() {
		fmt.Fprintf(os.Stderr, "hop: deadline of %v passed, giving up\n", *deadline)
		os.Exit(1)
	})
	r, err := Run(context.Background(), c)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hop: %v\n", err)
		os.Exit(2)
	}
	fmt.Printf("%s cpu_us=%d\n", r, cpuMicros())
	if r.FirstError != "" {
		fmt.Fprintf(os.Stderr, "hop: %d error(s), the first: %s\n", r.Errors, r.FirstError)
	}
	if r.Requests == 0 || r.Errors > 0 {
		os.Exit(1)
	}
}

// cpuMicros is the process's user and system CPU time so far, in µs (-1
// when the system does not say).
func cpuMicros() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Utime.Nano()/1000 + ru.Stime.Nano()/1000
}
