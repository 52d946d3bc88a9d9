package realbackend

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// Upstream versions of what `make backends` fetches, which name its
// directory in the cache. They must match test/tools/backends/install.sh
// (a test checks).
const (
	LighttpdVersion = "1.4.69"
	NginxVersion    = "1.22.1"
	OpenSSHVersion  = "9.2p1"
)

// Kind names a backend server.
type Kind string

const (
	// Lighttpd is Debian bookworm's lighttpd with a minimal configuration:
	// document root, address and a few MIME types; its URL parsing options
	// (server.http-parseopts) are lighttpd's compiled-in defaults, not the
	// ones Debian's shipped lighttpd.conf sets.
	Lighttpd Kind = "lighttpd"
	// Nginx is Debian bookworm's nginx with one server block: listen and
	// root, nothing else (merge_slashes and the rest at their defaults).
	Nginx Kind = "nginx"
	// Python is `python3 -m http.server --bind 127.0.0.1 PORT --directory
	// ROOT`, the machine's python3: HTTP/1.0, one connection a request.
	Python Kind = "python"
	// GoFileServer is http.FileServer(http.Dir(root)) as the handler of a
	// net/http Server (no ServeMux, as http.ListenAndServe(addr,
	// http.FileServer(...)) runs it), in the test process.
	GoFileServer Kind = "go-fileserver"
)

// All returns every Kind, in the order the package doc's table lists them.
func All() []Kind { return []Kind{Lighttpd, Nginx, Python, GoFileServer} }

// Backend is a server started by Start, serving a directory on loopback
// until its test ends.
type Backend struct {
	Kind Kind
	// Name is the server and its version, for messages: "lighttpd
	// 1.4.69-1", "nginx 1.22.1-9+deb12u7", "python3 3.11.2 http.server",
	// "go1.26.8 net/http FileServer".
	Name string
	// Addr is where it listens: "127.0.0.1:PORT".
	Addr string

	log *logFile
}

// Log returns what the server wrote so far: its error log (nginx,
// lighttpd), its request log (python3) or net/http's (the Go server).
func (b Backend) Log() string {
	if b.log == nil {
		return ""
	}
	return b.log.String()
}

// StartTimeout bounds how long Start waits for a server to answer.
const StartTimeout = 10 * time.Second

// Start starts a backend of the kind given serving root (a directory) on
// 127.0.0.1 at a free port, and returns once it answers HTTP. It is
// stopped when the test ends, and then, if the test failed, the end of
// its log is logged. A child process is killed if the test process dies.
// Start fails the test (it never skips) when it cannot: a missing
// lighttpd or nginx says to run `make backends`.
func Start(t testing.TB, kind Kind, root string) Backend {
	t.Helper()
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		t.Fatalf("realbackend: the document root %q is not a directory (%v)", root, err)
	}
	root, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	var b Backend
	switch kind {
	case GoFileServer:
		b, err = startGo(t, root)
	case Lighttpd, Nginx, Python:
		b, err = startProcess(t, kind, root)
	default:
		err = fmt.Errorf("realbackend: unknown Kind %q (see All)", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Get sends "GET target HTTP/1.1" to b on a connection of its own, with
// target written as it is (no client cleans or escapes it), and returns
// the response's status and body. The request has a Host header and
// Connection: close, nothing more; the whole exchange has 5 seconds.
func (b Backend) Get(target string) (status int, body string, err error) {
	c, err := net.DialTimeout("tcp", b.Addr, 5*time.Second)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: "+b.Addr+"\r\nConnection: close\r\n\r\n"); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodGet})
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(raw), err
}

// CacheDir is where `make backends` puts lighttpd and nginx:
// $TUNNELGATE_BACKENDS_CACHE, by default ~/.cache/tunnelgate/backends.
func CacheDir() (string, error) {
	if d := os.Getenv("TUNNELGATE_BACKENDS_CACHE"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("realbackend: no home directory for the cache (set TUNNELGATE_BACKENDS_CACHE): %w", err)
	}
	return filepath.Join(home, ".cache", "tunnelgate", "backends"), nil
}

// Dir is the tree `make backends` unpacked lighttpd, nginx and OpenSSH
// into, or an error saying to run it.
func Dir() (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "lighttpd-"+LighttpdVersion+"-nginx-"+NginxVersion+"-openssh-"+OpenSSHVersion)
	for _, f := range []string{"usr/sbin/lighttpd", "usr/sbin/nginx", "usr/lib/lighttpd", "usr/sbin/sshd", "usr/bin/ssh", "PACKAGES"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return "", fmt.Errorf("realbackend: %s is missing: run `make backends` in the repository root (fetches Debian bookworm's lighttpd %s, nginx %s and openssh %s packages and unpacks them there; seconds, once per machine)", filepath.Join(dir, f), LighttpdVersion, NginxVersion, OpenSSHVersion)
		}
	}
	return dir, nil
}

// packageVersion is the Debian version of pkg that `make backends`
// unpacked into dir, as its PACKAGES file lists it.
func packageVersion(dir, pkg string) string {
	b, err := os.ReadFile(filepath.Join(dir, "PACKAGES"))
	if err != nil {
		return "?"
	}
	for line := range strings.Lines(string(b)) {
		if name, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && name == pkg {
			return v
		}
	}
	return "?"
}

// libraryPath is LD_LIBRARY_PATH for the binaries in dir: the library
// directories of the packages `make backends` unpacked because the machine
// lacks them (none, usually), before what the environment has.
func libraryPath(dir string) string {
	var dirs []string
	for _, pattern := range []string{"usr/lib/*-linux-gnu*", "lib/*-linux-gnu*"} {
		m, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, d := range m {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				dirs = append(dirs, d)
			}
		}
	}
	if old := os.Getenv("LD_LIBRARY_PATH"); old != "" {
		dirs = append(dirs, old)
	}
	return strings.Join(dirs, ":")
}

// childEnv is the test's environment less proxies (all traffic is
// loopback) and LD_LIBRARY_PATH, plus ld (when not empty) as
// LD_LIBRARY_PATH, and Python's output unbuffered.
func childEnv(ld string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "LD_LIBRARY_PATH":
			continue
		}
		env = append(env, kv)
	}
	if ld != "" {
		env = append(env, "LD_LIBRARY_PATH="+ld)
	}
	return append(env, "PYTHONUNBUFFERED=1")
}

// dirPrefix names a backend's directory (configuration, logs, nginx's
// temporary files) in the temporary directory; the next Start removes one
// a crashed test process left (see testproc.OwnedTempDir).
const dirPrefix = "tunnelgate-realbackend-"

var errPortInUse = errors.New("realbackend: port taken between choosing and binding it")

// startProcess runs lighttpd, nginx or python3, retrying with another
// port when the one chosen was taken before the server bound it.
func startProcess(t testing.TB, kind Kind, root string) (Backend, error) {
	dir, err := testproc.OwnedTempDir(dirPrefix)
	if err != nil {
		return Backend{}, err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for attempt := 1; ; attempt++ {
		b, err := startOnce(t, kind, root, dir)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, errPortInUse) || attempt == 3 {
			return Backend{}, err
		}
	}
}

func startOnce(t testing.TB, kind Kind, root, dir string) (Backend, error) {
	port, err := testproc.FreePort()
	if err != nil {
		return Backend{}, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	b := Backend{Kind: kind, Addr: addr}
	var cmd *exec.Cmd
	switch kind {
	case Lighttpd, Nginx:
		tree, err := Dir()
		if err != nil {
			return Backend{}, err
		}
		if kind == Lighttpd {
			conf := filepath.Join(dir, "lighttpd.conf")
			if err := os.WriteFile(conf, []byte(lighttpdConf(root, port)), 0o600); err != nil {
				return Backend{}, err
			}
			// -D: stay in the foreground; -m: its modules (mod_dirlisting,
			// loaded by default) are in the tree, not in /usr/lib.
			cmd = exec.Command(filepath.Join(tree, "usr/sbin/lighttpd"), "-D", "-f", conf, "-m", filepath.Join(tree, "usr/lib/lighttpd"))
			b.Name = "lighttpd " + packageVersion(tree, "lighttpd")
		} else {
			conf := filepath.Join(dir, "nginx.conf")
			if err := os.WriteFile(conf, []byte(nginxConf(root, dir, port)), 0o600); err != nil {
				return Backend{}, err
			}
			cmd = exec.Command(filepath.Join(tree, "usr/sbin/nginx"), "-p", dir, "-c", conf, "-e", filepath.Join(dir, "nginx.log"))
			b.Name = "nginx " + packageVersion(tree, "nginx")
		}
		cmd.Env = childEnv(libraryPath(tree))
	case Python:
		python, err := exec.LookPath("python3")
		if err != nil {
			return Backend{}, fmt.Errorf("realbackend: python3 is not on PATH: install Python 3 (Debian: apt-get install python3; `make backends` checks for it): %w", err)
		}
		cmd = exec.Command(python, "-m", "http.server", "--bind", "127.0.0.1", strconv.Itoa(port), "--directory", root)
		cmd.Env = childEnv("")
		b.Name = "python3 " + pythonVersion(python) + " http.server"
	}
	b.log = &logFile{path: filepath.Join(dir, string(kind)+".log")}
	// O_APPEND: nginx writes to the same file through paths of its own.
	f, err := os.OpenFile(b.log.path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return Backend{}, err
	}
	defer f.Close() // the child has its own copy
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = testproc.SysProcAttr()
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return Backend{}, fmt.Errorf("realbackend: start %s: %w", b.Name, err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	stop := func() {
		select {
		case <-done:
			return
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	began := time.Now()
	if err := waitReady(addr, done, func() error { return waitErr }); err != nil {
		stop()
		logged := b.log.String()
		if strings.Contains(logged, "in use") {
			return Backend{}, errPortInUse
		}
		return Backend{}, fmt.Errorf("realbackend: %s on %s: %w (after %s); its log:\n%s", b.Name, addr, err, time.Since(began).Round(time.Millisecond), tail(logged, 30))
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("end of %s's log (%s):\n%s", b.Name, addr, tail(b.log.String(), 30))
		}
	})
	return b, nil
}

// waitReady polls addr with a GET until it gets an HTTP response (any
// status), the process exits (done), or StartTimeout passes.
func waitReady(addr string, done <-chan struct{}, waitErr func() error) error {
	probe := Backend{Addr: addr}
	deadline := time.Now().Add(StartTimeout)
	for {
		_, _, err := probe.Get("/")
		if err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("exited before answering (%v)", waitErr())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not answering within %s: %w", StartTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lighttpdConf serves root on 127.0.0.1:port, logging errors to stderr
// (lighttpd -D does when server.errorlog is not set). No server.modules:
// lighttpd loads mod_indexfile, mod_dirlisting and mod_staticfile by
// default. No server.http-parseopts: the defaults are what is tested.
func lighttpdConf(root string, port int) string {
	return fmt.Sprintf(`server.document-root = %q
server.bind = "127.0.0.1"
server.port = %d
mimetype.assign = (
	".txt" => "text/plain",
	".html" => "text/html",
)
`, root, port)
}

// nginxConf serves root on 127.0.0.1:port in one process (no master, so
// nothing switches to the user nobody, who could not read a test's
// private directory), with every file nginx writes in dir: its
// compiled-in paths are under /var.
func nginxConf(root, dir string, port int) string {
	return fmt.Sprintf(`daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log %[1]s/nginx.log notice;
events {
	worker_connections 256;
}
http {
	types {
		text/plain txt;
		text/html html;
	}
	default_type application/octet-stream;
	access_log %[1]s/nginx.log;
	client_body_temp_path %[1]s/client_body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	server {
		listen 127.0.0.1:%[3]d;
		root %[2]s;
	}
}
`, dir, root, port)
}

var (
	pythonOnce sync.Once
	pythonVer  string
)

func pythonVersion(python string) string {
	pythonOnce.Do(func() {
		out, err := exec.Command(python, "-c", "import platform; print(platform.python_version())").Output()
		pythonVer = strings.TrimSpace(string(out))
		if err != nil || pythonVer == "" {
			pythonVer = "?"
		}
	})
	return pythonVer
}

// startGo serves http.FileServer(http.Dir(root)) from this process.
func startGo(t testing.TB, root string) (Backend, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Backend{}, err
	}
	b := Backend{Kind: GoFileServer, Name: runtime.Version() + " net/http FileServer", Addr: l.Addr().String(), log: &logFile{}}
	// As http.ListenAndServe(addr, http.FileServer(http.Dir(root))) serves:
	// no ServeMux, no timeouts; only the error log is caught.
	srv := &http.Server{Handler: http.FileServer(http.Dir(root)), ErrorLog: log.New(b.log, "", log.LstdFlags)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-served
		if t.Failed() {
			if s := b.log.String(); s != "" {
				t.Logf("end of %s's log (%s):\n%s", b.Name, b.Addr, tail(s, 30))
			}
		}
	})
	return b, nil
}

// logFile is a server's log: a file a child writes, or, for the Go
// server, a buffer.
type logFile struct {
	path string
	buf  testproc.SyncBuffer
}

func (l *logFile) Write(p []byte) (int, error) { return l.buf.Write(p) }

func (l *logFile) String() string {
	if l.path == "" {
		return l.buf.String()
	}
	b, err := os.ReadFile(l.path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return string(b)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := bytes.Split(bytes.TrimRight([]byte(s), "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
