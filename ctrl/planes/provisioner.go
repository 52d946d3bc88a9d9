// This file implements the Provisioner: Options, Update and the queue.

package planes

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/provision"
)

// Want is a Gateway that is to have a plane, and its parameters.
type Want struct {
	Gateway *gwv1.Gateway
	Params  v1alpha1.GatewayConfigSpec
	// Ports and ClusterIP are provision.Plane's: the listener ports and
	// the pool address of a plane that serves in the cluster.
	Ports     []provision.Port
	ClusterIP string
	// TunnelRotatedAt is provision.Plane's: when the credential of the
	// plane's own tunnel was last rotated, per its token Secret.
	TunnelRotatedAt string
}

// Options configure a Provisioner.
type Options struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	// Install is what every plane shares (images, the config API's URL...).
	Install provision.Install
	// CA is the PEM of the CA that signed the config API's certificate,
	// given to every plane in its credentials Secret.
	CA []byte
	// Workers apply planes at once (default 4).
	Workers int
	// OnChange is called when a plane's State changed (its Deployment's
	// readiness), so the controller translates again.
	OnChange func()
	Log      *slog.Logger
}

// Provisioner applies the planes the leader wants. Its methods are safe
// for concurrent use.
type Provisioner struct {
	opts  Options
	queue workqueue.TypedRateLimitingInterface[types.NamespacedName]
	owned *owned

	mu      sync.Mutex
	leading bool
	wanted  map[types.NamespacedName]Want
	retired map[types.NamespacedName]bool
	applied map[objectKey]appliedObject          // what this replica applied last, while leading
	made    map[types.NamespacedName]credentials // the credentials it wrote last, while leading (credentials.go)
	failed  map[types.NamespacedName]string      // why a plane's last apply failed, for its State

	Stats Stats
}

// Stats count the Provisioner's API writes, for metrics and tests.
type Stats struct {
	Applies, Deletes, Errors atomic.Int64
}

func (s *Stats) add(applies, deletes, errs int) {
	s.Applies.Add(int64(applies))
	s.Deletes.Add(int64(deletes))
	s.Errors.Add(int64(errs))
}

// New builds a Provisioner and the informers of what planes own.
func New(opts Options) (*Provisioner, error) {
	if opts.Kube == nil || opts.Dynamic == nil {
		return nil, errors.New("planes: Kube and Dynamic clients are required")
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	p := &Provisioner{
		opts: opts,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](200*time.Millisecond, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "tunnelgate-planes"}),
		wanted:  map[types.NamespacedName]Want{},
		retired: map[types.NamespacedName]bool{},
		applied: map[objectKey]appliedObject{},
		made:    map[types.NamespacedName]credentials{},
		failed:  map[types.NamespacedName]string{},
	}
	owned, err := newOwned(opts.Kube, p.ownedChanged, p.stateChanged)
	if err != nil {
		return nil, err
	}
	p.owned = owned
	return p, nil
}

// Update is the leader's wish after a translation: the planes wanted, and
// the Gateways that want none (their planes, if any, are deleted). A
// Gateway in neither is left as it is. With leading false nothing is done
// until the next Update that leads, which looks at every plane again.
func (p *Provisioner) Update(leading bool, wanted map[types.NamespacedName]Want, retired []types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !leading {
		if p.leading {
			// A future lead compares everything with the cluster again.
			p.leading, p.applied = false, map[objectKey]appliedObject{}
			p.made = map[types.NamespacedName]credentials{} // another leader may write others
		}
		return
	}
	gained := !p.leading
	p.leading = true
	for key, w := range wanted {
		if old, ok := p.wanted[key]; gained || !ok || !sameWant(old, w) {
			p.queue.Add(key)
		}
	}
	p.wanted = wanted
	for key := range p.failed {
		if _, ok := wanted[key]; !ok {
			delete(p.failed, key) // no plane to report on
		}
	}
	p.retired = make(map[types.NamespacedName]bool, len(retired))
	for _, key := range retired {
		p.retired[key] = true
		if p.owned.hasDeletable(key) {
			p.queue.Add(key)
		}
	}
}

// sameWant reports whether two wishes render the same plane.
func sameWant(a, b Want) bool {
	ga, gb := a.Gateway, b.Gateway
	return ga.UID == gb.UID && ga.Name == gb.Name && ga.Namespace == gb.Namespace &&
		ga.Spec.GatewayClassName == gb.Spec.GatewayClassName &&
		reflect.DeepEqual(ga.Spec.Infrastructure, gb.Spec.Infrastructure) && reflect.DeepEqual(a.Params, b.Params) &&
		slices.Equal(a.Ports, b.Ports) && a.ClusterIP == b.ClusterIP && a.TunnelRotatedAt == b.TunnelRotatedAt
}

// Run starts the informers and the workers until ctx ends.
func (p *Provisioner) Run(ctx context.Context) error {
	defer p.queue.ShutDown()
	p.owned.start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), p.owned.synced()...) {
		return ctx.Err()
	}
	go func() {
		<-ctx.Done()
		p.queue.ShutDown()
	}()
	var wg sync.WaitGroup
	for range p.opts.Workers {
		wg.Go(func() {
			for p.processOne(ctx) {
			}
		})
	}
	wg.Wait()
	return nil
}

func (p *Provisioner) processOne(ctx context.Context) bool {
	key, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(key)
	err := p.sync(ctx, key)
	p.noteFailure(key, err)
	if err != nil {
		p.Stats.add(0, 0, 1)
		p.opts.Log.Warn("plane not applied; retrying", "gateway", key.String(), "retries", p.queue.NumRequeues(key), "err", err)
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

// noteFailure remembers why a plane's apply failed (a quota, an admission
// webhook, a permission), or that it no longer fails, for its State, and
// asks for a translation when that changed: the Gateway's status says it.
func (p *Provisioner) noteFailure(key types.NamespacedName, err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	p.mu.Lock()
	changed := p.failed[key] != msg
	if msg == "" {
		delete(p.failed, key)
	} else {
		p.failed[key] = msg
	}
	p.mu.Unlock()
	if changed {
		p.stateChanged()
	}
}

// sync brings one Gateway's plane to what is wanted of it.
func (p *Provisioner) sync(ctx context.Context, key types.NamespacedName) error {
	p.mu.Lock()
	want, wanted := p.wanted[key]
	leading, retired := p.leading, p.retired[key]
	p.mu.Unlock()
	switch {
	case !leading:
		return nil
	case wanted:
		return p.applyPlane(ctx, want)
	case retired:
		return p.deletePlane(ctx, key)
	}
	return nil
}

// ownedChanged is told of a change someone else made to an object of a
// plane: the plane is applied again.
func (p *Provisioner) ownedChanged(k objectKey, gateway types.NamespacedName, resourceVersion string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.applied[k]; ok && resourceVersion != "" && a.resourceVersion == resourceVersion {
		return // the echo of our own apply
	}
	delete(p.applied, k)
	if p.leading {
		p.queue.Add(gateway)
	}
}

// stateChanged is told that a plane's Deployment status changed.
func (p *Provisioner) stateChanged() {
	if p.opts.OnChange != nil {
		p.opts.OnChange()
	}
}
