package memory

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// settle is how long a proxy serving its config is left before its
// resident set is read: the load's garbage is collected by then.
const settle = 3 * time.Second

// scrapes is how many scrapes BenchmarkProxyMemory runs back to back
// before it reads the resident set again: a proxy scraped every 15 s
// for two minutes.
const scrapes = 8

// BenchmarkProxyMemory starts a proxy on the config of Cluster(routes) in
// a file, every endpoint of every cluster rewritten to a loopback
// backend this process runs, and reports its resident set once
// it has served for a while (MiB-rss-idle), the same once every route has
// had a request and the proxy has settled (MiB-rss), after a first scrape
// of its metrics and a settle (MiB-rss-scraped-once), and after
// scrapes-1 more, back to back, and a settle (MiB-rss-scraped); the size of one scrape of its metrics as sent
// without compression (scrape-bytes) and with gzip (scrape-gzip-bytes),
// the mean time to read one (scrape-ms), the HTTP/1.1 connections its
// pools hold (pool-conns), its peak, the decoding and compiling of the
// config included (MiB-peak), and how long it took to serve
// (ms-to-serve).
//
// The endpoints are shared or distinct. Shared: every cluster's two
// endpoints are the same two addresses of 127.0.0.1, so every cluster
// shares their two pools, which hold a handful of connections. Distinct:
// each endpoint has an address of its own in 127.0.0.0/8 (the backend
// listens on every address, at one port), as a cluster's Pods have, so
// each request to a new endpoint opens a connection its pool keeps: the
// state of a proxy whose every route has had traffic.
func BenchmarkProxyMemory(b *testing.B) {
	for _, routes := range []int{5000} {
		for _, endpoints := range []string{"shared", "distinct"} {
			b.Run(fmt.Sprintf("routes=%d/endpoints=%s", routes, endpoints), func(b *testing.B) {
				cfg, err := clusterConfig(routes)
				if err != nil {
					b.Fatal(err)
				}
				address := sharedEndpoints(b)
				if endpoints == "distinct" {
					address = distinctEndpoints(b)
				}
				n := 0
				for i := range cfg.Clusters {
					for j := range cfg.Clusters[i].Endpoints {
						cfg.Clusters[i].Endpoints[j].Address = address(n)
						n++
					}
				}
				file := filepath.Join(b.TempDir(), "config.json")
				writeJSON(b, file, cfg)
				for range b.N {
					measure(b, cfg, "-config", file)
				}
			})
		}
	}
}

// okHandler answers every request 200 "ok".
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

// sharedEndpoints serves two backends on 127.0.0.1 until the benchmark
// ends; endpoint n gets the one of its parity.
func sharedEndpoints(b *testing.B) func(n int) string {
	var addrs [2]string
	for i := range addrs {
		srv := httptest.NewServer(okHandler)
		b.Cleanup(srv.Close)
		addrs[i] = srv.Listener.Addr().String()
	}
	return func(n int) string { return addrs[n%2] }
}

// distinctEndpoints serves one backend on every address of the host, at
// one port, until the benchmark ends; endpoint n gets an address of
// 127.0.0.0/8 of its own.
func distinctEndpoints(b *testing.B) func(n int) string {
	ln, err := net.Listen("tcp4", ":0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: okHandler}}
	srv.Start()
	b.Cleanup(srv.Close)
	port := ln.Addr().(*net.TCPAddr).Port
	return func(n int) string {
		n++ // not 127.1.0.0
		return fmt.Sprintf("127.%d.%d.%d:%d", 1+n>>16, n>>8&0xff, n&0xff, port)
	}
}

// BenchmarkProxyColdStart starts a proxy whose controller cannot be
// reached, with the cache file a proxy watching it would have written
// for Cluster(routes): the time to serve is the time to load the cache.
func BenchmarkProxyColdStart(b *testing.B) {
	for _, routes := range []int{5000} {
		b.Run(fmt.Sprintf("routes=%d", routes), func(b *testing.B) {
			cfg, err := clusterConfig(routes)
			if err != nil {
				b.Fatal(err)
			}
			var e proxycfg.Encoder
			enc, err := e.Encode(cfg)
			if err != nil {
				b.Fatal(err)
			}
			dir := b.TempDir()
			cache, token := filepath.Join(dir, "cache.json"), filepath.Join(dir, "token")
			writeJSON(b, cache, &configwatch.Document{Version: enc.Version, RoutesHash: enc.RoutesHash, ClustersHash: enc.ClustersHash, Config: *cfg})
			if err := os.WriteFile(token, []byte("token"), 0o600); err != nil {
				b.Fatal(err)
			}
			for range b.N {
				measure(b, nil, "-controller", "http://"+testproc.FreeLoopback(b), "-token-file", token, "-config-cache", cache)
			}
		})
	}
}

// BenchmarkControllerMemory reports the heap the controller's side of
// Cluster(routes) holds in this process, after a collection: the objects
// (as informers keep them), their translation through a Cache, and the
// document published to proxies (MiB-heap).
func BenchmarkControllerMemory(b *testing.B) {
	for _, routes := range []int{5000} {
		b.Run(fmt.Sprintf("routes=%d", routes), func(b *testing.B) {
			for range b.N {
				before := heap()
				snap := Cluster(routes)
				cache := translate.NewCache()
				out := cache.Translate(&translate.Input{Snapshot: *snap, ControllerName: translate.DefaultControllerName, Now: time.Now()})
				srv := configserver.New(configserver.Options{Token: "t", Log: slog.New(slog.DiscardHandler)})
				srv.Publish(&out.Config)
				after := heap()
				runtime.KeepAlive(snap)
				runtime.KeepAlive(cache)
				runtime.KeepAlive(srv)
				b.ReportMetric(float64(after-before)/(1<<20), "MiB-heap")
			}
		})
	}
}

// heap is the bytes of live heap objects, after a collection.
func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// measure starts a proxy with args, waits until it serves, lets it
// settle, and reports its memory and how long it took to serve. With
// traffic, the config the proxy serves, it then sends a request through
// every route of it, lets the proxy settle, scrapes its metrics scrapes
// times, and reports the memory and the scrapes as BenchmarkProxyMemory
// says; without, it reports the memory after one scrape.
func measure(b *testing.B, traffic *proxycfg.Config, args ...string) {
	b.Helper()
	admin, origin := testproc.FreeLoopback(b), testproc.FreeLoopback(b)
	args = append([]string{"-listen", origin, "-admin", admin}, args...)
	cmd := exec.Command(proxyBinary(b), args...)
	cmd.SysProcAttr = testproc.SysProcAttr()
	var logs testproc.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	for deadline := start.Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		res, err := http.Get("http://" + admin + "/readyz")
		if err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("the proxy did not serve within 60s:\n%s", logs.String())
		}
	}
	served := time.Since(start)
	time.Sleep(settle)
	idle, _ := residentSet(b, cmd.Process.Pid)
	b.ReportMetric(float64(served.Milliseconds()), "ms-to-serve")
	if traffic == nil {
		b.ReportMetric(float64(idle)/(1<<20), "MiB-rss")
		scrape(b, admin, false)
		time.Sleep(time.Second)
		scraped, peak := residentSet(b, cmd.Process.Pid)
		b.ReportMetric(float64(scraped)/(1<<20), "MiB-rss-scraped")
		b.ReportMetric(float64(peak)/(1<<20), "MiB-peak")
		return
	}

	sendEveryRoute(b, origin, traffic)
	time.Sleep(settle)
	rss, _ := residentSet(b, cmd.Process.Pid)
	var size int
	var took time.Duration
	for i := range scrapes {
		t0 := time.Now()
		size = len(scrape(b, admin, false))
		took += time.Since(t0)
		if i == 0 {
			// The first scrape builds the registry and the meter
			// provider (Proxy.metricsEndpoint): apart from the others.
			time.Sleep(settle)
			once, _ := residentSet(b, cmd.Process.Pid)
			b.ReportMetric(float64(once)/(1<<20), "MiB-rss-scraped-once")
		}
	}
	time.Sleep(settle)
	scraped, peak := residentSet(b, cmd.Process.Pid)
	text := scrape(b, admin, false)
	zipped := scrape(b, admin, true)
	b.ReportMetric(float64(idle)/(1<<20), "MiB-rss-idle")
	b.ReportMetric(float64(rss)/(1<<20), "MiB-rss")
	b.ReportMetric(float64(scraped)/(1<<20), "MiB-rss-scraped")
	b.ReportMetric(float64(peak)/(1<<20), "MiB-peak")
	b.ReportMetric(float64(size), "scrape-bytes")
	b.ReportMetric(float64(len(zipped)), "scrape-gzip-bytes")
	b.ReportMetric(float64(took.Microseconds())/1000/scrapes, "scrape-ms")
	b.ReportMetric(float64(poolConns(text)), "pool-conns")
}

// sendEveryRoute sends a GET through origin for each route of cfg, with
// the first hostname of the route and the path of its rule's last match
// (Cluster's rule matches a path alone there), from a few clients at
// once; every answer must be 200.
func sendEveryRoute(b *testing.B, origin string, cfg *proxycfg.Config) {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	work := make(chan *proxycfg.Route)
	var failed atomic.Value
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for r := range work {
				ms := r.Rules[0].Matches
				req, _ := http.NewRequest("GET", "http://"+origin+ms[len(ms)-1].Path.Value, nil)
				req.Host = r.Hostnames[0]
				res, err := client.Do(req)
				if err != nil {
					failed.CompareAndSwap(nil, err.Error())
					continue
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					failed.CompareAndSwap(nil, fmt.Sprintf("%s %s%s: %s", r.Name, req.Host, req.URL.Path, res.Status))
				}
			}
		})
	}
	for i := range cfg.Routes {
		work <- &cfg.Routes[i]
	}
	close(work)
	wg.Wait()
	if msg := failed.Load(); msg != nil {
		b.Fatalf("a request through a route failed: %v", msg)
	}
}

// scrape reads the proxy's /metrics at admin, as sent: gzipped when
// zipped asks for it.
func scrape(b *testing.B, admin string, zipped bool) []byte {
	b.Helper()
	req, _ := http.NewRequest("GET", "http://"+admin+"/metrics", nil)
	if zipped {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	// No transparent decompression: the body is read as it came.
	res, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		b.Fatalf("/metrics: %v %v", res.Status, err)
	}
	if zipped && res.Header.Get("Content-Encoding") != "gzip" {
		b.Fatalf("/metrics asked for gzip came as %q", res.Header.Get("Content-Encoding"))
	}
	return body
}

// poolConns adds up the connections the proxy's HTTP/1.1 pools hold, as
// its scrape says: tunnelgate_upstream_pool_connections, or where that is
// not served, tunnelgate_upstream_connections by cluster.
func poolConns(text []byte) int {
	byPool, byCluster := 0, 0
	for line := range strings.SplitSeq(string(text), "\n") {
		name, _, _ := strings.Cut(line, "{")
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		n, err := strconv.Atoi(line[i+1:])
		if err != nil {
			continue
		}
		switch name {
		case "tunnelgate_upstream_pool_connections":
			byPool += n
		case "tunnelgate_upstream_connections":
			byCluster += n
		}
	}
	return max(byPool, byCluster)
}

// residentSet reads a process's resident set and its peak, in bytes.
func residentSet(b *testing.B, pid int) (rss, peak uint64) {
	b.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			b.Fatalf("%s: %v", line, err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	return rss, peak
}

func writeJSON(b *testing.B, path string, v any) {
	b.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		b.Fatal(err)
	}
}

// proxyBinary is the tunnelgate-proxy binary, which proxy Pods run, built
// once per run as `make build` builds it.
func proxyBinary(b *testing.B) string {
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "tunnelgate-memory-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "tunnelgate-proxy")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", built.path, "github.com/tunnelgate/tunnelgate/cmd/tunnelgate-proxy")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		b.Fatal(built.err)
	}
	return built.path
}

var built struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}
