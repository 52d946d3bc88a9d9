package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// origin is an httptest server that checks every request is shaped like
// cloudflared's and counts requests and connections.
type origin struct {
	srv                  *httptest.Server
	requests, bad, conns atomic.Int64
	mu                   sync.Mutex
	firstBad             string
}

func newOrigin(t *testing.T, l net.Listener, status int) *origin {
	t.Helper()
	o := &origin{}
	want := map[string]string{
		"Cf-Connecting-Ip":  "203.0.113.7",
		"Cf-Visitor":        `{"scheme":"https"}`,
		"X-Forwarded-For":   "203.0.113.7",
		"X-Forwarded-Proto": "https",
		"Accept-Encoding":   "gzip",
	}
	o.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.requests.Add(1)
		var problems []string
		if r.Host != "app.example.com" {
			problems = append(problems, "Host "+r.Host)
		}
		if r.ProtoMajor != 1 || r.ProtoMinor != 1 {
			problems = append(problems, "protocol "+r.Proto)
		}
		for k, v := range want {
			if got := r.Header.Get(k); got != v {
				problems = append(problems, k+": "+got)
			}
		}
		for _, k := range []string{"Cf-Ray", "User-Agent"} {
			if r.Header.Get(k) == "" {
				problems = append(problems, k+" missing")
			}
		}
		if len(problems) > 0 {
			o.bad.Add(1)
			o.mu.Lock()
			if o.firstBad == "" {
				o.firstBad = strings.Join(problems, "; ")
			}
			o.mu.Unlock()
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		w.Write([]byte(strings.Repeat("x", 100)))
	}))
	o.srv.Listener.Close()
	o.srv.Listener = l
	o.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			o.conns.Add(1)
		}
	}
	o.srv.Start()
	t.Cleanup(o.srv.Close)
	return o
}

func listenTCP(t *testing.T) (net.Listener, string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l, l.Addr().String()
}

func listenUnix(t *testing.T) (net.Listener, string) {
	path := filepath.Join(t.TempDir(), "origin.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	return l, "unix:" + path
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		listen func(*testing.T) (net.Listener, string)
	}{
		{"tcp", listenTCP},
		{"unix", listenUnix},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, addr := tc.listen(t)
			o := newOrigin(t, l, http.StatusOK)
			const conns = 4
			r, err := Run(context.Background(), Config{
				Addr: addr, Connections: conns, Duration: 200 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			if r.Requests == 0 || r.Errors != 0 || r.FirstError != "" {
				t.Fatalf("result %v, first error %q", r, r.FirstError)
			}
			if got := o.requests.Load(); got != r.Requests {
				t.Errorf("origin saw %d requests, the client counted %d", got, r.Requests)
			}
			if o.bad.Load() != 0 {
				t.Errorf("%d requests not shaped like cloudflared's, the first: %s", o.bad.Load(), o.firstBad)
			}
			// Kept alive: no more connections than workers.
			if got := o.conns.Load(); got < 1 || got > conns {
				t.Errorf("origin saw %d connections, want 1 to %d", got, conns)
			}
			if r.P50 <= 0 || r.P99 < r.P50 || r.RPS() <= 0 {
				t.Errorf("implausible numbers: %v", r)
			}
		})
	}
}

func TestRunMaxRequests(t *testing.T) {
	l, addr := listenUnix(t)
	o := newOrigin(t, l, http.StatusOK)
	r, err := Run(context.Background(), Config{
		Addr: addr, Connections: 3, Duration: 10 * time.Second, MaxRequests: 25,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 25 || o.requests.Load() != 25 || r.Errors != 0 {
		t.Fatalf("result %v, origin saw %d, want 25 requests and no errors", r, o.requests.Load())
	}
	if r.Elapsed > 5*time.Second {
		t.Errorf("took %v: the request limit did not end the run", r.Elapsed)
	}
}

func TestRunCountsErrors(t *testing.T) {
	l, addr := listenTCP(t)
	newOrigin(t, l, http.StatusBadGateway)
	r, err := Run(context.Background(), Config{Addr: addr, Connections: 2, Duration: 5 * time.Second, MaxRequests: 10})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 10 || r.Errors != 10 || !strings.Contains(r.FirstError, "502") {
		t.Fatalf("result %v, first error %q: want 10 requests, all errors", r, r.FirstError)
	}

	// Nothing listening: failures, no answers.
	l2, addr2 := listenTCP(t)
	l2.Close()
	r, err = Run(context.Background(), Config{Addr: addr2, Connections: 1, Duration: 5 * time.Second, MaxRequests: 5})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 0 || r.Errors != 5 {
		t.Fatalf("result %v: want 0 answers and 5 errors", r)
	}
}

func TestResultString(t *testing.T) {
	r := Result{Requests: 1000, Errors: 2, Elapsed: 2 * time.Second, P50: 1500 * time.Microsecond, P99: 4 * time.Millisecond}
	want := "requests=1000 errors=2 seconds=2.000 rps=500.0 p50_us=1500.0 p99_us=4000.0"
	if got := r.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
