package chart

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tunnelgate/tunnelgate/release/image"
)

// What only a real container runtime shows about the chart's Pods, on the
// real node with the image built from this commit: the security context
// is applied to every container's process as the kernel sees it, and the
// processes work under it; GOMEMLIMIT is the container's memory limit, in
// the process's environment, in its cgroup and in the Go runtime; the
// kubelet starts the proxy (a native sidecar) before cloudflared,
// probes the proxy's readiness, and on a Pod's deletion stops cloudflared
// first, which finishes the requests it had accepted while the proxy
// still runs, and then the proxy: under load no request fails.
func TestChartPodsOnARealRuntime(t *testing.T) {
	const proxyMemory = 300 << 20 // proxy.resources.limits.memory below
	r := startRig(t, "rt", "proxy.resources.limits.memory=300Mi")
	r.dumpPodsOnFailure(t, r.ns)
	app := r.class + "-app"
	r.dumpPodsOnFailure(t, app)
	r.apply(t, echoSite(app, r.class, 1))
	for _, d := range []string{r.controller(), r.proxy()} {
		waitRolledOut(t, r.kube, r.ns, d, 3*time.Minute)
	}
	visitor := r.edge.Client(10 * time.Second)
	eventually(t, 90*time.Second, "the route through the edge", func() error {
		if err := connectorsOf(r, r.proxy(), 2); err != nil {
			return err
		}
		return visitAppOnce(visitor)
	})

	t.Run("security context", func(t *testing.T) {
		for _, pod := range append(podsOf(t, r, "controller"), podsOf(t, r, "proxy")...) {
			for _, cs := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
				checkLockedDown(t, r, pod, cs.Name)
			}
		}
		// The processes work under it: each wrote where it may, the
		// proxy its config cache to its emptyDir, and serves.
		for _, pod := range podsOf(t, r, "proxy") {
			if _, err := os.Stat(containerFile(t, r, pod, "proxy", "/var/cache/tunnelgate/config.json")); err != nil {
				t.Errorf("%s: the proxy's config cache: %v", pod.Name, err)
			}
		}
	})

	t.Run("GOMEMLIMIT", func(t *testing.T) {
		for _, c := range []struct {
			component, container string
			port                 string
			limit                int64
		}{
			{"controller", "controller", "9902", 512 << 20}, // the chart's default
			{"proxy", "proxy", "9901", proxyMemory},
		} {
			for _, pod := range podsOf(t, r, c.component) {
				pid := containerPID(t, r, pod, c.container)
				env := processEnv(t, pid)
				cgroup := memoryLimit(t, pid)
				runtime := gaugeOf(t, "http://"+net.JoinHostPort(pod.Status.PodIP, c.port)+"/metrics", "go_gc_gomemlimit_bytes")
				if env["GOMEMLIMIT"] != strconv.FormatInt(c.limit, 10) || cgroup != c.limit || runtime != c.limit {
					t.Errorf("%s/%s: GOMEMLIMIT %q in its environment, cgroup memory limit %d, Go's limit %d; want all %d",
						pod.Name, c.container, env["GOMEMLIMIT"], cgroup, runtime, c.limit)
				}
			}
		}
	})

	t.Run("sidecar starts first", func(t *testing.T) {
		for _, pod := range podsOf(t, r, "proxy") {
			started := kubeletEvents(t, r, pod, "Started")
			if !(started["proxy"] > 0 && started["cloudflared"] > started["proxy"]) {
				t.Errorf("%s: the kubelet started proxy at %d and cloudflared at %d (ns); want the proxy, the native sidecar, first", pod.Name, started["proxy"], started["cloudflared"])
			}
		}
	})

	t.Run("readiness probe", func(t *testing.T) {
		// A proxy that stops answering (its process stopped) fails its
		// readiness probe, and the kubelet marks the Pod not Ready; once it
		// answers again the Pod is Ready again, and its liveness probe,
		// slower, never restarted it.
		pod := podsOf(t, r, "proxy")[0]
		pid := containerPID(t, r, pod, "proxy")
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		stopped := true
		defer func() {
			if stopped {
				_ = syscall.Kill(pid, syscall.SIGCONT)
			}
		}()
		eventually(t, 30*time.Second, pod.Name+" not Ready while its proxy does not answer", func() error {
			return podReadyIs(t, r, pod.Name, false)
		})
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		stopped = false
		eventually(t, 30*time.Second, pod.Name+" Ready again", func() error {
			return podReadyIs(t, r, pod.Name, true)
		})
		p, err := r.kube.CoreV1().Pods(r.ns).Get(t.Context(), pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cs := range p.Status.InitContainerStatuses {
			if cs.RestartCount != 0 {
				t.Errorf("%s: restarted %d times; a stall shorter than the liveness probe's threshold must not restart it", cs.Name, cs.RestartCount)
			}
		}
	})

	t.Run("deleted under load", func(t *testing.T) {
		checkDeletionUnderLoad(t, r, visitor)
	})
}

// checkDeletionUnderLoad deletes a proxy Pod while visitors' requests run,
// some of them slow (3 s) and in flight through that Pod when it is
// deleted. The kubelet, by the Pod's termination grace, stops cloudflared
// first: it stops taking requests and finishes those it had accepted
// while the proxy still runs; then the proxy. Both exit 0 (neither was
// killed at the grace's end), and no request fails.
func checkDeletionUnderLoad(t *testing.T, r *rig, visitor *http.Client) {
	victim := podsOf(t, r, "proxy")[0]
	cfdPID, proxyPID := containerPID(t, r, victim, "cloudflared"), containerPID(t, r, victim, "proxy")
	load := startLoad(visitor, 2, 100_000)
	defer load.stop()
	time.Sleep(time.Second)

	type result struct {
		remote string
		err    error
	}
	slow := make(chan result, 8)
	for range cap(slow) {
		go func() {
			echo, err := visitEcho(visitor, "http://app.example.com/slow?sleep=3s")
			if err != nil {
				slow <- result{err: err}
				return
			}
			slow <- result{remote: echo.Remote}
		}()
	}
	time.Sleep(500 * time.Millisecond) // the edge has sent them

	// Watch the two processes and the proxy's origin listener, which it
	// closes as soon as it is told to stop: cloudflared must be gone
	// before the proxy stops listening for it, and the proxy exit after.
	var cfdGone, proxyGone, listenerGone time.Time
	var mu sync.Mutex
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			cfd, proxy, listening := alive(cfdPID), alive(proxyPID), listensOn(proxyPID, originPort)
			mu.Lock()
			if !cfd && cfdGone.IsZero() {
				cfdGone = time.Now()
			}
			if !listening && listenerGone.IsZero() {
				listenerGone = time.Now()
			}
			if !proxy && proxyGone.IsZero() {
				proxyGone = time.Now()
			}
			done := !cfdGone.IsZero() && !proxyGone.IsZero()
			mu.Unlock()
			if done {
				return
			}
		}
	}()
	deleted := time.Now()
	if err := r.kube.CoreV1().Pods(r.ns).Delete(t.Context(), victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The last status the kubelet reports before the object goes.
	var last *corev1.Pod
	eventually(t, 2*time.Minute, victim.Name+" removed", func() error {
		p, err := r.kube.CoreV1().Pods(r.ns).Get(t.Context(), victim.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			last = p
			err = errors.New("still there")
		}
		return err
	})
	<-watched
	through := 0
	for range cap(slow) {
		res := <-slow
		if res.err != nil {
			t.Errorf("a slow request in flight when the Pod was deleted: %v", res.err)
			continue
		}
		if host, _, _ := net.SplitHostPort(res.remote); host == victim.Status.PodIP {
			through++
		}
	}
	time.Sleep(2 * time.Second) // and traffic on the Pods left
	total := load.stop()
	mu.Lock()
	defer mu.Unlock()
	since := func(at time.Time) time.Duration { return at.Sub(deleted).Round(10 * time.Millisecond) }
	t.Logf("deleted %s: cloudflared exited after %v, the proxy closed its origin listener after %v and exited after %v; %d of %d slow requests went through it; load: %d requests, %d failed",
		victim.Name, since(cfdGone), since(listenerGone), since(proxyGone), through, cap(slow), total.sent, total.failed)
	switch {
	case cfdGone.IsZero() || proxyGone.IsZero() || listenerGone.IsZero():
		t.Errorf("the Pod's processes did not both exit within 2 minutes (cloudflared at %v, proxy at %v)", cfdGone, proxyGone)
	case listenerGone.Before(cfdGone):
		t.Errorf("the proxy stopped listening for cloudflared (%v) before cloudflared exited (%v): the kubelet stopped it too early", since(listenerGone), since(cfdGone))
	case !cfdGone.Before(proxyGone):
		t.Errorf("the proxy exited (%v) before cloudflared (%v): cloudflared's requests lost their origin", since(proxyGone), since(cfdGone))
	case cfdGone.Sub(deleted) < 2*time.Second:
		t.Errorf("cloudflared exited %v after the deletion: it did not wait for the slow requests in flight", cfdGone.Sub(deleted))
	}
	if through == 0 {
		t.Errorf("no slow request went through %s (%s): the test proves nothing", victim.Name, victim.Status.PodIP)
	}
	if total.failed != 0 || total.sent < 100 {
		t.Errorf("%d of %d requests failed; first failures:\n%s", total.failed, total.sent, strings.Join(load.firstErrors(), "\n"))
	}
	// Both exited of themselves, within the grace: not killed (137).
	if last != nil {
		for _, cs := range append(last.Status.InitContainerStatuses, last.Status.ContainerStatuses...) {
			if term := cs.State.Terminated; term != nil && term.ExitCode != 0 {
				t.Errorf("%s exited %d (%s)", cs.Name, term.ExitCode, term.Reason)
			}
		}
	}
	// (The kubelet's Killing events say nothing of the order: it records
	// one for every container as it starts to stop the Pod, then stops
	// them in turn.)
}

// originPort is the port of the chart's proxies' origin listener on the
// Pod's loopback.
const originPort = 8080

// listensOn reports whether a TCP socket listens on 127.0.0.1:port in the
// network namespace of process pid.
func listensOn(pid, port int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return false
	}
	local := fmt.Sprintf("0100007F:%04X", port)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		// sl local_address rem_address st ...; st 0A is LISTEN
		f := strings.Fields(line)
		if len(f) > 3 && f[1] == local && f[3] == "0A" {
			return true
		}
	}
	return false
}

// checkLockedDown checks, in the process of the Pod's container as the
// kernel sees it, what the chart's securityContext asks: the image's
// non-root user and group with the Pod's fsGroup, no capabilities, no new
// privileges, a seccomp filter (RuntimeDefault), and a read-only root.
func checkLockedDown(t *testing.T, r *rig, pod corev1.Pod, container string) {
	t.Helper()
	pid := containerPID(t, r, pod, container)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(status), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	id := strconv.Itoa(image.UID)
	for k, want := range map[string]string{
		"Uid":        strings.Repeat(id+" ", 3) + id, // runAsUser
		"Gid":        strings.Repeat(id+" ", 3) + id, // runAsGroup
		"CapInh":     "0000000000000000",             // capabilities: drop ALL
		"CapPrm":     "0000000000000000",
		"CapEff":     "0000000000000000",
		"CapBnd":     "0000000000000000",
		"CapAmb":     "0000000000000000",
		"NoNewPrivs": "1", // allowPrivilegeEscalation: false
		"Seccomp":    "2", // a filter: seccompProfile RuntimeDefault
	} {
		if fields[k] != want {
			t.Errorf("%s/%s (pid %d): %s %q, want %q", pod.Name, container, pid, k, fields[k], want)
		}
	}
	if !slices.Contains(strings.Fields(fields["Groups"]), strconv.Itoa(image.GID)) {
		t.Errorf("%s/%s: supplementary groups %q lack the fsGroup %d", pod.Name, container, fields["Groups"], image.GID)
	}
	// readOnlyRootFilesystem: the root is mounted read-only, which holds
	// even for root writing through /proc/PID/root.
	err = os.WriteFile(fmt.Sprintf("/proc/%d/root/written-by-the-test", pid), []byte("x"), 0o644)
	if !errors.Is(err, syscall.EROFS) {
		t.Errorf("%s/%s: writing to the container's root: %v, want %v", pod.Name, container, err, syscall.EROFS)
	}
}

// processEnv is a process's environment.
func processEnv(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// memoryLimit is the memory limit of a process's cgroup (cgroup v1's
// memory controller, as this machine has it; cgroup v2's memory.max).
func memoryLimit(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var file string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if slices.Contains(strings.Split(parts[1], ","), "memory") {
			file = filepath.Join("/sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes")
			break
		}
		if parts[0] == "0" && file == "" {
			file = filepath.Join("/sys/fs/cgroup", parts[2], "memory.max")
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the memory limit of process %d: %v", pid, err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// gaugeOf scrapes url and returns the value of the unlabelled metric name.
func gaugeOf(t *testing.T, url, name string) int64 {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s %s: %v", url, name, err)
			}
			return int64(f)
		}
	}
	t.Fatalf("%s serves no %s", url, name)
	return 0
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// podReadyIs checks the Pod's Ready condition.
func podReadyIs(t *testing.T, r *rig, name string, want bool) error {
	p, err := r.kube.CoreV1().Pods(r.ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && (c.Status == corev1.ConditionTrue) == want {
			return nil
		}
	}
	return fmt.Errorf("Ready is not %v: %+v", want, p.Status.Conditions)
}

// kubeletEvents returns, for each container of the Pod, when the kubelet
// recorded an event of reason about it (Started, Killing), in Unix
// nanoseconds: the time its event recorder put in the event's name
// (<pod>.<hex nanoseconds>), finer than the events' timestamps.
func kubeletEvents(t *testing.T, r *rig, pod corev1.Pod, reason string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	eventually(t, 30*time.Second, "the kubelet's "+reason+" events of "+pod.Name, func() error {
		events, err := r.kube.CoreV1().Events(pod.Namespace).List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + pod.Name + ",reason=" + reason,
		})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Source.Component != "kubelet" || e.InvolvedObject.UID != pod.UID {
				continue
			}
			// spec.initContainers{proxy}, spec.containers{cloudflared}
			fp := e.InvolvedObject.FieldPath
			open, end := strings.IndexByte(fp, '{'), strings.IndexByte(fp, '}')
			at, err := strconv.ParseInt(strings.TrimPrefix(e.Name, pod.Name+"."), 16, 64)
			if open < 0 || end < open || err != nil {
				continue
			}
			out[fp[open+1:end]] = at
		}
		if out["proxy"] == 0 || out["cloudflared"] == 0 {
			return fmt.Errorf("%s events: %v", reason, out)
		}
		return nil
	})
	return out
}
