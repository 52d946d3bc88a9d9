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
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/internal/pprofgate"
	"github.com/tunnelgate/tunnelgate/test/fixture"
)

// echoBackend answers with its name and the request's X-Added header.
func echoBackend(t *testing.T, name string) (port int) {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s added=%s", name, r.URL.Path, r.Header.Get("X-Added"))
	}))
	t.Cleanup(s.Close)
	return s.Listener.Addr().(*net.TCPAddr).Port
}

// serveGateway starts with a newline and ends with the Gateway's
// listeners, so a test may add to its spec.
var serveGateway = "\n" + fixture.ClassYAML("tunnelgate", translate.DefaultControllerName, "") + "---\n" +
	fixture.GatewayYAML("", "gw", "tunnelgate",
		`{name: http, protocol: HTTP, port: 80, hostname: "*.example.com"}`,
		`{name: other, protocol: HTTP, port: 8080, hostname: "other.test"}`)

func serveBackends(ports map[string]int) string {
	var b strings.Builder
	for name, port := range ports {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Service
metadata: {name: %[1]s}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %[1]s
  labels: {kubernetes.io/service-name: %[1]s}
addressType: IPv4
ports: [{name: http, port: %[2]d}]
endpoints: [{addresses: ["127.0.0.1"]}]
`, name, port)
	}
	return b.String()
}

const serveRoutes = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app}
spec:
  parentRefs: [{name: gw}]
  hostnames: [app.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /v2}}]
    backendRefs: [{name: two, port: 80}]
  - filters:
    - type: RequestHeaderModifier
      requestHeaderModifier: {set: [{name: X-Added, value: "yes"}]}
    backendRefs: [{name: one, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: other}
spec:
  parentRefs: [{name: gw, sectionName: other}]
  rules:
  - backendRefs: [{name: two, port: 80}]
`

func get(t *testing.T, addr, host, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s%s: %v", host, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Standalone mode end to end: YAML files on disk → translate → the data
// plane on a real socket → real backends; then a save without a change
// keeps the version, an edit is picked up, and a broken edit leaves the
// last good config serving.
func TestServeEndToEnd(t *testing.T) {
	dir := t.TempDir()
	// writeAt writes then renames, as editors do, so a reload never sees
	// half a file; a non-zero mtime is set before the rename, so a poll
	// sees one change.
	writeAt := func(name, content string, mtime time.Time) {
		t.Helper()
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if !mtime.IsZero() {
			if err := os.Chtimes(tmp, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, content string) { t.Helper(); writeAt(name, content, time.Time{}) }
	write("gateway.yaml", serveGateway)
	write("backends.yaml", serveBackends(map[string]int{"one": echoBackend(t, "one"), "two": echoBackend(t, "two")}))
	write("routes.yaml", serveRoutes)

	// Each load's error, and the version of what it built.
	var mu sync.Mutex
	var loads []error
	var versions []string
	addr := startServe(t, Options{
		Paths: []string{dir}, Listen: "127.0.0.1:0", Poll: 20 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Loaded: func(res *Result, err error) {
			v := ""
			if err == nil {
				v = res.Output.Config.Version
				// Serve's Encoder, which saw the configs before, agrees
				// with a fresh one.
				if want, err := proxycfg.ContentVersion(&res.Output.Config); err != nil || v != want {
					t.Errorf("version %q, proxycfg.ContentVersion %q, %v", v, want, err)
				}
			}
			mu.Lock()
			loads, versions = append(loads, err), append(versions, v)
			mu.Unlock()
		},
	}, 10*time.Second).Plain

	for _, c := range []struct{ host, path, want string }{
		{"app.example.com", "/v2/x", "two /v2/x added="},
		{"app.example.com", "/x", "one /x added=yes"},
		{"other.test", "/", "two / added="},
	} {
		if code, body := get(t, addr, c.host, c.path); code != 200 || body != c.want {
			t.Errorf("%s%s = %d %q, want 200 %q", c.host, c.path, code, body, c.want)
		}
	}
	if code, _ := get(t, addr, "nope.example.com", "/"); code != 404 {
		t.Errorf("unknown host: %d, want 404", code)
	}

	// waitFor polls until cond holds; reloads take a poll interval or two.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// lastLoad waits for a load after the n-th and returns its version
	// and error.
	lastLoad := func(what string, n int) (string, error) {
		t.Helper()
		var v string
		var err error
		waitFor(what, func() bool {
			mu.Lock()
			defer mu.Unlock()
			if len(loads) <= n {
				return false
			}
			v, err = versions[len(versions)-1], loads[len(loads)-1]
			return true
		})
		return v, err
	}
	mu.Lock()
	n, first := len(loads), versions[0]
	mu.Unlock()
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(first) {
		t.Errorf("version %q, want 32 hex digits", first)
	}

	// The same files saved again: reloaded, the same version. The save
	// gets a time of its own; one in the same timestamp tick as the first
	// write, with the same bytes, is rightly not a change (TestPollFiles).
	writeAt("routes.yaml", serveRoutes, time.Now().Add(time.Minute))
	if v, err := lastLoad("the unchanged save to be read", n); err != nil || v != first {
		t.Errorf("an unchanged save: version %q, %v; want %q", v, err, first)
	}

	// An edit: /v2 now goes to one.
	mu.Lock()
	n = len(loads)
	mu.Unlock()
	write("routes.yaml", strings.Replace(serveRoutes, "backendRefs: [{name: two, port: 80}]\n  - filters", "backendRefs: [{name: one, port: 80}]\n  - filters", 1))
	waitFor("the edit to be served", func() bool {
		_, body := get(t, addr, "app.example.com", "/v2/x")
		return strings.HasPrefix(body, "one ")
	})
	// The proxy serves a config before OnLoad records it: wait for that.
	edited, _ := lastLoad("the edit's load to be recorded", n)
	mu.Lock()
	n = len(loads)
	mu.Unlock()
	if edited == first || edited == "" {
		t.Errorf("the edit is served with version %q, the first was %q", edited, first)
	}

	// A broken edit: the load fails, the last good config keeps serving.
	write("routes.yaml", "kind: HTTPRoute\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {name: bad}\nspec: {rules: [{bogus: 1}]}\n")
	waitFor("the broken edit to be tried", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(loads) > n && loads[len(loads)-1] != nil
	})
	if code, body := get(t, addr, "app.example.com", "/v2/x"); code != 200 || !strings.HasPrefix(body, "one ") {
		t.Errorf("after a broken edit: %d %q, want the last good config", code, body)
	}
}

// Options.Pprof reaches the admin listener: off turns the profiler off,
// and leaves health and metrics there.
func TestServePprofOff(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gateway.yaml"), []byte(serveGateway), 0o644); err != nil {
		t.Fatal(err)
	}
	admin := startServe(t, Options{
		Paths: []string{dir}, Listen: "127.0.0.1:0", Admin: "127.0.0.1:0", Pprof: pprofgate.Off,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, 10*time.Second).Admin
	if code, body := get(t, admin, "admin", "/debug/pprof/"); code != 404 || body != pprofgate.Disabled {
		t.Errorf("/debug/pprof/ with Pprof off: %d %q", code, body)
	}
	if code, _ := get(t, admin, "admin", "/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
}
