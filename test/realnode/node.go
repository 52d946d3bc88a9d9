package realnode

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tunnelgate/tunnelgate/test/kubeenv"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// The node's names and addresses. One node per network namespace: they
// are fixed, and the test's namespace is its own.
const (
	// NodeName is the Node the kubelet registers.
	NodeName = "realnode"
	// NodeIP is the node's InternalIP, on a veth device (no dummy devices
	// here) in the test's namespace; the API server advertises it as the
	// kubernetes Service's endpoint, and the kubelet serves on it.
	NodeIP = "10.87.0.2"
	// DNSIP is the kube-dns Service's ClusterIP, the Pods' nameserver.
	DNSIP = "10.96.0.10"
	// Bridge is the CNI bridge the Pods hang off.
	Bridge = "rn-cni0"
	// nodeLink is the veth holding NodeIP; its peer is nodeLink+"p".
	nodeLink = "rn-node"
)

// PodCIDR is the Pods' address range (host-local IPAM on Bridge).
var PodCIDR = netip.MustParsePrefix("10.88.0.0/16")

// ControlPlane returns opts for a kubeenv control plane a Node can join:
// the controller manager on (EndpointSlices, ServiceAccounts), and the
// API server listening on every address of the test's network namespace
// and advertising NodeIP, so the kubernetes Service has an endpoint that
// Pods reach through kube-proxy (kubeenv's default, no endpoint on
// loopback, leaves them none). Outside a network namespace of the test's
// own, it changes nothing: the API server stays on loopback, and Start
// fails.
func ControlPlane(opts kubeenv.Options) kubeenv.Options {
	opts.ControllerManager = true
	if ok, _ := ownNetworkNamespace(); !ok {
		return opts
	}
	opts.APIServerFlags = append([]string{
		"--bind-address=0.0.0.0",
		"--advertise-address=" + NodeIP,
		"--endpoint-reconciler-type=lease",
	}, opts.APIServerFlags...)
	return opts
}

// ownNetworkNamespace reports whether this process runs in a network
// namespace other than the machine's: pid 1's, or where pid 1 cannot be
// looked at (a VM's init may forbid it), its parent's (test/netns re-runs
// the test binary as a child in a new one).
func ownNetworkNamespace() (bool, error) {
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return false, err
	}
	host, err := os.Readlink("/proc/1/ns/net")
	if err != nil {
		if host, err = os.Readlink(fmt.Sprintf("/proc/%d/ns/net", os.Getppid())); err != nil {
			return false, err
		}
	}
	return self != host, nil
}

// Options say how to run the node.
type Options struct {
	// Log receives every process's output, each line prefixed with its
	// name. Output also always goes to <Dir>/<name>.log. When nil and
	// $TUNNELGATE_TESTENV_LOG is set, os.Stderr.
	Log io.Writer
	// StartTimeout bounds Start; default 3 minutes.
	StartTimeout time.Duration
	// Keep leaves Dir after Stop, as $TUNNELGATE_TESTENV_KEEP does.
	Keep bool
	// NoDNS skips CoreDNS (saves about 4 s).
	NoDNS bool
}

// Node is a running node.
type Node struct {
	// Config is the control plane's admin config; Client uses it.
	Config *rest.Config
	Client kubernetes.Interface
	// Dir holds the node's configuration, state and *.log.
	Dir string

	env              *kubeenv.Env
	opts             Options
	bin              binaries
	log              io.Writer
	cgroup           string // the kubelet's cgroupRoot, without the leading slash
	containerdSocket string
	holder           *process // pid 1 of the node's pid namespace is its child
	init             int      // that child's pid
	containerd       *process
	scheduler        *process
	kubelet          *process
	proxy            *process
	procs            []*process // started, in order; stopped in reverse
	stopOnce         sync.Once
	stopErr          error
}

var nodeCount atomic.Int32

// StartNode runs a node against env (started with ControlPlane's
// options, in a network namespace of the test's own, see test/netns): it
// returns once the Node is Ready, kube-proxy has written its rules and,
// unless NoDNS, CoreDNS is Ready. Call Stop when done. On 2 cores it
// takes about 6 s (1.5 s without CoreDNS).
func StartNode(ctx context.Context, env *kubeenv.Env, opts Options) (_ *Node, err error) {
	if ok, err := ownNetworkNamespace(); err != nil {
		return nil, fmt.Errorf("realnode: which network namespace is this: %w", err)
	} else if !ok {
		return nil, errors.New("realnode: the test must run in a network namespace of its own (test/netns.Run in TestMain, or Shared.Main), not the machine's: the node adds devices, routes and iptables rules there")
	}
	if !strings.HasPrefix(env.Config.Host, "https://127.0.0.1:") {
		return nil, fmt.Errorf("realnode: the API server is at %s; want kubeenv's loopback address", env.Config.Host)
	}
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	if opts.Log == nil && os.Getenv("TUNNELGATE_TESTENV_LOG") != "" {
		opts.Log = os.Stderr
	}
	if os.Getenv("TUNNELGATE_TESTENV_KEEP") != "" {
		opts.Keep = true
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	removeStaleCgroupRoots()
	dir, err := testproc.OwnedTempDir("tgrealnode-")
	if err != nil {
		return nil, err
	}
	n := &Node{
		Config: env.Config, Dir: dir, env: env, opts: opts, bin: bin,
		cgroup:           fmt.Sprintf("%s%d-%d", cgroupPrefix, os.Getpid(), nodeCount.Add(1)),
		containerdSocket: filepath.Join(dir, "containerd", "c.sock"),
	}
	if opts.Log != nil {
		n.log = &syncWriter{w: opts.Log}
	}
	defer func() {
		if err != nil {
			n.Stop()
		}
	}()
	if n.Client, err = kubernetes.NewForConfig(env.Config); err != nil {
		return nil, err
	}
	began := time.Now()
	steps := []struct {
		what string
		do   func(context.Context) error
	}{
		{"network and cgroups", n.setupNetwork},
		{"mount and pid namespaces", n.startHolder},
		{"containerd", n.startContainerd},
		{"kube-scheduler", n.startScheduler},
		{"kubelet", n.startKubelet},
		{"kube-proxy", n.startKubeProxy},
	}
	if !opts.NoDNS {
		steps = append(steps, struct {
			what string
			do   func(context.Context) error
		}{"CoreDNS", n.startCoreDNS})
	}
	for _, s := range steps {
		if err := s.do(ctx); err != nil {
			return nil, err
		}
		n.logf("%s ready after %v", s.what, since(began))
	}
	return n, nil
}

// Start is StartNode for a test, which fails at once if the node cannot
// start; the node stops when the test ends, and the test fails if
// something is left behind.
func Start(t testing.TB, env *kubeenv.Env, opts Options) *Node {
	t.Helper()
	n, err := StartNode(t.Context(), env, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			t.Error(err)
		}
	})
	return n
}

func (n *Node) logf(format string, args ...any) {
	if n.log != nil {
		fmt.Fprintf(n.log, "realnode: "+format+"\n", args...)
	}
}

func since(t time.Time) time.Duration { return time.Since(t).Round(10 * time.Millisecond) }

// env is the node processes' environment: the test's, less proxies and a
// kubeconfig, with the unpacked packages first on PATH.
func (n *Node) childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "KUBECONFIG", "PATH":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PATH="+n.bin.path)
}

// run starts a node program inside the holder's namespaces.
func (n *Node) run(name string, argv ...string) (*process, error) {
	p, err := startIn(n.init, name, argv, n.childEnv(), n.Dir, n.log)
	if err != nil {
		return nil, err
	}
	n.procs = append(n.procs, p)
	return p, nil
}

// setupNetwork gives the test's namespace the node's address on a veth
// pair and a route for the Service CIDR through it (a node's default
// route; the namespace has none, and the machine's network is not
// reached), and turns on forwarding, which the Pods' traffic needs, and
// bridged traffic through iptables, which kube-proxy's rules between Pods
// on one bridge need (both settings are the namespace's own). Then it
// makes the node's cgroups.
func (n *Node) setupNetwork(context.Context) error {
	for _, args := range [][]string{
		{"link", "add", nodeLink, "type", "veth", "peer", "name", nodeLink + "p"},
		{"addr", "add", NodeIP + "/24", "dev", nodeLink},
		{"link", "set", nodeLink, "up"},
		{"link", "set", nodeLink + "p", "up"},
		{"route", "add", kubeenv.ServiceCIDR, "dev", nodeLink, "src", NodeIP},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	for _, s := range []string{"net/ipv4/ip_forward", "net/bridge/bridge-nf-call-iptables"} {
		if err := os.WriteFile("/proc/sys/"+s, []byte("1"), 0o644); err != nil {
			return fmt.Errorf("realnode: %s in the test's network namespace: %w", s, err)
		}
	}
	return makeCgroupRoot(n.cgroup)
}

// The kernel settings the kubelet requires (it checks them, with
// protectKernelDefaults). The machine's differ and are shared, so the
// node's mount namespace covers these files with bind mounts of files
// holding the wanted values.
var kubeletSysctls = map[string]string{
	"vm/overcommit_memory": "1",
	"vm/panic_on_oom":      "0",
	"kernel/panic":         "10",
	"kernel/panic_on_oops": "1",
}

// startHolder makes the node's mount and pid namespaces: unshare forks
// the probe as their pid 1 (it reaps orphans, such as containerd's
// shims), after a shell has mounted, in the new mount namespace only, a
// fresh /proc, tmpfs over /run, /var/lib and /var/log (containerd's shim
// sockets and the kubelet's and CNI's fixed paths land there, never on
// the machine), and the kubelet's kernel settings. Every node program
// then runs inside both namespaces, so when the holder dies (Stop, or the
// test process dying: unshare gets the parent-death signal and
// --kill-child passes it on) the kernel kills them all, containers
// included, and their mounts go with the mount namespace.
func (n *Node) startHolder(ctx context.Context) error {
	probe, err := buildProbe(ctx, n.Dir)
	if err != nil {
		return err
	}
	script := []string{"set -e",
		"mount -t tmpfs -o mode=0755 realnode /run",
		"mount -t tmpfs -o mode=0755 realnode /var/lib",
		"mount -t tmpfs -o mode=0755 realnode /var/log",
	}
	for name, value := range kubeletSysctls {
		f, err := n.writeFile(filepath.Join("sysctl", strings.ReplaceAll(name, "/", ".")), value+"\n")
		if err != nil {
			return err
		}
		script = append(script, fmt.Sprintf("mount --bind %s /proc/sys/%s", f, name))
	}
	script = append(script, "exec "+probe+" pause -name holder")
	n.holder, err = start("holder", []string{"unshare", "--kill-child", "--fork", "--pid", "--mount-proc",
		"--mount", "--propagation", "private", "--", "/bin/sh", "-c", strings.Join(script, "\n")}, n.childEnv(), n.Dir, n.log)
	if err != nil {
		return err
	}
	n.procs = append(n.procs, n.holder)
	return n.waitFor(ctx, "the node's namespaces", func() (bool, error) {
		if !n.holder.logContains("holder: running as uid 0") {
			return false, nil
		}
		n.init = firstChild(n.holder.pid)
		if n.init > 0 {
			// unshare ignores SIGTERM while it waits: stop signals pid 1.
			n.holder.pid = n.init
		}
		return n.init > 0, nil
	}, n.holder)
}

// startContainerd writes the CNI and containerd configurations, starts
// containerd and imports the probe image (the sandbox image).
func (n *Node) startContainerd(ctx context.Context) error {
	if _, err := n.writeFile("cni/net.d/10-realnode.conflist", n.cniConfig()); err != nil {
		return err
	}
	cfg, err := n.writeFile("containerd/config.toml", n.containerdConfig())
	if err != nil {
		return err
	}
	if n.containerd, err = n.run("containerd", n.bin.containerd(), "--config", cfg); err != nil {
		return err
	}
	err = n.waitFor(ctx, "containerd to serve", func() (bool, error) {
		out, err := exec.CommandContext(ctx, n.bin.ctr(), "--address", n.containerdSocket, "version").CombinedOutput()
		return err == nil && strings.Contains(string(out), "Server:"), nil
	}, n.containerd)
	if err != nil {
		return err
	}
	probe, err := os.ReadFile(filepath.Join(n.Dir, "probe"))
	if err != nil {
		return err
	}
	dir := filepath.Join(n.Dir, "images", "probe")
	if err := scratchImage(dir, ProbeImage, "65532:65532", []string{"/probe"}, map[string][]byte{"/probe": probe}); err != nil {
		return fmt.Errorf("realnode: the probe image: %w", err)
	}
	return n.ImportImage(ctx, ProbeImage, dir)
}

// startScheduler runs kube-scheduler as system:kube-scheduler.
func (n *Node) startScheduler(ctx context.Context) error {
	cfg, err := n.env.UserConfig("system:kube-scheduler")
	if err != nil {
		return err
	}
	kc, err := n.writeKubeconfig("scheduler/kubeconfig", cfg)
	if err != nil {
		return err
	}
	n.scheduler, err = n.run("kube-scheduler", n.bin.scheduler(), "--kubeconfig="+kc,
		"--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc,
		"--leader-elect=false", "--bind-address=127.0.0.1")
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: time.Second, Transport: insecureTransport()}
	return n.waitFor(ctx, "kube-scheduler to be healthy", func() (bool, error) {
		resp, err := hc.Get("https://127.0.0.1:10259/healthz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}, n.scheduler)
}

// startKubelet runs the kubelet as system:node:NodeName and waits for the
// Node to be Ready.
func (n *Node) startKubelet(ctx context.Context) error {
	cfg, err := n.env.UserConfig("system:node:"+NodeName, "system:nodes")
	if err != nil {
		return err
	}
	kc, err := n.writeKubeconfig("kubelet/kubeconfig", cfg)
	if err != nil {
		return err
	}
	conf, err := n.writeFile("kubelet/config.yaml", n.kubeletConfig(n.env.CAFile()))
	if err != nil {
		return err
	}
	n.kubelet, err = n.run("kubelet", n.bin.kubelet(), "--config="+conf, "--kubeconfig="+kc,
		"--root-dir="+filepath.Join(n.Dir, "kubelet", "root"), "--hostname-override="+NodeName,
		"--node-ip="+NodeIP, "--v=2")
	if err != nil {
		return err
	}
	return n.waitFor(ctx, "Node "+NodeName+" to be Ready", func() (bool, error) {
		node, err := n.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	}, n.kubelet)
}

// startKubeProxy runs kube-proxy as system:kube-proxy and waits for its
// rules for the kubernetes Service.
func (n *Node) startKubeProxy(ctx context.Context) error {
	cfg, err := n.env.UserConfig("system:kube-proxy")
	if err != nil {
		return err
	}
	kc, err := n.writeKubeconfig("kube-proxy/kubeconfig", cfg)
	if err != nil {
		return err
	}
	conf, err := n.writeFile("kube-proxy/config.yaml", n.kubeProxyConfig(kc))
	if err != nil {
		return err
	}
	if n.proxy, err = n.run("kube-proxy", n.bin.kubeProxy(), "--config="+conf, "--v=2"); err != nil {
		return err
	}
	return n.waitFor(ctx, "kube-proxy's rules for the kubernetes Service", func() (bool, error) {
		rules, err := n.IptablesSave(ctx)
		return err == nil && strings.Contains(rules, "default/kubernetes:https"), nil
	}, n.proxy)
}

// IptablesSave returns the nat and filter tables of the test's network
// namespace, where kube-proxy writes.
func (n *Node) IptablesSave(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, n.bin.iptablesSave())
	cmd.Env = n.childEnv()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("realnode: iptables-save: %w", err)
	}
	return string(out), nil
}

// removeRules deletes from the test's network namespace the iptables
// chains the node made, KUBE-* (kube-proxy's and the kubelet's) and CNI-*
// (the portmap plugin's), and every rule that jumps to them, leaving any
// other rule as it was, then checks none is left.
func (n *Node) removeRules() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rules, err := n.IptablesSave(ctx)
	if err != nil {
		return err
	}
	ours := func(chain string) bool { return strings.HasPrefix(chain, "KUBE-") || strings.HasPrefix(chain, "CNI-") }
	var kept []string
	for _, line := range strings.Split(rules, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && strings.HasPrefix(f[0], ":") && ours(f[0][1:]):
			continue
		case len(f) > 1 && f[0] == "-A" && ours(f[1]):
			continue
		case len(f) > 1 && f[0] == "-A":
			jumps := false
			for i := 2; i+1 < len(f); i++ {
				if (f[i] == "-j" || f[i] == "-g") && ours(f[i+1]) {
					jumps = true
				}
			}
			if jumps {
				continue
			}
		}
		kept = append(kept, line)
	}
	restore := exec.CommandContext(ctx, filepath.Join(n.bin.debDir, "bin", "iptables-restore"))
	restore.Env = n.childEnv()
	restore.Stdin = strings.NewReader(strings.Join(kept, "\n"))
	if out, err := restore.CombinedOutput(); err != nil {
		return fmt.Errorf("realnode: removing the node's iptables rules: %w\n%s", err, out)
	}
	if left, err := n.IptablesSave(ctx); err != nil {
		return err
	} else if strings.Contains(left, "KUBE-") || strings.Contains(left, "CNI-") {
		return fmt.Errorf("realnode: the node's iptables rules are left:\n%s", left)
	}
	return nil
}

// waitFor polls ready every 100 ms until it is true, returns an error, p
// exits, or ctx ends; failures quote the end of p's log.
func (n *Node) waitFor(ctx context.Context, what string, ready func() (bool, error), p *process) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := ready()
		if err != nil {
			return fmt.Errorf("realnode: waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if err := p.exited(); err != nil {
			return fmt.Errorf("realnode: waiting for %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("realnode: waiting for %s: %w; end of the %s log:\n%s\n%s", what, ctx.Err(), p.name, p.tail(40), n.DescribePods(ctx, "kube-system"))
		case <-tick.C:
		}
	}
}

// Logs returns the end of every node program's log, for a failing test.
func (n *Node) Logs(lines int) string {
	var b strings.Builder
	for _, p := range n.procs {
		fmt.Fprintf(&b, "---- end of the %s log\n%s\n", p.name, p.tail(lines))
	}
	return b.String()
}

// ContainerPID returns the pid (as the test sees it) of the first process
// of a running container, found through its cgroup, named by the
// container ID the kubelet reports (containerd://ID).
func (n *Node) ContainerPID(containerID string) (int, error) {
	_, id, ok := strings.Cut(containerID, "://")
	if !ok || id == "" {
		return 0, fmt.Errorf("realnode: container ID %q: want runtime://id", containerID)
	}
	dir, err := findCgroup(n.cgroup, id)
	if err != nil {
		return 0, err
	}
	pids := cgroupPIDs(dir)
	if len(pids) == 0 {
		return 0, fmt.Errorf("realnode: no process in the cgroup of container %s", id)
	}
	return pids[0], nil
}

// Stop stops the node: the programs get SIGTERM then SIGKILL, the
// holder's end kills whatever is left in the node's pid namespace
// (containers too) and takes its mounts with it, then the node's cgroups,
// iptables rules (kube-proxy's, the kubelet's, the CNI plugins'), devices
// and routes are removed, and Dir unless Keep. It returns what it could not undo.
// Safe to call more than once.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() {
		began := time.Now()
		var errs []error
		for i := len(n.procs) - 1; i >= 0; i-- {
			if n.procs[i] != n.holder {
				n.procs[i].stop(10 * time.Second)
				n.logf("%s stopped after %v", n.procs[i].name, since(began))
			}
		}
		if n.holder != nil {
			n.holder.stop(5 * time.Second)
			n.logf("holder stopped after %v", since(began))
		}
		if err := removeCgroupRoot(n.cgroup, 10*time.Second); err != nil {
			errs = append(errs, err)
		}
		if n.holder != nil {
			if err := n.removeRules(); err != nil {
				errs = append(errs, err)
			}
		}
		for _, link := range []string{Bridge, nodeLink} {
			if _, err := os.Stat("/sys/class/net/" + link); err == nil {
				if err := ip("link", "del", link); err != nil {
					errs = append(errs, err)
				}
			}
		}
		n.logf("stopped after %v", since(began))
		if !n.opts.Keep {
			if err := os.RemoveAll(n.Dir); err != nil {
				errs = append(errs, err)
			}
		} else {
			n.logf("kept %s", n.Dir)
		}
		n.stopErr = errors.Join(errs...)
	})
	return n.stopErr
}

// insecureTransport is for health checks of servers with self-signed
// certificates on the node's loopback.
func insecureTransport() *http.Transport {
	return &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // a health check on loopback
}

// ip runs ip(8).
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("realnode: ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

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
