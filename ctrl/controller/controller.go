// This file implements the controller: its queue, worker and the steps of
// a sync.

package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Publisher takes every translated proxy config (the config server):
// the shared proxies', and each dedicated plane's with its token.
type Publisher interface {
	Publish(cfg *proxycfg.Config) (version string)
	PublishPlanes(planes map[string]configserver.Plane)
}

// Options configure a Controller.
type Options struct {
	Kube    kubernetes.Interface
	Gateway gwclient.Interface
	Dynamic dynamic.Interface

	// ControllerName is the GatewayClass controllerName we answer to
	// (default translate.DefaultControllerName).
	ControllerName string
	// SyncInterval and SyncBurst pace syncs: a change is synced at once
	// while fewer than SyncBurst syncs ran in the last SyncBurst
	// intervals; beyond that, syncs start at most one per SyncInterval,
	// each taking every change made meanwhile (defaults 50ms and 4). A
	// lone change is never held; a burst (a Helm install, a rollout)
	// costs a bounded number of translations and publishes.
	SyncInterval time.Duration
	SyncBurst    int
	// Publisher receives every proxy config; nil publishes nowhere.
	Publisher Publisher
	// Addresses are written on every programmed Gateway's status.
	Addresses []gwv1.GatewayStatusAddress
	// AddressPool gives each Gateway an address of its own (translate's
	// Input.AddressPool); proxies run with -listen-gateways serve them.
	AddressPool netip.Prefix
	// Events records events on objects; nil records none.
	Events EventSink
	// Planes, when set, is handed the dedicated planes to apply while
	// this replica leads.
	Planes Provisioner
	// Cloudflare, when set, gets each class's tunnel wishes while this
	// replica leads, and its reports feed the statuses. Its OnChange
	// should call Changed.
	Cloudflare *cloudflare.Syncer
	// ProxyProtocols, when set, lists the tunnel protocols the proxies
	// report (configserver.Server.Protocols); a GRPCRoute through a tunnel
	// needs http2.
	ProxyProtocols func() []string
	// AccessKeys, when set, fetches the signing keys of the Access teams
	// that AccessPolicies name (ctrl/accesskeys); its OnChange should call
	// Changed. Without it, protected rules refuse every request.
	AccessKeys AccessKeySource
	// TracerProvider traces each sync (tracing.go); nil traces nothing.
	TracerProvider trace.TracerProvider
	Log            *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// syncKey is the queue's only key: every change leads to one full sync.
const syncKey = "sync"

// Controller watches the cluster and keeps the proxies' config, the
// statuses and the events in step with it.
type Controller struct {
	opts           Options
	controllerName string
	gw             gwclient.Interface
	w              *watched
	queue          workqueue.TypedRateLimitingInterface[string]
	log            *slog.Logger
	tracer         trace.Tracer
	syncDuration   metric.Float64Histogram // set by RegisterMetrics

	leader atomic.Bool
	synced atomic.Bool // informers synced and a config published

	// The worker's state: one sync at a time.
	cache           *translate.Cache
	pace            *rate.Limiter                                  // when a sync may start (Options.SyncInterval)
	lastPlaneStates map[types.NamespacedName]*translate.PlaneState // planeStates
	statuses        *statusWriter

	mu   sync.Mutex
	last *translate.Output // the last translation, for debugging and tests

	Stats Stats
}

// Stats are the controller's counters, read by metrics and tests.
type Stats struct {
	Syncs, SyncErrors, StatusWrites, EventsRecorded atomic.Int64
	StatusErrors                                    atomic.Int64 // status write passes that failed
	LeaderGained                                    atomic.Int64 // times this replica became the leader
	LastSyncNanos                                   atomic.Int64
}

// New builds a Controller: its informers exist, nothing runs yet.
func New(opts Options) (*Controller, error) {
	if opts.Kube == nil || opts.Gateway == nil || opts.Dynamic == nil {
		return nil, errors.New("controller: Kube, Gateway and Dynamic clients are required")
	}
	if opts.ControllerName == "" {
		opts.ControllerName = translate.DefaultControllerName
	}
	if opts.SyncInterval <= 0 {
		opts.SyncInterval = DefaultSyncInterval
	}
	if opts.SyncBurst <= 0 {
		opts.SyncBurst = DefaultSyncBurst
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.TracerProvider == nil {
		opts.TracerProvider = tracenoop.NewTracerProvider()
	}
	noHistogram, _ := metricnoop.NewMeterProvider().Meter("").Float64Histogram("")
	c := &Controller{
		tracer:         opts.TracerProvider.Tracer(tracerName),
		syncDuration:   noHistogram,
		opts:           opts,
		controllerName: opts.ControllerName,
		gw:             opts.Gateway,
		log:            opts.Log,
		cache:          translate.NewCache(),
		pace:           rate.NewLimiter(rate.Every(opts.SyncInterval), opts.SyncBurst),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(retryBackoff(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "tunnelgate"}),
	}
	w, err := newWatched(opts.Kube, opts.Gateway, opts.Dynamic, c.changed)
	if err != nil {
		return nil, err
	}
	c.w = w
	c.statuses = newStatusWriter(c)
	return c, nil
}

// The pace of syncs when Options leave it unset.
const (
	DefaultSyncInterval = 50 * time.Millisecond
	DefaultSyncBurst    = 4
)

// changed is every informer's event handler: a sync, now. The queue
// holds one key, and one more while a sync runs, so changes made while
// a sync runs or waits for its turn (processOne) become one sync.
func (c *Controller) changed() { c.queue.Add(syncKey) }

// Changed asks for a sync, as an object change does: the Cloudflare
// syncer calls it when a report changed.
func (c *Controller) Changed() { c.changed() }

// Run starts the informers, waits for their caches, then syncs on every
// change until ctx ends. Statuses and events are written only while
// SetLeader(true); every replica publishes configs.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	for _, m := range c.w.missing {
		c.log.Warn("resource not served by the API server; treated as empty (install its CRD and restart)", "resource", m)
	}
	c.w.start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.w.synced()...) {
		return fmt.Errorf("informer caches did not sync: %w", ctx.Err())
	}
	c.log.Info("caches synced")
	c.queue.Add(syncKey)
	writing := make(chan struct{})
	go func() {
		defer close(writing)
		c.statuses.run(ctx)
	}()
	defer func() { <-writing }()
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for c.processOne(ctx) {
	}
	return nil
}

func (c *Controller) processOne(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	// Wait for the sync's turn (Options.SyncInterval): changes made
	// meanwhile are in the snapshot it takes after.
	if err := c.pace.Wait(ctx); err != nil {
		return false // ctx ended
	}
	if err := c.sync(ctx); err != nil {
		c.Stats.SyncErrors.Add(1)
		c.log.Error("sync failed; retrying", "err", err, "retries", c.queue.NumRequeues(key))
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// sync is one pass of the worker, timed and traced as a whole.
func (c *Controller) sync(ctx context.Context) error {
	start := time.Now()
	ctx, span := c.tracer.Start(ctx, spanSync)
	err := c.pass(ctx, span)
	d := time.Since(start)
	c.Stats.Syncs.Add(1)
	c.Stats.LastSyncNanos.Store(d.Nanoseconds())
	c.syncDuration.Record(context.WithoutCancel(ctx), d.Seconds())
	endSpan(span, err)
	return err
}

// pass is a sync's steps: snapshot and translate, publish, and when
// leading, hand Cloudflare the tunnels, write events, and hand the
// statuses to the status writer (statuswriter.go).
func (c *Controller) pass(ctx context.Context, span trace.Span) error {
	leading := c.leader.Load()
	in, out := c.runTranslate(ctx)
	shared, planeConfigs := out.ProxyConfigs()
	c.publish(ctx, span, shared)
	c.publishPlanes(&in.Snapshot, out, planeConfigs)
	c.remember(out)
	if span.IsRecording() {
		span.SetAttributes(attrLeader.Bool(leading))
	}
	c.handPlanes(ctx, leading, &in.Snapshot, out)
	if !leading {
		c.standBy(ctx)
		return nil
	}
	deps := c.handTunnels(ctx, span, &in.Snapshot, out)
	c.recordEvents(out.Events)
	c.statuses.hand(ctx, out)
	return c.keepFinalizers(ctx, &in.Snapshot, out, deps)
}

// runTranslate is the translate step, in its span.
func (c *Controller) runTranslate(ctx context.Context) (*translate.Input, *translate.Output) {
	_, ts := c.tracer.Start(ctx, spanTranslate)
	defer ts.End()
	in, out := c.translateSnapshot()
	if ts.IsRecording() {
		ts.SetAttributes(attrRoutes.Int(len(out.Config.Routes)), attrClusters.Int(len(out.Config.Clusters)),
			attrEvents.Int(len(out.Events)))
	}
	return in, out
}

// translateSnapshot translates a snapshot of the informers' caches.
func (c *Controller) translateSnapshot() (*translate.Input, *translate.Output) {
	in := &translate.Input{
		Snapshot:       c.w.snapshot(),
		ControllerName: c.controllerName,
		Now:            c.opts.Now(),
		BundleVersion:  c.w.bundleVersion(),
		Addresses:      c.opts.Addresses,
		AddressPool:    c.opts.AddressPool,
	}
	if c.opts.Cloudflare != nil {
		in.Tunnels = c.opts.Cloudflare.States()
	}
	if c.opts.ProxyProtocols != nil {
		in.TunnelProtocols = c.opts.ProxyProtocols()
	}
	if c.opts.AccessKeys != nil {
		c.opts.AccessKeys.Want(accessTeams(in.AccessPolicies))
		in.AccessKeys = c.opts.AccessKeys.Keys()
	}
	in.Planes = c.planeStates()
	in.Provisioning = translate.NoPlanes
	if c.opts.Planes != nil {
		in.Provisioning = translate.ProvisionPlanes
	}
	return in, c.cache.Translate(in)
}

// publish hands the proxy config to the Publisher, if there is one.
func (c *Controller) publish(ctx context.Context, span trace.Span, cfg *proxycfg.Config) {
	if c.opts.Publisher == nil {
		return
	}
	_, ps := c.tracer.Start(ctx, spanPublish)
	v := c.opts.Publisher.Publish(cfg)
	if ps.IsRecording() {
		ps.SetAttributes(attrConfigVersion.String(v))
		span.SetAttributes(attrConfigVersion.String(v))
	}
	ps.End()
	c.log.Debug("config published", "version", v, "routes", len(cfg.Routes), "clusters", len(cfg.Clusters))
}

// remember keeps out as the last translation (Last), which makes the
// controller ready.
func (c *Controller) remember(out *translate.Output) {
	c.mu.Lock()
	c.last = out
	c.mu.Unlock()
	c.synced.Store(true)
}

// standBy ends a follower's sync: only the leader speaks to Cloudflare,
// and a future leader compares every status with the cluster.
func (c *Controller) standBy(ctx context.Context) {
	c.statuses.forget.Store(true)
	if c.opts.Cloudflare != nil {
		c.opts.Cloudflare.UpdateContext(ctx, nil)
	}
}

// handTunnels gives the Cloudflare syncer each class's tunnel wishes, and
// returns the departures among them (departures.go).
func (c *Controller) handTunnels(ctx context.Context, span trace.Span, snap *translate.Snapshot, out *translate.Output) []departure {
	if c.opts.Cloudflare == nil {
		return nil
	}
	byClass := classConfigs(snap, c.controllerName)
	deps := departures(snap, out, byClass)
	tunnels := desiredTunnels(snap, out, byClass, deps)
	if span.IsRecording() {
		span.SetAttributes(attrTunnelClasses.Int(len(tunnels)))
	}
	c.opts.Cloudflare.UpdateContext(ctx, tunnels)
	return deps
}

// SetLeader says whether this replica leads. Gaining the lead forces a
// sync that compares every status with the cluster.
func (c *Controller) SetLeader(leading bool) {
	if c.leader.Swap(leading) != leading && leading {
		c.Stats.LeaderGained.Add(1)
		c.queue.Add(syncKey)
	}
}

// Leader reports whether this replica leads.
func (c *Controller) Leader() bool { return c.leader.Load() }

// Ready reports whether the caches synced and a config was published.
func (c *Controller) Ready() bool { return c.synced.Load() }

// Last returns the last translation (nil before the first); read-only.
func (c *Controller) Last() *translate.Output {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// QueueLen is the number of pending syncs (0 or 1, plus a delayed one).
func (c *Controller) QueueLen() int { return c.queue.Len() }
