package memory

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
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

// BenchmarkProxyMemory starts a proxy on the config of Cluster(routes) in
// a file and reports its resident set once it has served for a while
// (MiB-rss), the same after a Prometheus scrape of its metrics
// (MiB-rss-scraped), its peak, the decoding and compiling of the config
// included (MiB-peak), and how long it took to serve (ms-to-serve).
func BenchmarkProxyMemory(b *testing.B) {
	for _, routes := range []int{5000} {
		b.Run(fmt.Sprintf("routes=%d", routes), func(b *testing.B) {
			cfg, err := clusterConfig(routes)
			if err != nil {
				b.Fatal(err)
			}
			file := filepath.Join(b.TempDir(), "config.json")
			writeJSON(b, file, cfg)
			for range b.N {
				measure(b, "-config", file)
			}
		})
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
				measure(b, "-controller", "http://"+testproc.FreeLoopback(b), "-token-file", token, "-config-cache", cache)
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
// settle, and reports its memory and how long it took to serve.
func measure(b *testing.B, args ...string) {
	b.Helper()
	admin := testproc.FreeLoopback(b)
	args = append([]string{"-listen", testproc.FreeLoopback(b), "-admin", admin}, args...)
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
	rss, _ := residentSet(b, cmd.Process.Pid)
	res, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	time.Sleep(time.Second)
	scraped, peak := residentSet(b, cmd.Process.Pid)
	b.ReportMetric(float64(served.Milliseconds()), "ms-to-serve")
	b.ReportMetric(float64(rss)/(1<<20), "MiB-rss")
	b.ReportMetric(float64(scraped)/(1<<20), "MiB-rss-scraped")
	b.ReportMetric(float64(peak)/(1<<20), "MiB-peak")
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
