// This file compiles a config whole.

package dataplane

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/matcher"
)

// compiledConfig is a Config compiled: everything a request needs,
// immutable. The proxy swaps whole compiled configs atomically; a
// request loads one at its start and finishes on it.
type compiledConfig struct {
	version string
	// views pick a listener for a request, one per kind of socket the
	// proxy serves (views.go).
	views
	// filed is what the views are built from, kept to build the view of
	// a socket the proxy starts serving later.
	filed *filing
	// clusters are the slots of the clusters this config uses, indexed
	// by cluster ID. A whole compile numbers them by their place in
	// Config.Clusters; a patch numbers a cluster added after every other
	// and leaves a removed one's slot nil (deadClusters counts them),
	// and clusterOf then gives each cluster of the config its ID.
	clusters     []*clusterSlot
	clusterOf    []int // by place in Config.Clusters; nil: the place is the ID
	deadClusters int
	session      *sessionCodec
	// accessKeys are each Access team's keys, by domain; nil for a team
	// whose keys did not parse (its protected rules fail closed, unless
	// the proxy kept the team's last good keys: Proxy.load).
	accessKeys map[string]*cfaccess.Keys
	// accessProblems say why a team's keys did not parse, or what of
	// them was left out.
	accessProblems []string
	// identityNames are the headers only the proxy writes, whatever rule
	// a request matched (access.go).
	identityNames *identityNames
	// rules are every compiled rule with what the proxy keeps beside it,
	// indexed by rule ID. A whole compile numbers them in config order; a
	// patch numbers an added route's after every other, and leaves a
	// deleted route's empty (a nil Rule), which deadRules counts.
	rules     []servedRule
	deadRules int
	// routes are what each route of the config compiled to, by its place
	// in Config.Routes: where its rules start among rules, and its
	// prepared matches, which the filing holds under its listeners. A
	// route edited is compiled again from them (patch.go). A stream
	// route's has no matches and no rules.
	routes []routeCompiled
	// streams are the stream routes (stream.go), which have no rules.
	streams *streamTable
}

// clusterAt is the ID of the config's cluster i.
func (cc *compiledConfig) clusterAt(i int) int {
	if cc.clusterOf == nil {
		return i
	}
	return cc.clusterOf[i]
}

// routeCompiled is what one route compiled to.
type routeCompiled struct {
	firstRule int
	matches   []*matcher.Prepared[*compiled.Target]
}

// servedRule is a compiled rule with what this proxy keeps beside it: its
// metrics, and its span names when tracing (Proxy.adoptRuleStats).
type servedRule struct {
	*compiled.Rule
	stats *observe.RuleStats
	// spanNames are the server span names of the common methods, made
	// once when tracing.
	spanNames map[string]string
}

// compile checks cfg and builds a compiledConfig with the views in want,
// its listeners given sockets of their own as place says (gateways.go),
// and no stream route on originPorts, the origin listeners' own.
// slotFor returns the stable slot for a cluster name; compile does not
// install cluster states (the proxy does that once the whole config has
// passed). Every problem is reported, joined, each naming its place.
//
// listenersBefore are the listener stats of the config served, which
// the listeners of the same names keep.
func compile(cfg *proxycfg.Config, slotFor func(name string) *clusterSlot, listenersBefore map[string]*observe.ListenerStats, want viewSet, place placement, originPorts []int) (*compiledConfig, error) {
	if cfg.Schema != proxycfg.SchemaVersion {
		return nil, fmt.Errorf("config schema is %q; this proxy reads %q (upgrade the proxy or the controller so they match)", cfg.Schema, proxycfg.SchemaVersion)
	}
	c := &compiler{cfg: cfg, cc: &compiledConfig{version: cfg.Version}, listenersBefore: listenersBefore}
	if len(cfg.SessionKeys) > 0 {
		c.cc.session = newSessionCodec(cfg.SessionKeys...)
	}
	c.clusters(slotFor)
	c.listeners(place)
	c.accessTeams()
	c.routes()
	c.streamRoutes(originPorts)
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	c.cc.identityNames = identityNamesOf(c.cc.rules)
	var err error
	if c.cc.views, err = c.cc.filed.build(want); err != nil {
		return nil, err
	}
	return c.cc, nil
}

// compiler holds what compile's steps share.
type compiler struct {
	cfg        *proxycfg.Config
	cc         *compiledConfig
	clusterIDs map[string]int                // by cluster name
	byName     map[string]*proxycfg.Listener // the listeners that passed
	// tcpClusters are the names of the clusters of protocol tcp, made at
	// the first question (tcpCluster).
	tcpClusters map[string]bool
	// listenersBefore are the listener stats of the config served, by
	// listener name.
	listenersBefore map[string]*observe.ListenerStats
	errs            []error
}

func (c *compiler) fail(format string, a ...any) { c.errs = append(c.errs, fmt.Errorf(format, a...)) }

// clusters numbers the clusters by their place in the config and gives
// each its slot.
func (c *compiler) clusters(slotFor func(name string) *clusterSlot) {
	c.clusterIDs = make(map[string]int, len(c.cfg.Clusters))
	c.cc.clusters = make([]*clusterSlot, len(c.cfg.Clusters))
	for i := range c.cfg.Clusters {
		cl := &c.cfg.Clusters[i]
		if cl.Name == "" {
			c.fail("clusters[%d]: name is empty", i)
			continue
		}
		if _, dup := c.clusterIDs[cl.Name]; dup {
			c.fail("cluster %q: defined twice", cl.Name)
			continue
		}
		c.clusterIDs[cl.Name] = i
		c.cc.clusters[i] = slotFor(cl.Name)
	}
}

// listeners checks each listener, and how the listeners placed on
// sockets of their own share them.
func (c *compiler) listeners(place placement) {
	c.byName = map[string]*proxycfg.Listener{}
	for i := range c.cfg.Listeners {
		l := &c.cfg.Listeners[i]
		switch {
		case l.Name == "":
			c.fail("listeners[%d]: name is empty", i)
		case c.byName[l.Name] != nil:
			c.fail("listener %q: defined twice", l.Name)
		case l.Port < 0 || l.Port > 65535:
			c.fail("listener %q: port %d out of range", l.Name, l.Port)
		case l.Protocol != proxycfg.ListenerHTTP && l.Protocol != proxycfg.ListenerHTTPS && !isStreamListener(l):
			c.fail("listener %q: protocol %q is not HTTP, HTTPS, TCP or TLS", l.Name, l.Protocol)
		case !validSlashMode(l.EncodedSlashes):
			c.fail("listener %q: encodedSlashes %q is not %s, %s or %s", l.Name, l.EncodedSlashes, proxycfg.SlashesReject, proxycfg.SlashesDecode, proxycfg.SlashesKeep)
		case l.HealthCheck != nil && checkHealthCheck(l) != nil:
			c.fail("listener %q: %w", l.Name, checkHealthCheck(l))
		default:
			if l.Hostname != "" {
				hostOnly := matcher.Rule[int]{Hostnames: []string{l.Hostname}, Path: matcher.EveryPath}
				if err := hostOnly.Validate(); err != nil {
					c.fail("listener %q: %v", l.Name, err)
					continue
				}
			}
			c.byName[l.Name] = l
		}
	}
	at, errs := placeGatewayListeners(c.cfg.Listeners, place)
	c.errs = append(c.errs, errs...)
	var gatewayTLS map[gatewayAddr]*tls.Config
	if len(errs) == 0 {
		var err error
		if gatewayTLS, err = buildGatewayTLS(c.cfg.Listeners, at); err != nil {
			c.errs = append(c.errs, err)
		}
	}
	// Each HTTP and HTTPS listener's stats: those it had under its
	// name, or new ones.
	stats := make(map[string]*observe.ListenerStats, len(c.byName))
	for name, l := range c.byName {
		if isStreamListener(l) {
			continue
		}
		if stats[name] = c.listenersBefore[name]; stats[name] == nil {
			stats[name] = &observe.ListenerStats{Listener: name}
		}
	}
	c.cc.filed = &filing{
		listeners:  c.cfg.Listeners,
		routesOf:   map[string][]*matcher.Prepared[*compiled.Target]{},
		gatewayAt:  at,
		gatewayTLS: gatewayTLS,
		stats:      stats,
	}
}

// accessTeams parses each Access team's keys. A team whose keys do not
// parse is not an error of the config (the keys come from Cloudflare, and
// a bad document must not stop route changes): its rules fail closed.
func (c *compiler) accessTeams() {
	c.cc.accessKeys = make(map[string]*cfaccess.Keys, len(c.cfg.AccessTeams))
	for i := range c.cfg.AccessTeams {
		t := &c.cfg.AccessTeams[i]
		if t.Domain == "" {
			c.fail("accessTeams[%d]: domain is empty", i)
			continue
		}
		if _, dup := c.cc.accessKeys[t.Domain]; dup {
			c.fail("access team %q: defined twice", t.Domain)
			continue
		}
		keys, skipped, err := cfaccess.ParseKeys([]byte(t.Keys))
		for _, s := range skipped {
			c.cc.accessProblems = append(c.cc.accessProblems, "access team "+t.Domain+": "+s)
		}
		if err != nil {
			c.cc.accessProblems = append(c.cc.accessProblems, "access team "+t.Domain+": "+err.Error())
		}
		c.cc.accessKeys[t.Domain] = keys
	}
}

// routes compiles every rule once, prepares each of its matches once, and
// files them under the listeners the route is attached to. Stream routes
// are streamRoutes' (stream.go).
func (c *compiler) routes() {
	var prep matcher.Preparer[*compiled.Target]
	c.cc.routes = make([]routeCompiled, len(c.cfg.Routes))
	for ri := range c.cfg.Routes {
		r := &c.cfg.Routes[ri]
		first := len(c.cc.rules)
		if r.Kind.Stream() {
			if r.Name == "" {
				c.fail("routes[%d]: name is empty", ri)
			}
			c.cc.routes[ri] = routeCompiled{firstRule: first}
			continue
		}
		rules, matches := c.route(r, ri, first, &prep)
		c.cc.rules = append(c.cc.rules, rules...)
		c.cc.routes[ri] = routeCompiled{firstRule: first, matches: matches}
		for _, ln := range r.Listeners {
			if c.byName[ln] == nil {
				c.fail("route %s/%s: listener %q is not defined", r.Namespace, r.Name, ln)
				continue
			}
			c.cc.filed.routesOf[ln] = append(c.cc.filed.routesOf[ln], matches...)
		}
	}
}

// route compiles one route's rules, numbered from firstRule, and
// prepares their matches; problems go to c.errs. A rule that does not
// compile is left out, and the config is refused.
func (c *compiler) route(r *proxycfg.Route, ri, firstRule int, prep *matcher.Preparer[*compiled.Target]) ([]servedRule, []*matcher.Prepared[*compiled.Target]) {
	where := "route " + r.Namespace + "/" + r.Name
	if r.Name == "" {
		c.fail("routes[%d]: name is empty", ri)
		return nil, nil
	}
	if r.Kind != proxycfg.KindHTTP && r.Kind != proxycfg.KindGRPC {
		c.fail("%s: kind %q is not %s, %s, %s or %s", where, r.Kind, proxycfg.KindHTTP, proxycfg.KindGRPC, proxycfg.KindTCP, proxycfg.KindTLS)
	}
	c.checkHTTPRoute(r)
	cluster := func(name string) (int, bool) { id, ok := c.clusterIDs[name]; return id, ok }
	var rules []servedRule
	var prepared []*matcher.Prepared[*compiled.Target]
	for i := range r.Rules {
		ru, targets, err := compiled.CompileRule(r, i, firstRule+len(rules), cluster)
		if ru != nil {
			rules = append(rules, servedRule{Rule: ru})
			if a := ru.Access; a != nil {
				if _, ok := c.cc.accessKeys[a.Team]; !ok {
					c.fail("%s rules[%d]: access: team %q is not among the config's accessTeams", where, i, a.Team)
				}
			}
		}
		if err != nil {
			c.fail("%s rules[%d]: %w", where, i, err)
			continue
		}
		for mi, m := range r.Rules[i].Matches {
			mr, err := compiled.MatcherRule(r, i, mi, m, targets[mi])
			if err == nil {
				var pr *matcher.Prepared[*compiled.Target]
				if pr, err = prep.Prepare(&mr); err == nil {
					prepared = append(prepared, pr)
					continue
				}
			}
			c.errs = append(c.errs, err) // it names the route, rule and match
		}
	}
	return rules, prepared
}

// statusText is the body of an error the proxy answers itself.
func statusText(code int) string { return strconv.Itoa(code) + " " + http.StatusText(code) }
