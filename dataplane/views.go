// This file files compiled routes into the views of the sockets served.

package dataplane

import (
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/matcher"
)

// A view is how one kind of socket sees a config's listeners, and picks
// one for a request by its Host:
//
//   - the origin view (cloudflared's origin, or a plain listener for
//     every port): every listener, HTTP and HTTPS ones apart, since a
//     request goes first to the listeners of the scheme its client used;
//   - a port view (a direct listener for one Gateway port): the
//     listeners of that port;
//   - the view of sockets of their own (gateways.go): the listeners of
//     each Gateway address and port (ServeOptions.Gateways), or of each
//     port (Options.ListenerPorts), with their certificates.
//
// TCP and TLS listeners are in no view: their sockets relay streams
// (stream.go), not requests.
//
// Within a view, listeners with the same hostname are merged into one
// vhost whose routes share a matcher table. A route's matches are
// prepared once per config (compile.go) and filed into the table of
// each vhost that serves them; a compiled config holds only the views of the
// sockets the proxy serves (viewSet), so a config is never filed for a
// socket nobody opened.
//
// A config patched (patch.go) builds its views again from the served
// ones (keep): in each view, a vhost that merges the same listeners (by
// name, in the same order) with the same settings is kept, table and
// all, when none of its listeners changed or serves a changed route;
// its table is updated (matcher.Table.Update) when its listeners only
// serve changed routes; and it is built anew when one of its listeners
// was added or edited (the patch marks those whole), or it merges other
// listeners than before. A view whose vhosts were all kept keeps its
// table picking one.

// viewSet names the views a proxy serves: the handlers it made say which
// (Proxy.serveView). It is immutable; add returns a new one.
type viewSet struct {
	origin   bool
	ports    map[int]bool
	gateways bool
}

// has reports whether s includes every view of o.
func (s viewSet) has(o viewSet) bool {
	if o.origin && !s.origin || o.gateways && !s.gateways {
		return false
	}
	for port := range o.ports {
		if !s.ports[port] {
			return false
		}
	}
	return true
}

// add returns s with the views of o too.
func (s viewSet) add(o viewSet) viewSet {
	out := viewSet{origin: s.origin || o.origin, gateways: s.gateways || o.gateways}
	if len(s.ports)+len(o.ports) > 0 {
		out.ports = maps.Clone(s.ports)
		if out.ports == nil {
			out.ports = map[int]bool{}
		}
		maps.Copy(out.ports, o.ports)
	}
	return out
}

// serveView has the proxy serve the views of v from now on: the config
// served, and every config after it, is filed into them too. A view that
// cannot be built (a table limit passed) is logged and left out, so its
// requests find no listener, and the next config is filed again.
func (p *Proxy) serveView(v viewSet) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.views.has(v) {
		return
	}
	p.views = p.views.add(v)
	cur := p.current.Load()
	if cur == nil {
		return
	}
	next, err := cur.withViews(p.views)
	if err != nil {
		p.lastErr = err
		p.opts.Log.Error("config not served on a new listener", "version", cur.version, "err", err)
		return
	}
	p.current.Store(next)
}

// viewOf is the view a handler for port serves: 0 is the origin's.
func viewOf(port int) viewSet {
	if port == 0 {
		return viewSet{origin: true}
	}
	return viewSet{ports: map[int]bool{port: true}}
}

// views are the built views of a compiledConfig; a view not served is nil.
type views struct {
	// origin holds the HTTP listeners (origin[0]) apart from the HTTPS
	// ones (origin[1]).
	origin [2]*listenerSet
	ports  map[int]*listenerSet
	// gateways serves the listeners of each socket of its own (a Gateway
	// address and port, or a port; gateways.go), with the certificates of
	// its HTTPS listeners.
	gateways map[gatewayAddr]*gatewayEndpoint
}

// listenerSet picks the listener for a request's host: the exact hostname,
// then the longest wildcard, then a listener without hostname. This is the
// matcher's own host precedence, so it is a matcher table whose rules all
// match every path.
type listenerSet struct {
	pick *matcher.Table[*vhost]
	// vhosts are its vhosts by hostname, for a set built again after
	// routes changed to keep those whose routes did not (keep).
	vhosts map[string]*vhost
}

// vhost is a group of listeners with the same hostname, merged: their
// routes share one table. Routes of another vhost are never considered,
// even when nothing here matches (listener isolation).
type vhost struct {
	name string // its listeners' names, joined with ","
	// listeners are its listeners' names.
	listeners []string
	table     *matcher.Table[*compiled.Target]
	// certRequired: a merged listener requires a valid client
	// certificate, which only a handshake on a socket of its own checks.
	certRequired bool
	// slashes is the strictest EncodedSlashes its listeners set;
	// slashesDefault says one sets none, so the proxy's default counts
	// too (encodedSlashes).
	slashes        slashMode
	slashesDefault bool
	// health are the health checks of its listeners that have one
	// (health.go), in config order; nil when none has, which is all a
	// request on it pays for them.
	health []*healthCheck
	// stats count the requests it takes, under the name of its first
	// listener: the listeners merged share one table, so a request is
	// not taken by one of them more than by the others.
	stats *observe.ListenerStats
}

// encodedSlashes is how the vhost reads encoded slashes, given the
// proxy's default def; a request that found no vhost takes def.
func (v *vhost) encodedSlashes(def slashMode) slashMode {
	if v == nil {
		return def
	}
	if v.slashesDefault {
		return max(v.slashes, def)
	}
	return v.slashes
}

// filing is what views are built from: the config's listeners, the
// prepared matches of the routes attached to each, and where listeners
// are served on sockets of their own.
type filing struct {
	listeners []proxycfg.Listener
	// routesOf are the prepared matches of each listener's routes, by
	// listener name, in config order.
	routesOf map[string][]*matcher.Prepared[*compiled.Target]
	// gatewayAt is the socket of its own of each listener placed on one,
	// by listener name (placeGatewayListeners); gatewayTLS the TLS
	// configuration of each HTTPS one (buildGatewayTLS).
	gatewayAt  map[string]gatewayAddr
	gatewayTLS map[gatewayAddr]*tls.Config
	// stats are the metrics of each HTTP and HTTPS listener, by name,
	// kept across configs while the name stays (compiler.listeners).
	stats map[string]*observe.ListenerStats
}

// build builds the views in want.
func (f *filing) build(want viewSet) (views, error) {
	return f.rebuild(want, keep{})
}

// keep is what a build may take from an earlier one: the vhosts of prev
// none of whose listeners is in changed, with their tables, and the
// tables of the others updated by the change of their listeners' routes
// (matcher.Table.Update) where changed says how. A listener added,
// removed or edited is in changed, whole, so that no vhost holding it is
// kept or updated: an old vhost stands for a new one only when the
// listeners it merges are the same, by name and content.
type keep struct {
	prev    views
	changed map[string]*routesEdit
}

// routesEdit is how a listener's routes changed: the matches removed, by
// key, and those added; whole when a table must be built anew instead
// (the listener itself changed, or the keys are ambiguous).
type routesEdit struct {
	remove []matcher.Key
	add    []*matcher.Prepared[*compiled.Target]
	whole  bool
}

// updated returns v with the earlier vhost's table updated by its
// listeners' edits, or nil when it must be built anew.
func (k keep) updated(set *listenerSet, h string, v *vhost) (*vhost, error) {
	old := earlier(set, h, v)
	if old == nil || old.table == nil || len(k.changed) == 0 {
		return nil, nil
	}
	var remove []matcher.Key
	var add []*matcher.Prepared[*compiled.Target]
	for _, l := range old.listeners {
		e := k.changed[l]
		switch {
		case e == nil:
		case e.whole:
			return nil, nil
		default:
			for _, key := range e.remove {
				if !slices.Contains(remove, key) {
					remove = append(remove, key)
				}
			}
			for _, p := range e.add {
				if !slices.Contains(add, p) {
					add = append(add, p)
				}
			}
		}
	}
	t, err := old.table.Update(remove, add)
	if errors.Is(err, matcher.ErrUnknownKey) {
		return nil, nil // the old table is not what the edit thinks: build anew
	}
	if err != nil {
		return nil, err
	}
	next := *v
	next.table = t
	return &next, nil
}

// vhostOf returns the earlier vhost for hostname h of set, when it may
// stand for v: the same listeners, none with routes changed.
func (k keep) vhostOf(set *listenerSet, h string, v *vhost) *vhost {
	old := earlier(set, h, v)
	if old == nil {
		return nil
	}
	for _, l := range old.listeners {
		if k.changed[l] != nil {
			return nil
		}
	}
	return old
}

// earlier returns the vhost for hostname h of an earlier set, when it
// merges the same listeners as v alike; nil otherwise.
func earlier(set *listenerSet, h string, v *vhost) *vhost {
	if set == nil {
		return nil
	}
	if old := set.vhosts[h]; old != nil && old.name == v.name && old.certRequired == v.certRequired &&
		old.slashes == v.slashes && old.slashesDefault == v.slashesDefault && sameHealthChecks(old.health, v.health) {
		return old
	}
	return nil
}

// rebuild builds the views in want, keeping what k allows.
func (f *filing) rebuild(want viewSet, k keep) (views, error) {
	var v views
	var err error
	if want.origin {
		for i, proto := range []string{proxycfg.ListenerHTTP, proxycfg.ListenerHTTPS} {
			if v.origin[i], err = f.listenerSet(func(l *proxycfg.Listener) bool { return l.Protocol == proto }, k, k.prev.origin[i]); err != nil {
				return views{}, err
			}
		}
	}
	if len(want.ports) > 0 {
		v.ports = make(map[int]*listenerSet, len(want.ports))
		for port := range want.ports {
			in := func(l *proxycfg.Listener) bool { return l.Port == port && !isStreamListener(l) }
			if v.ports[port], err = f.listenerSet(in, k, k.prev.ports[port]); err != nil {
				return views{}, err
			}
		}
	}
	if want.gateways {
		if v.gateways, err = f.gatewayEndpoints(k); err != nil {
			return views{}, err
		}
	}
	return v, nil
}

// listenerSet groups the listeners that in admits into vhosts by
// hostname and files their routes into each vhost's table; a vhost of
// prev that k allows is kept, table and all.
func (f *filing) listenerSet(in func(*proxycfg.Listener) bool, k keep, prev *listenerSet) (*listenerSet, error) {
	byHost := map[string]*vhost{}
	var order []string
	var rulesOf = map[string][]*matcher.Prepared[*compiled.Target]{}
	for i := range f.listeners {
		l := &f.listeners[i]
		if !in(l) {
			continue
		}
		h := strings.ToLower(strings.TrimSuffix(l.Hostname, "."))
		v := byHost[h]
		if v == nil {
			v = &vhost{name: l.Name, stats: f.stats[l.Name]}
			byHost[h] = v
			order = append(order, h)
		} else {
			v.name += "," + l.Name
		}
		v.listeners = append(v.listeners, l.Name)
		rulesOf[h] = append(rulesOf[h], f.routesOf[l.Name]...)
		if cv := l.ClientValidation; cv != nil && !cv.AllowInsecureFallback {
			v.certRequired = true
		}
		if m, _ := parseSlashMode(l.EncodedSlashes); m == slashesUnset { // compile refused other values
			v.slashesDefault = true
		} else {
			v.slashes = max(v.slashes, m)
		}
		if hc := l.HealthCheck; hc != nil {
			v.health = append(v.health, newHealthCheck(hc, f.stats[l.Name]))
		}
	}
	var picks []matcher.Rule[*vhost]
	kept := 0
	for _, h := range order {
		v := byHost[h]
		if old := k.vhostOf(prev, h, v); old != nil {
			byHost[h], v = old, old
			kept++
		} else if len(rulesOf[h]) == 0 {
			// No routes (the last deleted by a patch): no table, as a
			// build leaves it.
		} else if up, err := k.updated(prev, h, v); err != nil {
			return nil, fmt.Errorf("listener %s: %w", v.name, err)
		} else if up != nil {
			byHost[h], v = up, up
		} else if rules := dedupe(rulesOf[h]); len(rules) > 0 {
			t, err := matcher.Build(rules)
			if err != nil {
				return nil, fmt.Errorf("listener %s: %w", v.name, err)
			}
			v.table = t
		}
		pr := matcher.Rule[*vhost]{Path: matcher.EveryPath, Ref: v, Key: matcher.Key{Name: h}}
		if h != "" {
			pr.Hostnames = []string{h}
		}
		picks = append(picks, pr)
	}
	if prev != nil && kept == len(order) && len(prev.vhosts) == kept {
		return prev, nil // every vhost kept: so is the table picking one
	}
	t, err := matcher.Compile(picks)
	if err != nil {
		return nil, err
	}
	return &listenerSet{pick: t, vhosts: byHost}, nil
}

// dedupe drops repeats of a route's match, which appear when a route is
// attached to several listeners merged into one vhost: compile prepares
// each match once, so its repeats are the same Prepared.
func dedupe(rules []*matcher.Prepared[*compiled.Target]) []*matcher.Prepared[*compiled.Target] {
	seen := make(map[*matcher.Prepared[*compiled.Target]]bool, len(rules))
	out := rules[:0:0]
	for _, r := range rules {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// withViews returns the compiled config with the views of want built too. The
// views it has are shared; it is a new compiledConfig, for the proxy to swap in.
func (s *compiledConfig) withViews(want viewSet) (*compiledConfig, error) {
	missing := viewSet{origin: want.origin && s.origin[0] == nil, gateways: want.gateways && s.gateways == nil}
	for port := range want.ports {
		if _, built := s.ports[port]; !built {
			missing = missing.add(viewOf(port))
		}
	}
	built, err := s.filed.build(missing)
	if err != nil {
		return nil, err
	}
	next := *s
	if missing.origin {
		next.origin = built.origin
	}
	if missing.gateways {
		next.gateways = built.gateways
	}
	if len(missing.ports) > 0 {
		next.ports = maps.Clone(s.ports)
		if next.ports == nil {
			next.ports = map[int]*listenerSet{}
		}
		for port := range missing.ports {
			next.ports[port] = built.ports[port]
		}
	}
	return &next, nil
}
