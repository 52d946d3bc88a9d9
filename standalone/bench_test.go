// This file implements the benchmark of a file change to its serving.

package standalone

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/fixture"
)

// Routes in the benchmark: benchFiles files of benchPerFile routes each.
// benchIdle is the pause, untimed, before each change.
const (
	benchFiles   = 50
	benchPerFile = 100
	benchIdle    = 150 * time.Millisecond
)

// benchRoute is route j of file f: host r-f-j.example.com, a response
// header X-Rev saying rev, to the echo backend.
func benchRoute(f, j int, rev string) string {
	return fmt.Sprintf(`---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r-%[1]d-%[2]d}
spec:
  parentRefs: [{name: gw}]
  hostnames: [r-%[1]d-%[2]d.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /}}]
    filters:
    - type: ResponseHeaderModifier
      responseHeaderModifier: {set: [{name: X-Rev, value: %[3]q}]}
    backendRefs: [{name: echo, port: 80}]
`, f, j, rev)
}

// benchFile is one file of routes: file f's routes but the deleted
// ones, route edit (if ≥ 0) with revision rev, and an extra route named
// extra if not empty.
type benchFile struct {
	deleted map[int]bool
	edit    int
	rev     string
	extra   string
}

func (bf *benchFile) content(f int) string {
	var b strings.Builder
	for j := range benchPerFile {
		if bf.deleted[j] {
			continue
		}
		rev := "0"
		if j == bf.edit {
			rev = bf.rev
		}
		b.WriteString(benchRoute(f, j, rev))
	}
	if bf.extra != "" {
		fmt.Fprintf(&b, `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %[1]s}
spec:
  parentRefs: [{name: gw}]
  hostnames: [%[1]s.example.com]
  rules:
  - backendRefs: [{name: echo, port: 80}]
`, bf.extra)
	}
	return b.String()
}

// BenchmarkFileChangeToServed is how long a change to one of 50 files of
// 100 HTTPRoutes each (5,000 routes) takes from the file's write, as an
// editor or kubectl replaces it (a new file renamed over the old), to
// the first request over loopback that sees it: a rule edited (a
// response header), a route added, a route deleted. Serve runs with its
// defaults, and each change comes benchIdle after the last was served,
// as a user's edits do, not in a stream. cpu-ms/op is the process's
// CPU time per change: the reload, and the requests that wait for it
// (the pause between changes too); reloads/op is Serve's loads per
// change; loaded-ms/op is the time from the write to the end of the last
// load (its Loaded call, after the proxy took the config), without the
// requests' polling.
//
// Run it with a bounded count: go test -run '^$' -bench FileChangeToServed
// -benchtime 20x ./standalone/. Each wait for a change gives up after
// 20 s.
func BenchmarkFileChangeToServed(b *testing.B) {
	dir := b.TempDir()
	write := func(name, content string) {
		b.Helper()
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			b.Fatal(err)
		}
	}
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	b.Cleanup(echo.Close)
	port := echo.Listener.Addr().(*net.TCPAddr).Port

	write("gateway.yaml", "\n"+fixture.ClassYAML("tunnelgate", translate.DefaultControllerName, "")+"---\n"+
		fixture.GatewayYAML("", "gw", "tunnelgate", `{name: http, protocol: HTTP, port: 80, hostname: "*.example.com"}`))
	write("backends.yaml", serveBackends(map[string]int{"echo": port}))
	files := make([]benchFile, benchFiles)
	name := func(f int) string { return fmt.Sprintf("routes-%02d.yaml", f) }
	for f := range files {
		files[f] = benchFile{deleted: map[int]bool{}, edit: -1}
		write(name(f), files[f].content(f))
	}

	// loads counts Serve's loads; loadedAt is when the last ended.
	var loads, loadedAt atomic.Int64
	addr := startServe(b, Options{
		Paths: []string{dir}, Listen: "127.0.0.1:0",
		Log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Loaded: func(*Result, error) { loads.Add(1); loadedAt.Store(time.Now().UnixNano()) },
	}, 2*time.Minute).Plain
	client := &http.Client{Timeout: 5 * time.Second}
	// get returns the status and X-Rev of a request for host.
	get := func(host string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
		req.Host = host
		resp, err := client.Do(req)
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("X-Rev")
	}
	// waitFor asks until seen holds, for at most 20 s.
	waitFor := func(what string, seen func() bool) {
		b.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !seen() {
			if time.Now().After(deadline) {
				b.Fatalf("%s not served after 20 s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("the first route", func() bool { code, rev := get("r-0-0.example.com"); return code == 200 && rev == "0" })

	// run measures change, which writes a file and returns how a request
	// sees it, op after op.
	run := func(b *testing.B, change func(op int) (what string, seen func() bool)) {
		cpu0, loads0, op := cpuTime(), loads.Load(), 0
		var reloading time.Duration
		for b.Loop() {
			// Each change comes to a Serve at rest: untimed, the last
			// change's settling (status.go) ends.
			b.StopTimer()
			time.Sleep(benchIdle)
			b.StartTimer()
			start := time.Now()
			what, seen := change(op)
			waitFor(what, seen)
			if at := time.Unix(0, loadedAt.Load()); at.After(start) {
				reloading += at.Sub(start)
			}
			op++
		}
		if op > 0 {
			if cpu0 > 0 {
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(op), "cpu-ms/op")
			}
			b.ReportMetric(float64(loads.Load()-loads0)/float64(op), "reloads/op")
			b.ReportMetric(float64(reloading)/float64(time.Millisecond)/float64(op), "loaded-ms/op")
		}
	}
	rev := 0
	b.Run("edit", func(b *testing.B) {
		run(b, func(op int) (string, func() bool) {
			f, j := op%benchFiles, (op/benchFiles)%benchPerFile
			for files[f].deleted[j] {
				j = (j + 1) % benchPerFile
			}
			rev++
			files[f].edit, files[f].rev = j, fmt.Sprint(rev)
			write(name(f), files[f].content(f))
			host, want := fmt.Sprintf("r-%d-%d.example.com", f, j), fmt.Sprint(rev)
			return "an edit", func() bool { code, got := get(host); return code == 200 && got == want }
		})
	})
	added := 0
	b.Run("add", func(b *testing.B) {
		run(b, func(op int) (string, func() bool) {
			f := op % benchFiles
			added++
			files[f].extra = fmt.Sprintf("added-%d", added)
			write(name(f), files[f].content(f))
			host := files[f].extra + ".example.com"
			return "a new route", func() bool { code, _ := get(host); return code == 200 }
		})
	})
	b.Run("delete", func(b *testing.B) {
		run(b, func(op int) (string, func() bool) {
			f := op % benchFiles
			j := 0
			for files[f].deleted[j] || j == files[f].edit {
				j++
			}
			if j >= benchPerFile-1 {
				b.Fatalf("file %d has no route left to delete", f)
			}
			files[f].deleted[j] = true
			write(name(f), files[f].content(f))
			host := fmt.Sprintf("r-%d-%d.example.com", f, j)
			return "a deletion", func() bool { code, _ := get(host); return code == 404 }
		})
	})
}

// BenchmarkVersion is what a reload's content version costs at 5,000
// routes: encoded whole by a fresh Encoder (proxycfg.ContentVersion, what
// a one-shot Build does), or by Serve's Encoder, which saw the config of
// the reload before, one route edited, and reuses the JSON of every
// element Equal to its predecessor's.
func BenchmarkVersion(b *testing.B) {
	dir := b.TempDir()
	write := func(name, content string) {
		b.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write("gateway.yaml", "\n"+fixture.ClassYAML("tunnelgate", translate.DefaultControllerName, "")+"---\n"+
		fixture.GatewayYAML("", "gw", "tunnelgate", `{name: http, protocol: HTTP, port: 80, hostname: "*.example.com"}`))
	write("backends.yaml", serveBackends(map[string]int{"echo": 8080}))
	files := make([]benchFile, benchFiles)
	for f := range files {
		files[f] = benchFile{deleted: map[int]bool{}, edit: -1}
		write(fmt.Sprintf("routes-%02d.yaml", f), files[f].content(f))
	}
	bd := &builder{paths: []string{dir}, listen: "127.0.0.1:80", cache: translate.NewCache()}
	// Two configs, one route apart, as two reloads make them.
	var cfgs [2]*proxycfg.Config
	for i := range cfgs {
		files[7].edit, files[7].rev = 3, fmt.Sprint(i+1)
		write("routes-07.yaml", files[7].content(7))
		res, err := bd.build(time.Now())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bd.settle(res.Output, time.Now()); err != nil {
			b.Fatal(err)
		}
		cfgs[i] = &res.Output.Config
	}
	b.Run("fresh", func(b *testing.B) {
		for b.Loop() {
			if _, err := proxycfg.ContentVersion(cfgs[0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reload", func(b *testing.B) {
		var enc proxycfg.Encoder
		i := 0
		for b.Loop() {
			if _, err := enc.Encode(cfgs[i%2]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
