package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// bind assigns an unscheduled Pod to our Node, as the scheduler would.
func (k *Kubelet) bind(ctx context.Context, p *corev1.Pod) error {
	if s := p.Spec.SchedulerName; s != "" && s != corev1.DefaultSchedulerName {
		return nil // another scheduler's Pod
	}
	err := k.kube.CoreV1().Pods(p.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, UID: p.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: k.opts.NodeName},
	}, metav1.CreateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // bound meanwhile, or gone
	}
	return err
}

// deleteNow removes a Pod object whose processes have stopped.
func (k *Kubelet) deleteNow(ctx context.Context, p *corev1.Pod) error {
	err := k.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &p.UID},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// pod is a Pod this Kubelet runs.
type pod struct {
	k         *Kubelet
	uid       types.UID
	namespace string
	name      string
	spec      corev1.PodSpec
	dir       string
	sandbox   *sandbox
	started   metav1.Time

	mu          sync.Mutex
	volumes     map[string]string // volume name -> directory, once set up
	containers  []*container
	ready       bool
	terminating bool
	written     *corev1.PodStatus // the last status written

	wake chan struct{} // a container exited, or the Pod is terminating
	quit chan struct{} // closed when run must return
	done chan struct{} // closed when run has returned
}

func (k *Kubelet) newPod(obj *corev1.Pod) (*pod, error) {
	p := &pod{
		k: k, uid: obj.UID, namespace: obj.Namespace, name: obj.Name, spec: *obj.Spec.DeepCopy(),
		dir:     filepath.Join(k.opts.Dir, obj.Namespace+"_"+obj.Name+"_"+string(obj.UID)),
		started: metav1.Now(),
		wake:    make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, err
	}
	sb, err := k.net.newSandbox()
	if err != nil {
		return nil, err
	}
	p.sandbox = sb
	// Sidecars first, in order, then the Pod's containers: the order they
	// start in, and the reverse of the order sidecars stop in.
	for _, c := range obj.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			p.containers = append(p.containers, &container{spec: c, sidecar: true})
		}
	}
	for _, c := range obj.Spec.Containers {
		p.containers = append(p.containers, &container{spec: c})
	}
	return p, nil
}

// run starts the containers, restarts them as the restartPolicy says,
// probes readiness and writes the status, until stop.
func (p *pod) run() {
	defer close(p.done)
	log := p.k.opts.Log.With("pod", p.namespace+"/"+p.name)
	if !p.waitVolumes() {
		return
	}
	if !p.startSidecars(log) {
		return
	}
	for _, c := range p.containers {
		if c.sidecar {
			continue
		}
		if err := p.startContainer(c); err != nil {
			log.Warn("starting a container", "container", c.spec.Name, "err", err)
		}
	}
	probeEvery := 100 * time.Millisecond
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			return
		case <-p.wake:
		case <-t.C:
		}
		p.restartExited(log)
		p.probe()
		if err := p.writeStatus(); err != nil {
			log.Warn("writing the pod status", "err", err)
		}
		if p.isReady() {
			probeEvery = time.Second
		}
		t.Reset(probeEvery)
	}
}

// startSidecars starts the sidecars one after the other, each once the
// one before it has started (running, and past its startup probe), as
// the kubelet does: a sidecar that exits meanwhile is restarted. It says
// whether to go on: false when the Pod is stopped meanwhile.
func (p *pod) startSidecars(log interface {
	Warn(string, ...any)
}) bool {
	for _, c := range p.containers {
		if !c.sidecar {
			continue
		}
		if err := p.startContainer(c); err != nil {
			log.Warn("starting a sidecar", "container", c.spec.Name, "err", err)
		}
		for !c.started(p.sandbox.addr) {
			select {
			case <-p.quit:
				return false
			case <-p.wake:
			case <-time.After(100 * time.Millisecond):
			}
			p.restartExited(log)
			if err := p.writeStatus(); err != nil {
				log.Warn("writing the pod status", "err", err)
			}
		}
	}
	return true
}

// waitVolumes sets up the volumes, retrying while a Secret or ConfigMap is
// missing (the containers wait as ContainerCreating, saying why), and says
// whether to go on: false when the Pod is stopped meanwhile.
func (p *pod) waitVolumes() bool {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := p.setupVolumes(ctx)
		cancel()
		if err == nil {
			return true
		}
		p.k.opts.Log.Debug("volumes not ready", "pod", p.String(), "err", err)
		w := &corev1.ContainerStateWaiting{Reason: reasonOf(err), Message: err.Error()}
		if w.Reason == "RunContainerError" {
			w.Reason = "ContainerCreating"
		}
		p.mu.Lock()
		for _, c := range p.containers {
			c.mu.Lock()
			c.waiting = w
			c.mu.Unlock()
		}
		p.mu.Unlock()
		if err := p.writeStatus(); err != nil {
			p.k.opts.Log.Warn("writing the pod status", "pod", p.String(), "err", err)
		}
		select {
		case <-p.quit:
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (p *pod) isReady() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ready
}

// restartExited starts again the containers that exited, after their
// back-off, when the restartPolicy wants it.
func (p *pod) restartExited(log interface {
	Warn(string, ...any)
}) {
	p.mu.Lock()
	if p.terminating {
		p.mu.Unlock()
		return
	}
	var due []*container
	for _, c := range p.containers {
		at, code, ok := c.exited()
		if !ok {
			continue
		}
		policy := p.spec.RestartPolicy
		if c.sidecar {
			policy = corev1.RestartPolicyAlways
		}
		if policy == corev1.RestartPolicyNever || policy == corev1.RestartPolicyOnFailure && code == 0 {
			continue
		}
		if time.Since(at) >= c.backoff() {
			due = append(due, c)
		}
	}
	p.mu.Unlock()
	for _, c := range due {
		c.mu.Lock()
		c.restarts++
		c.mu.Unlock()
		if err := p.startContainer(c); err != nil {
			log.Warn("restarting a container", "container", c.spec.Name, "err", err)
		}
	}
}

// terminate stops the Pod gracefully in the background and then calls
// after. A second call does nothing.
func (p *pod) terminate(grace time.Duration, after func()) {
	p.mu.Lock()
	if p.terminating {
		p.mu.Unlock()
		return
	}
	p.terminating = true
	p.mu.Unlock()
	go func() {
		p.stop(grace)
		after()
	}()
}

// stop sends the Pod's containers SIGTERM and waits for them, then does
// the same with each sidecar in the reverse of their order, all within
// grace, as the kubelet stops a Pod; then it kills what is left with the
// sandbox.
func (p *pod) stop(grace time.Duration) {
	p.mu.Lock()
	p.terminating = true
	p.mu.Unlock()
	select {
	case <-p.quit:
	default:
		close(p.quit)
	}
	<-p.done
	deadline := time.Now().Add(grace)
	for _, c := range p.containers {
		if !c.sidecar {
			c.signal(syscall.SIGTERM)
		}
	}
	for _, c := range p.containers {
		if !c.sidecar {
			c.waitUntil(deadline)
		}
	}
	for i := len(p.containers) - 1; i >= 0; i-- {
		if c := p.containers[i]; c.sidecar {
			c.signal(syscall.SIGTERM)
			c.waitUntil(deadline)
		}
	}
	for _, c := range p.containers {
		c.signal(syscall.SIGKILL)
	}
	for _, c := range p.containers {
		c.waitUntil(time.Now().Add(5 * time.Second))
	}
	p.sandbox.close()
}

// probe updates readiness: every container running and passing its
// readiness probe, or else answering on all its TCP ports.
func (p *pod) probe() {
	ready := true
	p.mu.Lock()
	cs := slices.Clone(p.containers)
	p.mu.Unlock()
	for _, c := range cs {
		ok := c.running() && c.probe(p.sandbox.addr)
		c.mu.Lock()
		c.ready = ok
		c.mu.Unlock()
		ready = ready && ok
	}
	p.mu.Lock()
	p.ready = ready && !p.terminating
	p.mu.Unlock()
}

// writeStatus writes the Pod's status when it changed since the last write.
func (p *pod) writeStatus() error {
	status := p.status()
	if p.written != nil && statusEqual(*p.written, status) {
		return nil
	}
	pods := p.k.kube.CoreV1().Pods(p.namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pods.Get(context.Background(), p.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != p.uid {
			return nil // replaced; the sync loop stops us
		}
		cur.Status = mergeStatus(cur.Status, status)
		_, err = pods.UpdateStatus(context.Background(), cur, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		p.written = &status
	}
	return err
}

// status is what the Pod's processes say, with transition times kept from
// the last write.
func (p *pod) status() corev1.PodStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := metav1.Now()
	s := corev1.PodStatus{
		Phase:     corev1.PodRunning,
		HostIP:    p.k.net.gateway.String(),
		HostIPs:   []corev1.HostIP{{IP: p.k.net.gateway.String()}},
		PodIP:     p.sandbox.addr.String(),
		PodIPs:    []corev1.PodIP{{IP: p.sandbox.addr.String()}},
		StartTime: &p.started,
	}
	allExited, anyFailed := true, false
	for _, c := range p.containers {
		cs := c.status()
		if c.sidecar {
			// Sidecars are init containers: they are reported there, and
			// only their readiness counts toward the Pod's.
			s.InitContainerStatuses = append(s.InitContainerStatuses, cs)
			continue
		}
		s.ContainerStatuses = append(s.ContainerStatuses, cs)
		if cs.State.Terminated == nil {
			allExited = false
		} else if cs.State.Terminated.ExitCode != 0 {
			anyFailed = true
		}
	}
	if allExited && len(p.containers) > 0 && p.spec.RestartPolicy != corev1.RestartPolicyAlways {
		if anyFailed && p.spec.RestartPolicy == corev1.RestartPolicyNever {
			s.Phase = corev1.PodFailed
		} else if !anyFailed {
			s.Phase = corev1.PodSucceeded
		}
	}
	ready := corev1.ConditionFalse
	if p.ready {
		ready = corev1.ConditionTrue
	}
	for _, c := range []struct {
		t      corev1.PodConditionType
		status corev1.ConditionStatus
	}{
		{corev1.PodReadyToStartContainers, corev1.ConditionTrue},
		{corev1.PodInitialized, corev1.ConditionTrue},
		{corev1.ContainersReady, ready},
		{corev1.PodReady, ready},
		{corev1.PodScheduled, corev1.ConditionTrue},
	} {
		cond := corev1.PodCondition{Type: c.t, Status: c.status, LastTransitionTime: now}
		if p.written != nil {
			for _, old := range p.written.Conditions {
				if old.Type == c.t && old.Status == c.status {
					cond.LastTransitionTime = old.LastTransitionTime
				}
			}
		}
		s.Conditions = append(s.Conditions, cond)
	}
	return s
}

// mergeStatus puts ours over cur, keeping what the API server owns
// (qosClass) and what other writers add (conditions of other types).
func mergeStatus(cur, ours corev1.PodStatus) corev1.PodStatus {
	out := ours
	out.QOSClass = cur.QOSClass
	for _, c := range cur.Conditions {
		if !slices.ContainsFunc(ours.Conditions, func(o corev1.PodCondition) bool { return o.Type == c.Type }) {
			out.Conditions = append(out.Conditions, c)
		}
	}
	return out
}

// statusEqual compares what a status write would change.
func statusEqual(a, b corev1.PodStatus) bool {
	if a.Phase != b.Phase || a.PodIP != b.PodIP || len(a.Conditions) != len(b.Conditions) ||
		len(a.ContainerStatuses) != len(b.ContainerStatuses) || len(a.InitContainerStatuses) != len(b.InitContainerStatuses) {
		return false
	}
	for i := range a.Conditions {
		if a.Conditions[i].Type != b.Conditions[i].Type || a.Conditions[i].Status != b.Conditions[i].Status {
			return false
		}
	}
	for i, x := range a.InitContainerStatuses {
		if !containerStatusEqual(x, b.InitContainerStatuses[i]) {
			return false
		}
	}
	for i := range a.ContainerStatuses {
		if !containerStatusEqual(a.ContainerStatuses[i], b.ContainerStatuses[i]) {
			return false
		}
	}
	return true
}

// containerStatusEqual compares what a status write would change of one
// container.
func containerStatusEqual(x, y corev1.ContainerStatus) bool {
	return x.Ready == y.Ready && x.RestartCount == y.RestartCount && x.ContainerID == y.ContainerID &&
		(x.State.Running == nil) == (y.State.Running == nil) &&
		(x.State.Waiting == nil) == (y.State.Waiting == nil) &&
		(x.State.Waiting == nil || x.State.Waiting.Reason == y.State.Waiting.Reason && x.State.Waiting.Message == y.State.Waiting.Message) &&
		(x.State.Terminated == nil) == (y.State.Terminated == nil)
}

func (p *pod) String() string { return fmt.Sprintf("%s/%s", p.namespace, p.name) }
