package kubeenv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// process is one control-plane binary run as a child of the test process.
// Its output goes to <dir>/<name>.log, and to Options.Log when set.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	done    chan struct{} // closed when the process has exited
	err     error         // how it exited; read after done
}

// startProcess starts bin with args. It does not wait for readiness.
func startProcess(name, bin string, args []string, dir string, log io.Writer) (*process, error) {
	p := &process{name: name, logPath: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	p.logFile = f
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = childEnv()
	var out io.Writer = f
	if log != nil {
		out = io.MultiWriter(f, testproc.PrefixWriter(name+": ", log))
	}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = testproc.SysProcAttr()
	// A child that hands its pipe to a grandchild must not block Wait forever.
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("kubeenv: start %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// childEnv is the test's environment less what would point the control
// plane elsewhere: proxies (all traffic is loopback) and a kubeconfig.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "KUBECONFIG":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// exited reports the exit as an error if the process has stopped.
func (p *process) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("kubeenv: %s exited (%v); end of its log:\n%s", p.name, p.err, p.tail(30))
	default:
		return nil
	}
}

// stop asks the process to exit, then kills it if it has not after grace.
func (p *process) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail returns the last n lines of the process's log.
func (p *process) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// logContains reports whether the process's log has s, e.g. a port clash.
func (p *process) logContains(s string) bool {
	b, _ := os.ReadFile(p.logPath)
	return bytes.Contains(b, []byte(s))
}

// errPortInUse marks a start that failed because a port chosen for it was
// taken in the meantime; Start then tries again with other ports.
var errPortInUse = errors.New("kubeenv: port taken between choosing and binding it")

// syncWriter serialises writes from several processes' copy goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
