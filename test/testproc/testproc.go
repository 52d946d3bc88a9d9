// Package testproc holds what the test environments that run child
// processes (test/kubeenv: etcd and the Kubernetes servers; test/prism:
// Prism) share: a free loopback port, children that die with the test
// process, and working directories that a crashed test process's
// successor cleans up.
package testproc

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// FreePort asks the kernel for an unused loopback port. Between closing it
// here and a child binding it another process may take it; callers that
// care notice the child's "address already in use" and retry. Within this
// process a port is handed out once: the kernel may offer a port closed a
// moment ago again, and two children told to listen on it would collide.
func FreePort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if _, taken := handedOut.LoadOrStore(port, true); !taken {
			return port, nil
		}
	}
	return 0, errors.New("testproc: no loopback port this process has not handed out already")
}

// handedOut are the ports FreePort returned.
var handedOut sync.Map

// FreeLoopback is a free "127.0.0.1:port" for a child to listen on,
// failing the test when there is none.
func FreeLoopback(t testing.TB) string {
	t.Helper()
	p, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(p)
}

// ownerFile, in each directory OwnedTempDir makes, holds the pid of the
// test process that made it.
const ownerFile = "owner.pid"

// OwnedTempDir makes <TMPDIR>/<prefix>*, marked with this process's pid,
// after removing the directories with that prefix whose process died
// without cleaning up (a panic, a timeout, a kill: its children died with
// it, see SysProcAttr, and only the files remain).
func OwnedTempDir(prefix string) (string, error) {
	RemoveStaleDirs(prefix)
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// RemoveStaleDirs deletes the directories OwnedTempDir made with prefix
// whose process is gone.
func RemoveStaleDirs(prefix string) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue // being made, or not ours
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || pid == os.Getpid() || ProcessAlive(pid) {
			continue
		}
		_ = os.RemoveAll(d)
	}
}

// WaitDead waits up to timeout for pid to have exited (a zombie counts:
// orphans are reaped by init, which may take a moment), and says whether
// it did.
func WaitDead(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for ProcessAlive(pid) && !IsZombie(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}
