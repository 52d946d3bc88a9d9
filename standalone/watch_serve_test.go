// This file implements the tests of reloads as a user sees them: files written, requests served.

package standalone

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// served is a Serve running on loopback for a test.
type served struct {
	t    *testing.T
	dir  string
	addr string

	mu    sync.Mutex
	loads int
	fails int
	log   bytes.Buffer
	// gate, when set, is where the next Loaded call waits, after telling
	// entered.
	gate, entered chan struct{}
}

// serveDir serves dir (the test writes its files) with o's Poll and
// events, and stops Serve when the test ends, checking that it returns
// and leaves no watcher behind.
func serveDir(t *testing.T, dir string, o Options) *served {
	t.Helper()
	s := &served{t: t, dir: dir}
	o.Paths = []string{dir}
	o.Listen = "127.0.0.1:0"
	o.Log = slog.New(slog.NewTextHandler(lockedWriter{&s.mu, &s.log}, nil))
	o.Loaded = func(_ *Result, err error) {
		s.mu.Lock()
		s.loads++
		if err != nil {
			s.fails++
		}
		gate, entered := s.gate, s.entered
		s.gate, s.entered = nil, nil
		s.mu.Unlock()
		if gate != nil {
			close(entered)
			<-gate
		}
	}
	// Cleanups run last first: this one after startServe's has stopped
	// Serve.
	t.Cleanup(func() {
		// Serve returns after its watcher has ended: nothing of it is
		// left. (A goroutine that signalled its end may still be on its
		// way out for a moment, hence the wait.)
		buf := make([]byte, 1<<20)
		deadline := time.Now().Add(10 * time.Second)
		for {
			stacks := string(buf[:runtime.Stack(buf, true)])
			left := ""
			for _, f := range []string{"standalone.(*watcher).run", "standalone.(*inotify).read"} {
				if strings.Contains(stacks, f) {
					left = f
				}
			}
			if left == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s still runs 10 s after Serve returned", left)
				break
			}
			time.Sleep(time.Millisecond)
		}
	})
	s.addr = startServe(t, o, 30*time.Second).Plain
	return s
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (s *served) counts() (loads, fails int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loads, s.fails
}

func (s *served) logged() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// write writes a file in place.
func (s *served) write(name, content string) {
	s.t.Helper()
	path := filepath.Join(s.dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// replace writes a file as editors and kubectl do: a new file renamed
// over the old.
func (s *served) replace(name, content string) {
	s.t.Helper()
	tmp := filepath.Join(s.dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, name)); err != nil {
		s.t.Fatal(err)
	}
}

// body is the response to a request for host: its status and body.
func (s *served) body(host string) (int, string) {
	s.t.Helper()
	return get(s.t, s.addr, host, "/")
}

// waitFor asks until cond holds, for at most 30 s.
func (s *served) waitFor(what string, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitServed waits until host is served by backend (its name), or not
// at all if backend is "".
func (s *served) waitServed(what, host, backend string) {
	s.t.Helper()
	s.waitFor(what, func() bool {
		code, body := s.body(host)
		if backend == "" {
			return code == 404
		}
		return code == 200 && strings.HasPrefix(body, backend+" ")
	})
}

// hostRoute is a route of host to backend.
func hostRoute(name, host, backend string) string {
	return fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %s}
spec:
  parentRefs: [{name: gw}]
  hostnames: [%s]
  rules:
  - backendRefs: [{name: %s, port: 80}]
`, name, host, backend)
}

// watchedDir is a directory with a Gateway and two backends, one and
// two, and a route of a.example.com to one.
func watchedDir(t *testing.T) string {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"gateway.yaml":  serveGateway,
		"backends.yaml": serveBackends(map[string]int{"one": echoBackend(t, "one"), "two": echoBackend(t, "two")}),
		"a.yaml":        hostRoute("a", "a.example.com", "one"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Without file events (none on the system, or inotify's limits
// reached), the files are polled, and a change is still served.
func TestServePollsWithoutEvents(t *testing.T) {
	s := serveDir(t, watchedDir(t), Options{
		Poll:   20 * time.Millisecond,
		events: func() (events, error) { return nil, errors.New("no events here") },
	})
	s.waitServed("the first config", "a.example.com", "one")
	s.replace("a.yaml", hostRoute("a", "a.example.com", "two"))
	s.waitServed("the edit, polled", "a.example.com", "two")
	if log := s.logged(); !strings.Contains(log, "no file events; polling") || !strings.Contains(log, "no events here") {
		t.Errorf("the log does not say why it polls:\n%s", log)
	}
}

// Events that end (a broken inotify) leave polling to see changes.
func TestServePollsWhenEventsEnd(t *testing.T) {
	ended := make(chan struct{})
	s := serveDir(t, watchedDir(t), Options{
		Poll: 20 * time.Millisecond,
		events: func() (events, error) {
			close(ended)
			return endedEvents{ended}, nil
		},
	})
	s.replace("a.yaml", hostRoute("a", "a.example.com", "two"))
	s.waitServed("the edit, polled", "a.example.com", "two")
	s.waitFor("the log to say events ended", func() bool { return strings.Contains(s.logged(), "file events ended") })
}

// endedEvents are events that have ended.
type endedEvents struct{ done chan struct{} }

func (e endedEvents) C() <-chan struct{}                 { return nil }
func (e endedEvents) Watch(paths []string) (bool, error) { return true, nil }
func (e endedEvents) Done() <-chan struct{}              { return e.done }
func (e endedEvents) Close()                             {}

// A broken edit is logged, and the last good config keeps serving; the
// fix is served.
func TestServeKeepsLastGoodConfig(t *testing.T) {
	s := serveDir(t, watchedDir(t), Options{Poll: 20 * time.Millisecond})
	s.waitServed("the first config", "a.example.com", "one")
	s.replace("a.yaml", "kind: HTTPRoute\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {name: a}\nspec: {rules: [{bogus: 1}]}\n")
	s.waitFor("the broken edit to be tried", func() bool { _, fails := s.counts(); return fails > 0 })
	if code, body := s.body("a.example.com"); code != 200 || !strings.HasPrefix(body, "one ") {
		t.Errorf("after a broken edit: %d %q, want the last good config", code, body)
	}
	// Loaded is told before the failure is logged.
	s.waitFor("the failure to be logged", func() bool {
		return strings.Contains(s.logged(), "reload failed; still serving the last good config")
	})
	if log := s.logged(); !strings.Contains(log, "a.yaml:1") {
		t.Errorf("the failure is not logged with its place:\n%s", log)
	}
	s.replace("a.yaml", hostRoute("a", "a.example.com", "two"))
	s.waitServed("the fix", "a.example.com", "two")
}

// Events that cannot watch every directory (inotify's watches used up)
// leave polling at Poll to see what they miss, and the log says so.
func TestServePollsWhenWatchesRunOut(t *testing.T) {
	s := serveDir(t, watchedDir(t), Options{
		Poll:   20 * time.Millisecond,
		events: func() (events, error) { return &limitedEvents{done: make(chan struct{})}, nil },
	})
	s.replace("a.yaml", hostRoute("a", "a.example.com", "two"))
	s.waitServed("the edit, polled", "a.example.com", "two")
	if log := s.logged(); !strings.Contains(log, "some directories are not watched; polling") || !strings.Contains(log, "no space left on device") {
		t.Errorf("the log does not say why it polls:\n%s", log)
	}
}

// limitedEvents are events that never come, from a watch that could
// not watch everything.
type limitedEvents struct{ done chan struct{} }

func (e *limitedEvents) C() <-chan struct{} { return nil }
func (e *limitedEvents) Watch(paths []string) (bool, error) {
	return false, errors.New("no space left on device")
}
func (e *limitedEvents) Done() <-chan struct{} { return e.done }
func (e *limitedEvents) Close()                {}
