// Command rproxy is the baseline of the load benchmark (bench/load/run.sh):
// net/http/httputil.ReverseProxy tuned to be a fair competitor, with a large
// idle connection pool to the backend, no HTTP/2 attempt, no transparent
// compression, and a pool of copy buffers so that a request does not
// allocate a fresh 32 KiB buffer.
//
// With -route-hosts and -route-prefixes it routes as the other proxies of
// the routes5k shape do: an http.ServeMux holds a "host/prefix/" pattern
// for every route, r0.DOMAIN/p0/ and on, each handled by the one
// ReverseProxy; anything else is answered 404 by the mux.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// bufSize is the size of the copy buffers ReverseProxy uses for bodies,
// the same as the buffer it allocates by itself without a pool.
const bufSize = 32 << 10

// bufferPool implements httputil.BufferPool. It pools pointers to arrays:
// a slice converts back to its array pointer without allocating, where
// putting a []byte into a sync.Pool would box its header on every Put.
type bufferPool struct{ p sync.Pool }

func newBufferPool() *bufferPool {
	return &bufferPool{p: sync.Pool{New: func() any { return new([bufSize]byte) }}}
}

func (b *bufferPool) Get() []byte { return b.p.Get().(*[bufSize]byte)[:] }

func (b *bufferPool) Put(buf []byte) {
	if cap(buf) < bufSize {
		return // not one of ours
	}
	b.p.Put((*[bufSize]byte)(buf[:bufSize]))
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8082", "address to serve on")
	backend := flag.String("backend", "http://127.0.0.1:8081", "backend base URL (host:port alone means http)")
	routeHosts := flag.Int("route-hosts", 0, "route through an http.ServeMux with this many hostnames, r0.DOMAIN and on (0: no routing)")
	routePrefixes := flag.Int("route-prefixes", 10, "with -route-hosts, path prefixes per hostname, /p0/ and on")
	routeDomain := flag.String("route-domain", "bench.test", "with -route-hosts, the domain under which the hostnames are")
	flag.Parse()

	raw := *backend
	if u, err := url.Parse(raw); err != nil || u.Scheme == "" || u.Host == "" {
		raw = "http://" + raw
	}
	target, err := url.Parse(raw)
	if err != nil || target.Host == "" {
		log.Fatalf("rproxy: bad -backend %q", *backend)
	}

	transport := &http.Transport{
		Proxy: nil, // never route to the backend through an environment proxy
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     false,
		DisableCompression:    true,
		ExpectContinueTimeout: time.Second,
	}

	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// X-Forwarded-For only, appended to what the client sent, as
			// nginx's $proxy_add_x_forwarded_for does. (Rewrite receives
			// Out with the inbound X-Forwarded-* headers removed.)
			if ip, _, err := net.SplitHostPort(r.In.RemoteAddr); err == nil {
				xff := ip
				if prior := r.In.Header.Values("X-Forwarded-For"); len(prior) > 0 {
					xff = joinXFF(prior) + ", " + ip
				}
				r.Out.Header["X-Forwarded-For"] = []string{xff}
			}
		},
		Transport:  transport,
		BufferPool: newBufferPool(),
	}

	var handler http.Handler = proxy
	if *routeHosts > 0 {
		mux := http.NewServeMux()
		for h := 0; h < *routeHosts; h++ {
			for p := 0; p < *routePrefixes; p++ {
				mux.Handle(fmt.Sprintf("r%d.%s/p%d/", h, *routeDomain, p), proxy)
			}
		}
		handler = mux
		log.Printf("rproxy: routing %d host/prefix patterns", *routeHosts*(*routePrefixes))
	}

	srv := &http.Server{
		Addr:              *listen,
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	log.Printf("rproxy: %s -> %s", *listen, target)
	log.Fatal(srv.ListenAndServe())
}

// joinXFF joins several X-Forwarded-For header lines into one list.
func joinXFF(lines []string) string {
	if len(lines) == 1 {
		return lines[0]
	}
	s := lines[0]
	for _, l := range lines[1:] {
		s += ", " + l
	}
	return s
}
