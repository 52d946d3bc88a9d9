package prism

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// Versions of what `make prism` installs, which name its files in the
// cache. PrismVersion must match install.sh and package.json, and
// CloudflareGoVersion go.mod (a test checks both).
const (
	PrismVersion        = "5.16.0"
	CloudflareGoVersion = "v7.9.0"
)

// Options configure a Server. The zero value serves the patched spec,
// trimmed to DefaultPaths.
type Options struct {
	// Unpatched serves Cloudflare's spec as cloudflare-go ships it, without
	// the corrections in spec.go. For the tests that prove each is needed.
	Unpatched bool
	// Paths are the path templates to serve (nil: DefaultPaths).
	Paths []string
	// AllPaths serves all 2,000 paths of the spec instead: about 30 s to
	// start and 500 MB. TUNNELGATE_PRISM_ALL_PATHS=1 sets it for every
	// Server with nil Paths, to check that trimming changes no verdict.
	AllPaths bool
	// Log, if set, also receives Prism's output.
	Log io.Writer
	// StartTimeout bounds the start (default 2 minutes).
	StartTimeout time.Duration
}

func (o Options) paths() []string {
	if o.Paths == nil {
		return DefaultPaths
	}
	return o.Paths
}

// CacheDir is where `make prism` installs Prism and the spec:
// $TUNNELGATE_PRISM_CACHE, by default ~/.cache/tunnelgate/prism.
func CacheDir() (string, error) {
	if d := os.Getenv("TUNNELGATE_PRISM_CACHE"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("prism: no home directory for the cache (set TUNNELGATE_PRISM_CACHE): %w", err)
	}
	return filepath.Join(home, ".cache", "tunnelgate", "prism"), nil
}

// installed returns the paths of Prism and of the spec in the cache, or an
// error saying to run `make prism`.
func installed() (bin, spec string, err error) {
	dir, err := CacheDir()
	if err != nil {
		return "", "", err
	}
	bin = filepath.Join(dir, "prism-cli-"+PrismVersion, "node_modules", ".bin", "prism")
	spec = filepath.Join(dir, "cloudflare-openapi-"+CloudflareGoVersion+".json")
	for _, f := range []string{bin, spec} {
		if _, err := os.Stat(f); err != nil {
			return "", "", fmt.Errorf("prism: %s is missing: run `make prism` in the repository root (installs Prism %s with npm and extracts Cloudflare's OpenAPI spec from cloudflare-go %s; about 15 s once per machine, then cached)", f, PrismVersion, CloudflareGoVersion)
		}
	}
	return bin, spec, nil
}

// Server is a Prism mock server of Cloudflare's API on loopback, behind a
// recording proxy. It validates every request against the spec: a request
// the spec refuses gets 4xx (401 for missing or wrong credentials, 422 for
// a bad body, query or path parameter, 415 for a body that is not JSON, 404
// for a path not served), and the Exchange records Prism's complaint. Its answers are the spec's canned
// examples and it keeps no state: use it to check request shapes, and a
// stateful fake to check behaviour.
type Server struct {
	dir     string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed when Prism has exited
	waitErr error         // how it exited; read after done
	prism   string        // Prism's own base URL
	proxy   *recorder
	http    *http.Server
	url     string
	stop    sync.Once
}

// StartT starts a Server for one test, which fails at once if it cannot,
// and stops it when the test ends; if the test failed, the end of Prism's
// log and the requests it refused are logged first.
func StartT(t testing.TB) *Server {
	t.Helper()
	return StartWithT(t, Options{})
}

// StartWithT is StartT with options.
func StartWithT(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := StartWith(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if r := s.Rejected(); len(r) > 0 {
				var b strings.Builder
				for _, e := range r {
					b.WriteString("\n  " + e.String())
				}
				t.Logf("prism refused %d request(s):%s", len(r), b.String())
			}
			t.Logf("end of prism's log (%s):\n%s", s.logPath, s.LogTail(40))
		}
		s.Stop()
	})
	return s
}

// Start starts Prism with the patched spec trimmed to DefaultPaths and
// returns once it answers. Stop it with Stop; it is killed if the test
// process dies. A missing install is an error that says to run `make prism`.
func Start(ctx context.Context) (*Server, error) { return StartWith(ctx, Options{}) }

// StartWith is Start with options.
func StartWith(ctx context.Context, opts Options) (*Server, error) {
	if os.Getenv("TUNNELGATE_PRISM_ALL_PATHS") == "1" && opts.Paths == nil {
		opts.AllPaths = true
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	bin, source, err := installed()
	if err != nil {
		return nil, err
	}
	doc, err := derivedSpec(source, opts)
	if err != nil {
		return nil, err
	}
	dir, err := testproc.OwnedTempDir(dirPrefix)
	if err != nil {
		return nil, err
	}
	specPath := filepath.Join(dir, "cloudflare-openapi.json")
	if err := os.WriteFile(specPath, doc, 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	// Between freePort closing its port and Prism binding it another
	// process may take it; then try again with another.
	for attempt := 1; ; attempt++ {
		s, err := start(ctx, bin, specPath, dir, opts.Log)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errPortInUse) || attempt == 3 {
			os.RemoveAll(dir)
			return nil, err
		}
	}
}

var errPortInUse = errors.New("prism: port taken between choosing and binding it")

func start(ctx context.Context, bin, specPath, dir string, log io.Writer) (*Server, error) {
	port, err := testproc.FreePort()
	if err != nil {
		return nil, err
	}
	s := &Server{
		dir:     dir,
		logPath: filepath.Join(dir, "prism.log"),
		done:    make(chan struct{}),
		prism:   "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
	}
	f, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	// Request validation is always on in `prism mock`; --errors would only
	// turn the spec's own canned responses that break its schemas into
	// 500s, which says nothing about our requests. Static examples (no
	// --dynamic) keep answers deterministic.
	s.cmd = exec.Command(bin, "mock", specPath, "--host", "127.0.0.1", "--port", strconv.Itoa(port))
	s.cmd.Dir = dir
	s.cmd.Env = childEnv()
	var out io.Writer = f
	if log != nil {
		out = io.MultiWriter(f, log)
	}
	s.cmd.Stdout, s.cmd.Stderr = out, out
	s.cmd.SysProcAttr = testproc.SysProcAttr()
	s.cmd.WaitDelay = 5 * time.Second
	began := time.Now()
	if err := s.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("prism: start %s: %w (is Node.js installed? `make prism` checks)", bin, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		f.Close()
		close(s.done)
	}()
	if err := s.waitReady(ctx); err != nil {
		s.kill()
		if bytes.Contains(s.readLog(), []byte("EADDRINUSE")) {
			return nil, errPortInUse
		}
		return nil, fmt.Errorf("%w (after %s); end of prism's log:\n%s", err, time.Since(began).Round(time.Millisecond), s.LogTail(30))
	}
	if err := s.serveProxy(); err != nil {
		s.kill()
		return nil, err
	}
	return s, nil
}

// waitReady polls until Prism answers HTTP (any status: / is no path).
func (s *Server) waitReady(ctx context.Context) error {
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.prism+"/", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("prism: exited before answering (%v)", s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("prism: not answering on %s: %w", s.prism, ctx.Err())
		case <-tick.C:
		}
	}
}

// URL is the base URL of the API, for cloudflare-go's option.WithBaseURL.
// The spec's paths are served at the root ("/accounts", not
// "/client/v4/accounts"), which is what the SDK appends to it.
func (s *Server) URL() string { return s.url }

// LogPath is the file Prism writes to; it is removed by Stop.
func (s *Server) LogPath() string { return s.logPath }

// LogTail returns the last n lines of Prism's log: for each request, the
// operation it matched and each violation.
func (s *Server) LogTail(n int) string {
	lines := bytes.Split(bytes.TrimRight(s.readLog(), "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

func (s *Server) readLog() []byte {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return []byte("(no log: " + err.Error() + ")")
	}
	return b
}

// Exchanges returns every request the Server has answered, oldest first.
func (s *Server) Exchanges() []Exchange { return s.proxy.all() }

// Rejected returns the requests Prism refused: see Exchange.Rejected.
func (s *Server) Rejected() []Exchange {
	var out []Exchange
	for _, e := range s.proxy.all() {
		if e.Rejected() {
			out = append(out, e)
		}
	}
	return out
}

// Last returns the latest request answered (false before the first).
func (s *Server) Last() (Exchange, bool) {
	all := s.proxy.all()
	if len(all) == 0 {
		return Exchange{}, false
	}
	return all[len(all)-1], true
}

// Stop stops Prism and the proxy and removes the Server's directory.
func (s *Server) Stop() {
	s.stop.Do(func() {
		if s.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = s.http.Shutdown(ctx)
			cancel()
		}
		s.kill()
		os.RemoveAll(s.dir)
	})
}

// kill ends Prism: SIGTERM, then SIGKILL after 2 s.
func (s *Server) kill() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(2 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// childEnv is the test's environment less proxies: all traffic is loopback.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// dirPrefix names a Server's directory (spec, log) in the temporary
// directory; the next Start removes one a crashed test process left (see
// testproc.OwnedTempDir).
const dirPrefix = "tunnelgate-prism-"
