package kubelet

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// insecureTransport runs HTTPS readiness probes, which, as the kubelet's,
// do not verify the certificate.
var insecureTransport = &http.Transport{
	TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
	DisableKeepAlives: true,
}

// container is one process of a Pod, restarted in place.
type container struct {
	spec corev1.Container
	// sidecar is an init container with restartPolicy Always: started
	// before the Pod's containers, one after the other once each passes
	// its startup probe, always restarted, and stopped after them.
	sidecar bool

	mu        sync.Mutex
	pid       int
	startedAt time.Time
	exitedAt  time.Time // zero while running or never started
	exitCode  int
	exitCh    chan struct{} // closed when the current process exits
	restarts  int32
	ready     bool
	waiting   *corev1.ContainerStateWaiting // why it is not running
}

// startContainer starts c's process in the Pod's sandbox, its output
// appended to <pod dir>/<container>.log (see logs.go).
func (p *pod) startContainer(c *container) error {
	cmd, err := p.command(c.spec)
	if err != nil {
		c.mu.Lock()
		c.waiting = &corev1.ContainerStateWaiting{Reason: reasonOf(err), Message: err.Error()}
		c.mu.Unlock()
		return err
	}
	out, err := os.OpenFile(p.logPath(c.spec.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	lf := &logFile{f: out}
	stdout, stderr := &lineWriter{log: lf, stream: "stdout"}, &lineWriter{log: lf, stream: "stderr"}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Its own process group, so a signal reaches what it starts too; killed
	// if the test process dies (see sandbox).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.sandbox.start(cmd); err != nil {
		out.Close()
		c.mu.Lock()
		c.waiting = &corev1.ContainerStateWaiting{Reason: "RunContainerError", Message: err.Error()}
		c.mu.Unlock()
		return err
	}
	exited := make(chan struct{})
	c.mu.Lock()
	c.pid, c.startedAt, c.exitedAt, c.exitCh, c.waiting, c.ready = cmd.Process.Pid, time.Now(), time.Time{}, exited, nil, false
	c.mu.Unlock()
	go func() {
		_ = cmd.Wait() // also waits for the output to be copied
		stdout.Flush()
		stderr.Flush()
		out.Close()
		c.mu.Lock()
		c.exitedAt, c.exitCode, c.ready = time.Now(), cmd.ProcessState.ExitCode(), false
		c.mu.Unlock()
		close(exited)
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}()
	return nil
}

// logPath is where a container's output goes.
func (p *pod) logPath(container string) string { return filepath.Join(p.dir, container+".log") }

// errConfig is a container the Kubelet cannot run as specified.
type errConfig struct{ reason, msg string }

func (e *errConfig) Error() string { return e.msg }

func reasonOf(err error) string {
	if e, ok := err.(*errConfig); ok {
		return e.reason
	}
	return "RunContainerError"
}

// command maps the container's image to a program and builds its command
// line and environment. The program is the image's entrypoint, or, for an
// image mapped to an executable (Options.Images) and a container with a
// command, the file the command names in the image (imageExecutable); it
// gets the rest of the command, then the container's args. A registered
// program ignores command. It runs with the container's
// own /etc/hosts (dns.go); its environment has, before the container's
// env (which wins over it), what the Kubelet gives every container: PATH,
// HOSTNAME, the API server (apiaccess.go) and the mounts (volumes.go).
func (p *pod) command(c corev1.Container) (*exec.Cmd, error) {
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOSTNAME=" + p.name,
	}
	if err := p.makeSubPaths(c); err != nil {
		return nil, err
	}
	api, err := p.apiEnv(c)
	if err != nil {
		return nil, err
	}
	env = append(env, api...)
	mounts, err := p.mountsEnv(c)
	if err != nil {
		return nil, err
	}
	env = append(env, mounts)
	var exe string
	var command []string // what comes before the container's args
	if path, ok := lookupImage(p.k.opts.Images, c.Image); ok {
		// A bare name is looked up here, as exec.Command would, not by sh
		// in the container's PATH; and a missing program is a
		// RunContainerError, not a container that exits 127. (A relative
		// path is relative to the Pod's directory, as before.)
		if !strings.Contains(path, "/") || filepath.IsAbs(path) {
			if path, err = exec.LookPath(path); err != nil {
				return nil, &errConfig{"RunContainerError", fmt.Sprintf("image %q: %v", c.Image, err)}
			}
		}
		if exe, command, err = imageExecutable(path, c); err != nil {
			return nil, &errConfig{"RunContainerError", fmt.Sprintf("image %q: %v", c.Image, err)}
		}
	} else if name, ok := registeredImage(c.Image); ok {
		exe = p.k.exe
		env = append(env, envProgram+"="+name)
	} else {
		return nil, &errConfig{"ErrImagePull", fmt.Sprintf("image %q is not mapped to a program (kubelet.Options.Images or kubelet.Register)", c.Image)}
	}
	for _, e := range c.Env {
		v, err := p.envValue(c, e)
		if err != nil {
			return nil, err
		}
		env = append(env, e.Name+"="+p.rewritePath(c, v))
	}
	args := make([]string, 0, len(command)+len(c.Args))
	for _, a := range slices.Concat(command, c.Args) {
		// -flag=/mount/path/file as well as a bare path.
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "-") {
			args = append(args, k+"="+p.rewritePath(c, v))
		} else {
			args = append(args, p.rewritePath(c, a))
		}
	}
	hosts, err := p.writeHosts(c)
	if err != nil {
		return nil, err
	}
	cmd := p.k.tools.withHosts(hosts, exe, args)
	cmd.Env = env
	cmd.Dir = p.dir
	return cmd, nil
}

// imageExecutable is what a container of an image mapped to the
// executable entrypoint runs: entrypoint itself, or, when the container
// has a command (which replaces the image's entrypoint, as on a node),
// the file command[0] names in the image. The entrypoint's directory
// stands for the image's root filesystem, so an image is mapped to a
// directory holding its files (test/chart maps tunnelgate's to the
// Dockerfile's root filesystem, where /tunnelgate-proxy sits beside
// /tunnelgate). rest is the command's other arguments.
func imageExecutable(entrypoint string, c corev1.Container) (exe string, rest []string, err error) {
	if len(c.Command) == 0 {
		return entrypoint, nil, nil
	}
	name := c.Command[0]
	if !path.IsAbs(name) {
		return "", nil, fmt.Errorf("command %q: give the program's absolute path in the image (this kubelet has no PATH to search images with)", name)
	}
	exe = filepath.Join(filepath.Dir(entrypoint), filepath.FromSlash(name))
	st, err := os.Stat(exe)
	if err != nil || st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return "", nil, fmt.Errorf("command %q: the image has no executable %s (looked for %s)", name, name, exe)
	}
	return exe, c.Command[1:], nil
}

func lookupImage(images map[string]string, image string) (string, bool) {
	if path, ok := images[image]; ok {
		return path, true
	}
	path, ok := images[imageName(image)]
	return path, ok
}

// imageName strips an image's digest and tag.
func imageName(image string) string {
	if i := strings.IndexByte(image, '@'); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndexByte(image, ':'); i > strings.LastIndexByte(image, '/') {
		image = image[:i]
	}
	return image
}

func (c *container) running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exitCh != nil && c.exitedAt.IsZero()
}

// backoff is how long an exited container waits before its restart:
// doubling from 100 ms up to 10 s, as CrashLoopBackOff does (faster).
func (c *container) backoff() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := 100 * time.Millisecond << min(c.restarts, 7)
	return min(d, 10*time.Second)
}

// exited reports when the last process exited and whether it did.
func (c *container) exited() (time.Time, int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exitedAt, c.exitCode, !c.exitedAt.IsZero()
}

func (c *container) signal(sig syscall.Signal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.exitCh != nil && c.exitedAt.IsZero() {
		_ = syscall.Kill(-c.pid, sig)
	}
}

func (c *container) waitUntil(deadline time.Time) {
	c.mu.Lock()
	ch := c.exitCh
	c.mu.Unlock()
	if ch == nil {
		return
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

// probe runs c's readiness probe against the Pod's address; without one,
// every declared TCP port must accept a connection. Exec probes are not
// run (they count as passing).
func (c *container) probe(addr netip.Addr) bool {
	if pr := c.spec.ReadinessProbe; pr != nil {
		return c.check(pr, addr)
	}
	for _, p := range c.spec.Ports {
		if p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
			continue
		}
		if !c.dial(addr, intstr.FromInt32(p.ContainerPort)) {
			return c.runningFor() >= unprobedReady
		}
	}
	return true
}

// unprobedReady is how long a container without a readiness probe may
// take to answer on its ports before it counts as ready all the same. A
// kubelet counts such a container ready once it runs; waiting for its
// ports keeps traffic off a program still starting, but a program that
// never listens on a port it declares (the conformance suite's
// connection-error backend does so on purpose) is ready on a node, and
// gets its share of requests.
const unprobedReady = 5 * time.Second

// runningFor is how long c has been running since it last started.
func (c *container) runningFor() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.exitCh == nil || !c.exitedAt.IsZero() {
		return 0
	}
	return time.Since(c.startedAt)
}

// started reports whether c counts as started: running, and past its
// startup probe if it has one.
func (c *container) started(addr netip.Addr) bool {
	if !c.running() {
		return false
	}
	return c.spec.StartupProbe == nil || c.check(c.spec.StartupProbe, addr)
}

// dial reports whether port of the Pod's address accepts a connection.
func (c *container) dial(addr netip.Addr, port intstr.IntOrString) bool {
	n := c.port(port)
	if n == 0 {
		return false
	}
	conn, err := net.DialTimeout("tcp", netip.AddrPortFrom(addr, uint16(n)).String(), time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// check runs one probe's handler once against the Pod's address.
func (c *container) check(pr *corev1.Probe, addr netip.Addr) bool {
	const timeout = time.Second
	switch {
	case pr.HTTPGet != nil:
		n := c.port(pr.HTTPGet.Port)
		if n == 0 {
			return false
		}
		scheme := "http"
		if pr.HTTPGet.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		hc := &http.Client{Timeout: timeout, Transport: insecureTransport}
		res, err := hc.Get(fmt.Sprintf("%s://%s%s", scheme, netip.AddrPortFrom(addr, uint16(n)), pr.HTTPGet.Path))
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode >= 200 && res.StatusCode < 400
	case pr.TCPSocket != nil:
		return c.dial(addr, pr.TCPSocket.Port)
	case pr.GRPC != nil:
		return c.dial(addr, intstr.FromInt32(pr.GRPC.Port))
	}
	return true
}

// port resolves a probe's port, a number or the name of a container port.
func (c *container) port(p intstr.IntOrString) int {
	if p.Type == intstr.Int {
		return p.IntValue()
	}
	for _, cp := range c.spec.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort)
		}
	}
	n, _ := strconv.Atoi(p.StrVal)
	return n
}

// status is c's ContainerStatus.
func (c *container) status() corev1.ContainerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := corev1.ContainerStatus{
		Name: c.spec.Name, Image: c.spec.Image, ImageID: c.spec.Image,
		RestartCount: c.restarts, Ready: c.ready,
	}
	switch {
	case c.waiting != nil:
		w := *c.waiting
		s.State.Waiting = &w
	case c.exitCh == nil:
		s.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	case c.exitedAt.IsZero():
		s.ContainerID = "tunnelgate-test://" + strconv.Itoa(c.pid)
		s.Started = new(true)
		s.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.startedAt)}
	default:
		s.ContainerID = "tunnelgate-test://" + strconv.Itoa(c.pid)
		s.Started = new(false)
		reason := "Completed"
		if c.exitCode != 0 {
			reason = "Error"
		}
		s.State.Terminated = &corev1.ContainerStateTerminated{
			ExitCode: int32(c.exitCode), Reason: reason,
			StartedAt: metav1.NewTime(c.startedAt), FinishedAt: metav1.NewTime(c.exitedAt),
		}
	}
	return s
}
