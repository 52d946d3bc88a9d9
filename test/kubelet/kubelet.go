// Package kubelet is a kubelet stand-in for tests: it runs a cluster's
// Pods as local processes, so kube-controller-manager turns Deployments
// into Pods and Services into EndpointSlices that hold real, reachable
// addresses, and the Pods reach each other, Services and the API server
// as on a cluster.
//
// It registers one Node and keeps its Lease fresh, binds every unscheduled
// Pod to it (there is no scheduler), and gives each Pod what a container
// runtime, kube-proxy and cluster DNS would:
//
//   - a network namespace of its own, joined to a bridge in the test's
//     namespace by a veth pair, with an address from PodCIDR (the bridge
//     takes the first, Pods the ones after 256), so every Pod may bind the
//     same wildcard port;
//
//   - one process per container, mapped from its image (Options.Images,
//     where a container's command names a file beside the image's
//     executable, or a program built into the test binary, see Register),
//     with the container's environment (literal values, the downward
//     API's Pod fields and resourceFieldRef, see downward.go), restarted
//     as its restartPolicy says;
//
//   - Secret, ConfigMap, projected (ServiceAccount token) and emptyDir
//     volumes, written to directories on the host; a container finds them
//     through the paths in its env and args (see volumes.go), or, for a
//     path it learns at runtime, through HostPath; it waits as
//     ContainerCreating for a Secret or ConfigMap that does not exist;
//
//   - Services: every TCP port of every Service with a ClusterIP accepts
//     connections, from the Pods and from the test process, and the
//     Kubelet forwards each to a ready endpoint of the Service's
//     EndpointSlices, round robin; the kubernetes Service forwards to the
//     API server (see services.go). The Service CIDR (Options.ServiceCIDR)
//     is made local to the test's network namespace for that;
//
//   - names: each container has an /etc/hosts of its own, listing its Pod,
//     spec.hostAliases and every Service that has a ClusterIP when it
//     starts, as <svc>.<ns>.svc.cluster.local, <svc>.<ns>.svc, <svc>.<ns>
//     and, in the Pod's namespace, <svc> (see dns.go);
//
//   - the API server: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT,
//     and, for a container that mounts its ServiceAccount's token at the
//     in-cluster path, KUBECONFIG naming a kubeconfig with that token, so
//     client-go's default loading acts as the ServiceAccount (see
//     apiaccess.go);
//
//   - a status the controllers act on: Running, the Pod IP, and Ready once
//     the readiness probe, or else every declared TCP port, answers (or,
//     without a probe, 5 s after the container started, as a program that
//     never listens on a port it declares is ready on a node);
//
//   - native sidecars (init containers with restartPolicy Always), as the
//     kubelet runs them: started before the Pod's containers, one after
//     the other once each is running and past its startup probe; always
//     restarted; their readiness counting toward the Pod's; reported in
//     initContainerStatuses;
//
//   - container logs, served to the API server as a kubelet serves them
//     (pods/log, `kubectl logs`).
//
// Deleting a Pod sends its containers SIGTERM, and once they have exited
// its sidecars, one after the other in the reverse of their order; what is
// still running when the grace period (at most MaxGrace) ends gets SIGKILL,
// and the object is removed. Processes die with the test process.
//
// Not there: init containers that run to completion; exec and liveness
// probes; resource limits (only reported through the downward API);
// securityContext (every process runs as the test's user, root); a DNS
// server (no resolv.conf search path: names resolve only through
// /etc/hosts, so use the names above, and a Service created after a
// container started is not in its hosts file until it restarts); UDP
// Services, NodePorts, session affinity and traffic policies;
// rest.InClusterConfig on its own (it reads a fixed path; KUBECONFIG
// stands in for it). It needs root and util-linux (unshare, mount), and
// is meant to run inside the network namespace of test/netns, whose local
// 10.244.0.0/16 overlaps neither the default PodCIDR nor the Service CIDR.
package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/tunnelgate/tunnelgate/test/kubeenv"
)

// MaxGrace bounds how long a deleted Pod's processes get to stop, whatever
// its terminationGracePeriodSeconds says (30 s by default), so tests that
// scale down do not wait.
const MaxGrace = 5 * time.Second

// Options configure a Kubelet. The zero value works.
type Options struct {
	// NodeName is the Node's name; default "tunnelgate-test-node".
	NodeName string
	// PodCIDR is the Pods' network; default 10.88.0.0/16.
	PodCIDR netip.Prefix
	// Bridge is the name of the bridge device; default "tgpods0".
	Bridge string
	// ServiceCIDR is the Services' ClusterIP range, made local to the
	// test's network namespace so the Kubelet can proxy every ClusterIP
	// (see services.go); default kubeenv.ServiceCIDR, what the API server
	// allocates from.
	ServiceCIDR netip.Prefix
	// Images maps an image, with or without its tag, to an executable: its
	// entrypoint. The executable's directory stands for the image's root
	// filesystem: a container with a command runs the file its first
	// element, an absolute path, names there. An image found neither here
	// nor among the registered programs leaves its Pod Pending with
	// ErrImagePull, as an unknown image would.
	Images map[string]string
	// Dir holds the Pods' directories, <namespace>_<pod>_<uid>/, each the
	// working directory of its containers, with their output
	// (<container>.log), hosts files (<container>.hosts), kubeconfigs
	// (<container>.kubeconfig) and a link to its volumes, which are kept
	// under volumes/ in Dir (a short path, for Unix sockets); default a
	// temporary directory removed by Stop.
	Dir string
	// Log receives the Kubelet's own messages; default discard.
	Log *slog.Logger
}

// Kubelet runs the Pods bound to its Node.
type Kubelet struct {
	opts   Options
	kube   kubernetes.Interface
	net    *podNetwork
	exe    string // the test binary, for registered programs
	tmpDir bool

	factory informers.SharedInformerFactory
	pods    cache.Indexer
	queue   workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex
	running map[string]*pod // by namespace/name

	logServer *http.Server  // pod logs for the API server (logs.go)
	proxy     *serviceProxy // Services (services.go)
	tools     hostsTools    // what puts a container's hosts file in place (dns.go)

	cancel context.CancelFunc
	wg     sync.WaitGroup // the workers, the heartbeat and the proxy's loop
}

// Start registers the Node, sets up the bridge and starts running Pods.
// Stop undoes it.
func Start(ctx context.Context, cfg *rest.Config, opts Options) (*Kubelet, error) {
	if opts.NodeName == "" {
		opts.NodeName = "tunnelgate-test-node"
	}
	if !opts.PodCIDR.IsValid() {
		opts.PodCIDR = netip.MustParsePrefix("10.88.0.0/16")
	}
	if opts.Bridge == "" {
		opts.Bridge = "tgpods0"
	}
	if !opts.ServiceCIDR.IsValid() {
		opts.ServiceCIDR = netip.MustParsePrefix(kubeenv.ServiceCIDR)
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	k := &Kubelet{opts: opts, running: map[string]*pod{}}
	var err error
	if k.exe, err = os.Executable(); err != nil {
		return nil, err
	}
	if k.tools, err = findHostsTools(); err != nil {
		return nil, err
	}
	if k.opts.Dir == "" {
		if k.opts.Dir, err = os.MkdirTemp("", "tunnelgate-kubelet-"); err != nil {
			return nil, err
		}
		k.tmpDir = true
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 100, 200
	if k.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if k.net, err = newPodNetwork(opts.Bridge, opts.PodCIDR); err != nil {
		return nil, err
	}
	logPort, err := k.serveLogs()
	if err != nil {
		k.net.close()
		return nil, fmt.Errorf("serving pod logs: %w", err)
	}
	if err := k.registerNode(ctx, logPort); err != nil {
		k.logServer.Close()
		k.net.close()
		return nil, fmt.Errorf("registering node %s: %w", opts.NodeName, err)
	}

	k.factory = informers.NewSharedInformerFactory(k.kube, 0)
	services, slices := k.factory.Core().V1().Services(), k.factory.Discovery().V1().EndpointSlices()
	k.proxy, err = newServiceProxy(opts.Log, opts.ServiceCIDR, cfg.Host, services.Lister(), slices.Lister())
	if err != nil {
		k.logServer.Close()
		k.net.close()
		return nil, err
	}

	runCtx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	podInformer := k.factory.Core().V1().Pods().Informer()
	k.pods = podInformer.GetIndexer()
	k.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			k.queue.Add(key)
		}
	}
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		cancel()
		k.proxy.close()
		k.logServer.Close()
		k.net.close()
		return nil, err
	}
	poke := func(any) { k.proxy.changed() }
	if _, err := services.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    poke,
		UpdateFunc: func(_, obj any) { poke(obj) },
		DeleteFunc: poke,
	}); err != nil {
		cancel()
		k.proxy.close()
		k.logServer.Close()
		k.net.close()
		return nil, err
	}
	k.factory.Start(runCtx.Done())
	// The Services and EndpointSlices too, so the proxy starts with them
	// all and a container's first start finds the kubernetes Service.
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.HasSynced, services.Informer().HasSynced, slices.Informer().HasSynced) {
		k.Stop()
		return nil, errors.New("kubelet: the Pod, Service and EndpointSlice informers did not sync")
	}
	k.wg.Add(4)
	go func() { defer k.wg.Done(); k.heartbeat(runCtx) }()
	go func() { defer k.wg.Done(); k.proxy.run(runCtx) }()
	go func() { defer k.wg.Done(); k.worker(runCtx) }()
	go func() { defer k.wg.Done(); k.worker(runCtx) }()
	return k, nil
}

// NodeName is the name of the Kubelet's Node.
func (k *Kubelet) NodeName() string { return k.opts.NodeName }

// HostAddr is the address Pods reach the test's own processes at: the
// bridge's, their default route.
func (k *Kubelet) HostAddr() netip.Addr { return k.net.gateway }

// Stop kills every Pod's processes, stops proxying Services, removes the
// bridge and the Service CIDR's route and stops watching.
// The Node and Pod objects stay, as they would if a node died.
func (k *Kubelet) Stop() {
	k.cancel()
	k.queue.ShutDown()
	k.factory.Shutdown()
	k.wg.Wait()
	k.mu.Lock()
	pods := k.running
	k.running = map[string]*pod{}
	k.mu.Unlock()
	for _, p := range pods {
		p.stop(0)
	}
	k.proxy.close()
	k.logServer.Close()
	k.net.close()
	if k.tmpDir {
		os.RemoveAll(k.opts.Dir)
	}
}

func (k *Kubelet) worker(ctx context.Context) {
	for {
		key, quit := k.queue.Get()
		if quit {
			return
		}
		if err := k.sync(ctx, key); err != nil {
			k.opts.Log.Warn("pod sync failed, retrying", "pod", key, "err", err)
			k.queue.AddRateLimited(key)
		} else {
			k.queue.Forget(key)
		}
		k.queue.Done(key)
	}
}

// sync brings the Pod named key to what its object says: bound, running,
// or stopped and removed.
func (k *Kubelet) sync(ctx context.Context, key string) error {
	obj, exists, err := k.pods.GetByKey(key)
	if err != nil {
		return err
	}
	k.mu.Lock()
	p := k.running[key]
	k.mu.Unlock()
	if !exists {
		// Removed without us (a forced deletion, or our own final one):
		// its processes must not outlive it.
		if p != nil {
			k.forget(key, p)
			p.stop(0)
		}
		return nil
	}
	obj1 := obj.(*corev1.Pod)
	if p != nil && p.uid != obj1.UID {
		// Same name, new Pod (a StatefulSet's replacement).
		k.forget(key, p)
		p.stop(0)
		p = nil
	}
	switch {
	case obj1.Spec.NodeName == "":
		if obj1.DeletionTimestamp != nil {
			return nil
		}
		return k.bind(ctx, obj1)
	case obj1.Spec.NodeName != k.opts.NodeName:
		return nil
	case obj1.DeletionTimestamp != nil:
		if p == nil {
			return k.deleteNow(ctx, obj1)
		}
		p.terminate(graceOf(obj1), func() {
			k.forget(key, p)
			if err := k.deleteNow(context.Background(), obj1); err != nil {
				k.opts.Log.Warn("removing a stopped pod", "pod", key, "err", err)
			}
		})
		return nil
	case p == nil && !isTerminal(obj1):
		p, err := k.newPod(obj1)
		if err != nil {
			return err
		}
		k.mu.Lock()
		k.running[key] = p
		k.mu.Unlock()
		go p.run() // until p.stop
	}
	return nil
}

func (k *Kubelet) forget(key string, p *pod) {
	k.mu.Lock()
	if k.running[key] == p {
		delete(k.running, key)
	}
	k.mu.Unlock()
}

// graceOf is how long a deleted Pod's processes get, bounded by MaxGrace.
func graceOf(p *corev1.Pod) time.Duration {
	g := MaxGrace
	if s := p.DeletionGracePeriodSeconds; s != nil && time.Duration(*s)*time.Second < g {
		g = time.Duration(*s) * time.Second
	}
	return g
}

func isTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
