// This file implements Build and Serve.

package standalone

import (
	"context"
	"fmt"
	"log/slog"
	"net"
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
	// Poll is how often the files are checked for changes (default 1 s).
	Poll time.Duration
	Log  *slog.Logger
	// Ready, if set, is called with the bound addresses once listening:
	// Listen's is Bound.Plain, or Bound.Origin with BehindCloudflared.
	Ready func(dataplane.Bound)
	// Loaded, if set, is called after every load attempt with its result.
	Loaded func(*Result, error)
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
	return build(paths, controllerName, listen, now, new(proxycfg.Encoder))
}

// build is Build with the Encoder that stamps the version: Serve keeps
// one across reloads, so a reload encodes only what changed. enc keeps
// the config's lists, which nobody modifies.
func build(paths []string, controllerName, listen string, now time.Time, enc *proxycfg.Encoder) (*Result, error) {
	snap, err := Load(paths)
	if err != nil {
		return nil, err
	}
	if controllerName == "" {
		controllerName = translate.DefaultControllerName
	}
	out := translate.Translate(&translate.Input{
		Snapshot:           *snap,
		ControllerName:     controllerName,
		Now:                now,
		Addresses:          listenAddresses(listen),
		AnyEndpointAddress: true,
	})
	encoded, err := enc.Encode(&out.Config)
	if err != nil {
		return nil, fmt.Errorf("the translated config does not encode: %w", err)
	}
	out.Config.Version = encoded.Version
	return &Result{Snapshot: snap, Output: out}, nil
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
// a file changes. A reload that fails (a YAML error, a config the proxy
// refuses) is logged and the last good config keeps serving.
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
	p := dataplane.New(dataplane.Options{Log: log, Pprof: o.Pprof, AccessLog: o.AccessLog, Tracer: o.Tracer, EncodedSlashes: o.EncodedSlashes})
	defer p.Close()

	// enc is used by load alone, which runs once here and then only in
	// the goroutine below.
	var enc proxycfg.Encoder
	load := func() error {
		res, err := build(o.Paths, o.ControllerName, o.Listen, time.Now(), &enc)
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
		log.Info("config loaded", "version", res.Output.Config.Version,
			"listeners", len(res.Output.Config.Listeners), "routes", len(res.Output.Config.Routes), "clusters", len(res.Output.Config.Clusters))
		return nil
	}
	// Stamped before the first load, so an edit made while it reads is
	// seen by the first poll.
	stamp, _, _ := pollFiles(o.Paths, nil, time.Now())
	if err := load(); err != nil {
		return err
	}

	go func() {
		t := time.NewTicker(o.Poll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			s, changed, err := pollFiles(o.Paths, stamp, time.Now())
			if err != nil {
				continue // a path briefly missing: try again next poll
			}
			stamp = s
			if !changed {
				continue
			}
			if err := load(); err != nil {
				log.Error("reload failed; still serving the last good config", "err", err)
			}
		}
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
