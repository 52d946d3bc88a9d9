package realnode

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// process is one program of the node. Inside the node's namespaces it is
// the child of the nsenter that put it there (pid is its own, as the test
// sees it); the holder is started directly.
type process struct {
	name    string
	cmd     *exec.Cmd
	pid     int // the program's pid; cmd's for the holder
	logPath string
	done    chan struct{}
	err     error
}

// start runs argv with env, output to <dir>/<name>.log (and log, if set).
func start(name string, argv, env []string, dir string, log io.Writer) (*process, error) {
	p := &process{name: name, logPath: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Dir = dir
	p.cmd.Env = env
	var out io.Writer = f
	if log != nil {
		out = io.MultiWriter(f, testproc.PrefixWriter(name+": ", log))
	}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = testproc.SysProcAttr()
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("realnode: start %s: %w", name, err)
	}
	p.pid = p.cmd.Process.Pid
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// startIn runs argv inside the namespaces of the holder whose pid 1 is
// init, through nsenter, and finds the program's own pid (nsenter forks
// to enter the pid namespace and waits for it, passing no signal on).
func startIn(init int, name string, argv, env []string, dir string, log io.Writer) (*process, error) {
	full := append([]string{"nsenter", "--target", strconv.Itoa(init), "--mount", "--pid", "--"}, argv...)
	p, err := start(name, full, env, dir, log)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if child := firstChild(p.cmd.Process.Pid); child > 0 {
			p.pid = child
			return p, nil
		}
		if err := p.exited(); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, fmt.Errorf("realnode: %s: nsenter started no program in 10s; its log:\n%s", name, p.tail(20))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// firstChild is pid's first child process, or 0.
func firstChild(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}

// exited reports the exit as an error, with the log's end, if the process
// has stopped.
func (p *process) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("realnode: %s exited (%v); end of its log:\n%s", p.name, p.err, p.tail(40))
	default:
		return nil
	}
}

// stop sends SIGTERM to the program, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(p.pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.kill()
	}
}

// kill sends SIGKILL to the program and its nsenter and waits.
func (p *process) kill() {
	_ = syscall.Kill(p.pid, syscall.SIGKILL)
	_ = p.cmd.Process.Kill()
	<-p.done
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

// logContains reports whether the process's log has s.
func (p *process) logContains(s string) bool {
	b, _ := os.ReadFile(p.logPath)
	return bytes.Contains(b, []byte(s))
}
