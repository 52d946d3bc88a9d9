// This file implements the Proxy: its options, Load and Apply.

package dataplane

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// PoolSettings tune connections to each backend endpoint (see
// http1.PoolSettings); HTTP/2 backends get the same limits.
type PoolSettings = http1.PoolSettings

// Options tune a Proxy. The zero value is usable.
type Options struct {
	// Pool tunes upstream connections; zero fields take defaults (256
	// idle and 1024 open connections per endpoint, 90 s idle timeout,
	// 10 s dial).
	Pool PoolSettings
	// WebSocketIdle closes a WebSocket with no traffic either way for this
	// long; default one hour.
	WebSocketIdle time.Duration
	// MaxMirrors bounds mirrored requests in flight; beyond it mirrors are
	// dropped and counted. Default 256.
	MaxMirrors int
	// RequestBuffer is the longest request body to an HTTP/1.1 backend
	// read whole before a backend connection is taken, whatever its
	// framing; a longer one is streamed once this much has arrived
	// (buffers.go). Default DefaultRequestBuffer.
	RequestBuffer int64
	// BufferMemory bounds the memory of all request and response bodies
	// held whole at once; a body that finds it taken is streamed instead.
	// Default DefaultBufferMemory.
	BufferMemory int64
	// Log receives config loads and rejections; default slog.Default().
	Log *slog.Logger
	// Metrics, when set, registers more instruments on the meter behind
	// the admin listener's /metrics, so that what runs beside the proxy
	// (the config watch client) is scraped at the same address. It runs
	// once, when /metrics is first served; an error fails that endpoint.
	Metrics func(metric.Meter) error
	// Tracer, when set, traces the requests its sampler keeps
	// (tracing.go); nil turns tracing off. The caller closes it after
	// Serve returns.
	Tracer *observe.Tracer
	// AccessLog, when set, gets a line for each request it samples
	// (record.go). The caller closes it after Serve returns.
	AccessLog *observe.AccessLog
	Pprof     PprofMode // who may read /debug/pprof/ (admin.go)
	// ReturnMemory, after a config is compiled whole, has the garbage of
	// its decoding and compiling collected and the memory returned to the
	// operating system, a second later (once for configs that come
	// faster): at 5,000 routes that garbage is as large as what the
	// config holds, and Go would otherwise keep the pages for minutes.
	// The same is done once idle backend connections have dropped 4 MiB
	// of buffers (http1.PoolSettings.Shed). It is for the process the
	// proxy is (the proxy command), since it collects the whole
	// process's heap.
	ReturnMemory bool
	// ListenerPorts makes this the proxy of a Gateway's own data plane,
	// behind its Service: Serve serves each listener that has a port on a
	// socket for that port on every local address, whether the listener
	// has an address or not (gateways.go); a listener without a port is
	// served only through the origin listeners. Every config is checked
	// for it: the listeners of one port must agree on the protocol, and
	// HTTPS ones must carry certificates. It excludes ServeOptions.Gateways.
	ListenerPorts bool
	// StreamHost, when valid, serves each TCP or TLS listener that
	// neither Gateway addresses nor ListenerPorts give a socket of its
	// own at its port on this host: standalone mode, which serves every
	// HTTP listener on one socket by hostname, serves its TCP and TLS
	// listeners on their own ports on that socket's host.
	StreamHost netip.Addr
	// EncodedSlashes is what an encoded slash or backslash in a request
	// path means on listeners whose config says nothing
	// (proxycfg.Listener.EncodedSlashes): proxycfg.SlashesReject (the
	// default, also for ""), SlashesDecode or SlashesKeep. Another value
	// is logged and read as SlashesReject; the command's flag refuses it.
	EncodedSlashes string
	// Streams tunes the relaying of stream routes (streamserve.go).
	Streams StreamOptions
	// MetricsDetail is how much /metrics says of each route rule and
	// cluster (observe.Detail); the default serves their requests by
	// status class or result, and latency by listener.
	MetricsDetail observe.Detail
}

// Proxy is the data plane: it serves HTTP with the last config that
// compiled, and takes new configs and endpoint updates at any time.
type Proxy struct {
	opts    Options
	current atomic.Pointer[compiledConfig]
	stats   observe.Counters

	returning atomic.Bool  // returnMemory is scheduled
	shedBytes atomic.Int64 // buffers idle connections dropped since the last return (shed)
	// slashes is how listeners that say nothing read encoded slashes
	// (Options.EncodedSlashes).
	slashes slashMode

	// mu serialises Apply; requests never take it.
	mu    sync.Mutex
	slots map[string]*clusterSlot
	// served is the config being served, as given to Apply, for the
	// next Apply to compare with.
	served *proxycfg.Config
	// views are the views the proxy's handlers serve (views.go): each
	// config is filed into these only.
	views      viewSet
	transports *transports
	lastErr    error
	// fallbackSession signs session tokens when the config has no secret.
	fallbackSession *sessionCodec
	// access verifies Cloudflare Access tokens for protected rules, and
	// keeps those that passed across configs (access.go).
	access *cfaccess.Verifier
	// unknownKeys notes the teams whose tokens name a key their set
	// lacks, for the config client to ask the controller for new keys.
	unknownKeys *cfaccess.UnknownKeys

	// gateways serves the sockets of their own (Gateway addresses, or
	// listener ports) while Serve runs; Load opens and closes them as
	// configs change.
	gateways atomic.Pointer[gatewayServers]

	// streams serves the stream sockets while Serve runs (streamserve.go);
	// Load opens and closes them as configs change.
	streams atomic.Pointer[streamServers]
	// streamStats are the metrics of the current config's stream routes,
	// by identity, kept across loads.
	streamStats map[proxycfg.RouteID]*observe.StreamStats
	// originPorts are the ports of the origin listeners Serve opened,
	// which no stream route's OriginPort may take.
	originPorts []int

	// tracer is nil when tracing is off.
	tracer *observe.Tracer
	// inflight counts requests being served, on every listener.
	inflight atomic.Int64
	// ruleStats are the metrics of the rules of the current config, by
	// route and rule label, kept across loads (counters.go).
	ruleStats map[[2]string]*observe.RuleStats
	// noListener counts the requests no listener took; the listeners'
	// own are in the compiled config (filing.stats).
	noListener observe.ListenerStats

	// buffers hold the bodies read whole (buffers.go).
	buffers *buffers

	mirrorsInFlight atomic.Int32
	// lastUpstreamLog (unix nanoseconds) rate-limits upstream failure logs.
	lastUpstreamLog atomic.Int64
}

// logUpstream logs a failure to get an answer from a backend, at most once
// a second: during an outage every request fails the same way, and the
// counters in /metrics say how many.
func (p *Proxy) logUpstream(cluster, addr string, status int, err error) {
	now := time.Now().UnixNano()
	last := p.lastUpstreamLog.Load()
	if now-last < int64(time.Second) || !p.lastUpstreamLog.CompareAndSwap(last, now) {
		return
	}
	p.opts.Log.Warn("backend request failed", "cluster", cluster, "endpoint", addr, "status", status, "err", err)
}

// New returns a proxy with no config: it answers 503 until Load succeeds.
func New(opts Options) *Proxy {
	opts.Pool = opts.Pool.OrDefaults()
	if opts.WebSocketIdle <= 0 {
		opts.WebSocketIdle = time.Hour
	}
	if opts.MaxMirrors <= 0 {
		opts.MaxMirrors = 256
	}
	if opts.RequestBuffer <= 0 {
		opts.RequestBuffer = DefaultRequestBuffer
	}
	if opts.BufferMemory <= 0 {
		opts.BufferMemory = DefaultBufferMemory
	}
	opts.RequestBuffer = min(opts.RequestBuffer, opts.BufferMemory) // no body gets more
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	key := make([]byte, 32)
	rand.Read(key)
	p := &Proxy{
		opts:            opts,
		slots:           map[string]*clusterSlot{},
		transports:      newTransports(opts.Pool),
		buffers:         newBuffers(opts.BufferMemory, int(max(opts.RequestBuffer, responseBuffer, compiled.MaxReplayBody))),
		fallbackSession: newSessionCodec(key),
		access:          cfaccess.NewVerifier(cfaccess.DefaultLeeway, cfaccess.DefaultCacheBytes),
		unknownKeys:     cfaccess.NewUnknownKeys(0),
		ruleStats:       map[[2]string]*observe.RuleStats{},
		streamStats:     map[proxycfg.RouteID]*observe.StreamStats{},
	}
	if opts.ReturnMemory { // the pools' buffers, once idle, go back too
		p.transports.settings.Shed = p.shed
	}
	p.opts.Streams = opts.Streams.withDefaults()
	p.tracer = opts.Tracer
	p.slashes, _ = parseSlashMode(opts.EncodedSlashes)
	if p.slashes == slashesUnset {
		if opts.EncodedSlashes != "" {
			opts.Log.Error("encoded slashes: unknown setting, so they are refused", "setting", opts.EncodedSlashes)
		}
		p.slashes = slashesReject
	}
	return p
}

// Load is Apply for a caller that does not need to know how the config
// was applied.
func (p *Proxy) Load(cfg *proxycfg.Config) error {
	_, err := p.Apply(cfg)
	return err
}

// Apply makes cfg the config new requests use, if it is valid. When it
// differs from the config served only in its version and its clusters'
// definitions (usually endpoints), the changed clusters are replaced in
// their slots and routes are not recompiled (proxycfg.AppliedClusters); when it
// differs in routes edited in place, added or deleted, or in listeners,
// too, only those are compiled and only their listeners' tables built
// again (proxycfg.AppliedRoutes, patch.go);
// otherwise cfg is compiled and swapped in whole (proxycfg.AppliedAll). An invalid config is
// rejected whole, with every problem listed in the error, and the
// previous config keeps serving. The proxy keeps cfg, to compare the next
// one with: the caller must not change it afterwards (giving the same
// config again, changed, compiles it whole).
func (p *Proxy) Apply(cfg *proxycfg.Config) (proxycfg.Applied, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	switch {
	case cfg == nil:
		err = errors.New("no config")
	case p.replaceClusters(cfg):
		return proxycfg.AppliedClusters, nil
	default:
		var patched bool
		if patched, err = p.patchRoutes(cfg); patched {
			p.lastErr = nil
			p.stats.RoutePatches.Add(1)
			p.opts.Log.Info("config patched", "version", cfg.Version, "routes", len(cfg.Routes), "clusters", len(cfg.Clusters))
			return proxycfg.AppliedRoutes, nil
		}
		if err == nil {
			err = p.load(cfg)
		}
	}
	if err != nil {
		p.lastErr = err
		p.stats.ConfigRejected.Add(1)
		version := ""
		if cfg != nil {
			version = cfg.Version
		}
		p.opts.Log.Error("config rejected; still serving the previous one", "version", version, "err", err)
		return 0, err
	}
	p.lastErr = nil
	p.stats.ConfigLoaded.Add(1)
	p.opts.Log.Info("config loaded", "version", cfg.Version, "routes", len(cfg.Routes), "clusters", len(cfg.Clusters))
	if p.opts.ReturnMemory {
		p.returnMemory()
	}
	return proxycfg.AppliedAll, nil
}

// returnDelay is how long after a whole load memory is returned: a burst
// of loads returns it once.
const returnDelay = time.Second

// returnMemory collects the garbage and returns free memory to the
// operating system, returnDelay from now unless that is scheduled.
func (p *Proxy) returnMemory() {
	if p.returning.CompareAndSwap(false, true) {
		time.AfterFunc(returnDelay, func() {
			p.returning.Store(false)
			debug.FreeOSMemory()
		})
	}
}

// shedReturn is how many bytes of buffers idle backend connections must
// have dropped before their memory is returned to the operating system:
// a proxy that reached thousands of endpoints once gets its memory back,
// and one whose connections come and go at a trickle does not force a
// collection every second.
const shedReturn = 4 << 20

// shed notes buffers that idle backend connections dropped (Options.Pool's
// Shed), and returns the memory once shedReturn of them have been.
func (p *Proxy) shed(bytes int) {
	if p.shedBytes.Add(int64(bytes)) >= shedReturn {
		p.shedBytes.Store(0)
		p.returnMemory()
	}
}

func (p *Proxy) load(cfg *proxycfg.Config) error {
	// Slots for names new in this config are made aside, so a rejected
	// config leaves nothing behind.
	fresh := map[string]*clusterSlot{}
	var listenersBefore map[string]*observe.ListenerStats
	if cur := p.current.Load(); cur != nil {
		listenersBefore = cur.filed.stats
	}
	cc, err := compile(cfg, func(name string) *clusterSlot {
		if s := p.slots[name]; s != nil {
			return s
		}
		s := &clusterSlot{name: name}
		fresh[name] = s
		return s
	}, listenersBefore, p.views, p.placement(), p.originPorts)
	// Build every cluster state before installing any. Their problems are
	// listed with the routes' so one rejection names everything to fix.
	states := make([]*clusterState, len(cfg.Clusters))
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for i := range cfg.Clusters {
		if cfg.Clusters[i].Name == "" {
			continue // compile has reported it
		}
		cs, err := p.transports.state(&cfg.Clusters[i])
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %q: %w", cfg.Clusters[i].Name, err))
		}
		states[i] = cs
	}
	if len(errs) > 0 {
		p.sweepLocked() // drop transports made for the rejected config
		return errors.Join(errs...)
	}
	if cc.session == nil {
		cc.session = p.fallbackSession
	}
	p.keepAccessKeys(cc)
	slots := map[string]*clusterSlot{}
	for i := range cfg.Clusters {
		s := cc.clusters[i]
		s.install(states[i])
		slots[cfg.Clusters[i].Name] = s
	}
	p.slots, p.served = slots, cfg
	p.adoptRuleStats(cc.rules)
	p.adoptStreamStats(cc.streams)
	p.current.Store(cc)
	p.sweepLocked()
	if g := p.gateways.Load(); g != nil {
		g.sync()
	}
	if s := p.streams.Load(); s != nil {
		s.sync(cc)
	}
	return nil
}

// placement is how the proxy's listeners get sockets of their own.
func (p *Proxy) placement() placement {
	return placement{byPort: p.opts.ListenerPorts, streamHost: p.opts.StreamHost}
}

func (p *Proxy) sweepLocked() {
	live := make([]*clusterState, 0, len(p.slots))
	for _, s := range p.slots {
		if cs := s.state.Load(); cs != nil {
			live = append(live, cs)
		}
	}
	p.transports.sweep(live)
}

// Version is the version of the config being served, "" before the first.
func (p *Proxy) Version() string {
	if s := p.current.Load(); s != nil {
		return s.version
	}
	return ""
}

// Config is the config being served, as given to Apply; nil before the
// first. It is shared: the caller
// must not change it.
func (p *Proxy) Config() *proxycfg.Config {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served
}

// Ready reports whether a config has been loaded.
func (p *Proxy) Ready() bool { return p.current.Load() != nil }

// LastError is why the last Load failed, or nil if it succeeded.
func (p *Proxy) LastError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

// Stats are the proxy's counters.
func (p *Proxy) Stats() *observe.Counters { return &p.stats }

// Close closes idle upstream connections. In-flight requests finish.
func (p *Proxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.transports.close()
}

// Handler serves requests arriving on one listener. port is the Gateway
// listener port a direct listener serves, or 0 for the origin listener,
// which serves every listener by hostname. trusted says whether the peer
// (cloudflared) may set forwarding headers.
func (p *Proxy) Handler(port int, trusted bool) http.Handler {
	p.serveView(viewOf(port))
	return &handler{p: p, port: port, trusted: trusted}
}
