// This file implements Build and Serve.

package standalone

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/internal/pprofgate"
)

// Options configure Serve.
type Options struct {
	// Paths are the YAML files and directories to read.
	Paths []string
	// Listen is the address every HTTP listener of the accepted Gateways is
	// served on, chosen by hostname (default 127.0.0.1:8080): "host:port"
	// or "unix:/path".
	Listen string
	// BehindCloudflared serves Listen as the proxy's origin listener, for
	// cloudflared: HTTP/1.1, and the forwarding headers cloudflared passes
	// on (Cf-*, X-Forwarded-For, X-Forwarded-Proto) are trusted, so the
	// visitor's scheme and address are the ones Cloudflare's edge saw.
	// Without it Listen is a listener for direct clients, which trusts none
	// of them. Set it only when nothing but cloudflared can reach Listen:
	// any other client could claim any address and scheme.
	BehindCloudflared bool
	// Admin serves health, readiness, metrics and pprof; empty disables.
	Admin string
	// Pprof says who may read /debug/pprof/ on Admin; the zero value
	// serves loopback peers only.
	Pprof pprofgate.Mode
	// AccessLog and Tracer, when set, log and trace requests as they do for
	// the proxy (dataplane.Options).
	AccessLog *observe.AccessLog
	Tracer    *observe.Tracer
	// EncodedSlashes is what an encoded slash in a request path means
	// where the Gateway's GatewayConfig does not say
	// (dataplane.Options.EncodedSlashes).
	EncodedSlashes string
	// ControllerName selects the GatewayClasses to serve.
	ControllerName string
	// Poll is how often the files are polled for changes where file
	// events are not to be had (default 1 s): on systems other than
	// Linux, or when inotify's limits are reached. With events, a change
	// is reloaded within milliseconds, and the files are still polled,
	// every 10 s or Poll if longer, for the changes events miss (see
	// watch.go).
	Poll time.Duration
	Log  *slog.Logger
	// Ready, if set, is called with the bound addresses once listening:
	// Listen's is Bound.Plain, or Bound.Origin with BehindCloudflared.
	Ready func(dataplane.Bound)
	// Loaded, if set, is called after every load attempt with its result.
	Loaded func(*Result, error)

	// events, if set, replaces the file events (tests).
	events func() (events, error)
}

// Result is one load: the objects read and what translate made of them.
type Result struct {
	Snapshot *translate.Snapshot
	Output   *translate.Output
}

// Build reads paths and translates them as standalone mode does: any
// EndpointSlice address is accepted (there is no API server to refuse
// loopback backends), and Gateways report listen as their address. The
// config carries its content version (proxycfg.ContentVersion), so
// building unchanged files again gives the same version.
func Build(paths []string, controllerName, listen string, now time.Time) (*Result, error) {
	return (&builder{paths: paths, controllerName: controllerName, listen: listen}).build(now)
}

// builder builds the files again and again, as Serve does, each build
// costing what changed since the last: the files keep what was parsed of
// them (fileSet), cache the work of the last translation (nil: none,
// Build's one-shot), and enc the JSON and hash of each element of the
// config, for the version.
type builder struct {
	paths                  []string
	controllerName, listen string

	files fileSet
	cache *translate.Cache
	// enc keeps the config's lists, which nobody modifies.
	enc proxycfg.Encoder
	// last is the last result, given again while the files are
	// unchanged (with a cache).
	last *Result
}

// build reads the files and translates them. The version is the
// Encoder's, which encodes and hashes again only the listeners, routes
// and clusters not Equal to those of their identity last time: a change
// to one route costs that route's JSON and a pass of comparisons (a
// pointer's, for what translate's Cache handed on), and comes out as a
// fresh Encoder would have it.
func (b *builder) build(now time.Time) (*Result, error) {
	entries, unchanged := b.files.read(b.paths)
	if unchanged && b.cache != nil && b.last != nil {
		// A save that changed nothing, a file beside them written: the
		// same objects translate the same.
		return b.last, nil
	}
	snap, err := b.files.assemble(entries)
	if err != nil {
		return nil, err
	}
	return b.translate(snap, now)
}

// settle keeps the statuses out gave the objects of the last build, as a
// cluster's API server would (status.go), so that the next build reads
// no clock and its translation can be patched. If any object took its
// status, the files are translated again with them; the config is the
// same, the result is returned. Without a cache, settle does nothing.
func (b *builder) settle(out *translate.Output, now time.Time) (*Result, error) {
	if b.cache == nil || b.files.writeBack(out) == 0 {
		return nil, nil
	}
	snap, err := b.files.snapshot()
	if err != nil {
		return nil, err
	}
	return b.translate(snap, now)
}

// translate translates a snapshot of the files.
func (b *builder) translate(snap *translate.Snapshot, now time.Time) (*Result, error) {
	controllerName := b.controllerName
	if controllerName == "" {
		controllerName = translate.DefaultControllerName
	}
	in := &translate.Input{
		Snapshot:           *snap,
		ControllerName:     controllerName,
		Now:                now,
		Addresses:          listenAddresses(b.listen),
		AnyEndpointAddress: true,
	}
	var out *translate.Output
	if b.cache != nil {
		out = b.cache.Translate(in)
	} else {
		out = translate.Translate(in)
	}
	encoded, err := b.enc.Encode(&out.Config)
	if err != nil {
		return nil, fmt.Errorf("the translated config does not encode: %w", err)
	}
	out.Config.Version = encoded.Version
	b.last = &Result{Snapshot: snap, Output: out}
	return b.last, nil
}

// streamHost is where TCP and TLS listeners are served, each on its own
// port: the host of listen, which serves every HTTP listener (127.0.0.1
// for a unix socket or a name, 0.0.0.0 for every address).
func streamHost(listen string) netip.Addr {
	host, _, err := net.SplitHostPort(listen)
	switch {
	case err != nil:
		return netip.AddrFrom4([4]byte{127, 0, 0, 1}) // unix:/path
	case host == "":
		return netip.IPv4Unspecified()
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Zone() == "" {
		return a.Unmap()
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}

// listenAddresses is what standalone Gateways publish in status.addresses.
func listenAddresses(listen string) []gwv1.GatewayStatusAddress {
	host, _, err := net.SplitHostPort(listen)
	if err != nil || host == "" {
		return nil
	}
	typ := gwv1.HostnameAddressType
	if net.ParseIP(host) != nil {
		typ = gwv1.IPAddressType
	}
	return []gwv1.GatewayStatusAddress{{Type: &typ, Value: host}}
}

// Serve loads the files, serves them until ctx ends, and reloads whenever
// a file changes: as it happens, from file events, or at the latest at
// the next poll (watch.go). A reload reads the files again, parses only
// the documents changed, and translates incrementally (translate.Cache);
// the proxy applies changed routes as patches. A reload that fails (a
// YAML error, a config the proxy refuses) is logged and the last good
// config keeps serving. Serve returns once its watcher has stopped.
func Serve(ctx context.Context, o Options) error {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:8080"
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	p := dataplane.New(dataplane.Options{Log: log, Pprof: o.Pprof, AccessLog: o.AccessLog, Tracer: o.Tracer, EncodedSlashes: o.EncodedSlashes,
		StreamHost: streamHost(o.Listen)})
	defer p.Close()

	// b is used by load alone, which runs once here and then only in the
	// watcher's goroutine.
	b := &builder{paths: o.Paths, controllerName: o.ControllerName, listen: o.Listen, cache: translate.NewCache()}
	load := func() error {
		res, err := b.build(time.Now())
		// The version is the content's: unchanged files, the same version.
		unchanged := err == nil && res.Output.Config.Version == p.Version()
		if err == nil && !unchanged {
			err = p.Load(&res.Output.Config)
		}
		if o.Loaded != nil {
			o.Loaded(res, err)
		}
		if err != nil {
			return err
		}
		if unchanged {
			// A save without a change (or one to a comment): nothing to swap.
			log.Debug("files changed, config did not", "version", p.Version())
			return nil
		}
		for _, line := range NotReady(res.Output) {
			log.Warn("route not ready", "status", line)
		}
		// The proxy logs how it applied the config; this says what the files made.
		log.Info("files loaded", "version", res.Output.Config.Version,
			"listeners", len(res.Output.Config.Listeners), "routes", len(res.Output.Config.Routes), "clusters", len(res.Output.Config.Clusters))
		// Served; now keep the statuses for the next reload.
		settled, err := b.settle(res.Output, time.Now())
		if err == nil && settled != nil && settled.Output.Config.Version != p.Version() {
			// Statuses change nothing served; should they, serve it.
			log.Warn("the config changed with the objects' statuses", "version", settled.Output.Config.Version)
			err = p.Load(&settled.Output.Config)
		}
		if err != nil {
			log.Error("keeping the statuses failed", "err", err)
		}
		return nil
	}
	newEv := o.events
	if newEv == nil {
		newEv = newEvents
	}
	// Watching before the first load, so an edit made while it reads is
	// seen.
	w := newWatcher(o.Paths, o.Poll, newEv, log)
	if err := load(); err != nil {
		w.close()
		return err
	}

	// The watcher ends with Serve, whatever ends it, and Serve returns
	// after it.
	ctx, cancel := context.WithCancel(ctx)
	watching := make(chan struct{})
	defer func() {
		cancel()
		<-watching
	}()
	go func() {
		defer close(watching)
		w.run(ctx, func() {
			if err := load(); err != nil {
				log.Error("reload failed; still serving the last good config", "err", err)
			}
		})
	}()

	l := dataplane.ServeOptions{Plain: o.Listen, Admin: o.Admin, Ready: o.Ready}
	if o.BehindCloudflared {
		// Both serve every Gateway listener by hostname; the origin
		// listener trusts its peer, and so picks the listener by the
		// scheme the visitor used (X-Forwarded-Proto), not by its own.
		l.Plain, l.Origin = "", o.Listen
	}
	return p.Serve(ctx, l)
}
