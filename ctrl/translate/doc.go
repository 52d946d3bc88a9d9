// Package translate is where tunnelgate's Gateway API semantics live. One
// pure function, Translate, turns a snapshot of objects (Input) into
// everything the rest of the system acts on (Output): the data-plane config
// the proxies serve, the status of every object tunnelgate manages, the
// public hostnames the tunnel and DNS must carry, and events. It reads no
// clock, client or file: the controller feeds it informer caches, and
// standalone mode feeds it YAML files.
//
// A translation runs in dependency order, one file per step:
//
//	gatewayclass.go  classes of our controller: parameters, CRD version
//	gateway.go       Gateways and their listeners: protocols, TLS
//	                 certificates, allowedRoutes, conflicts
//	listenerset.go   ListenerSets attached to Gateways that invite them
//	attach.go        routes bound to listeners: parentRefs, hostname
//	                 intersection, HTTPRoute/GRPCRoute conflicts
//	httproute.go     HTTPRoute rules to data-plane rules
//	grpcroute.go     GRPCRoute rules (methods become paths)
//	rules.go         what both route kinds share: filters, backends, and
//	                 dropping a rule the proxy would refuse
//	streamroute.go   TCPRoutes and TLSRoutes: one rule of backends, a TCP
//	                 listener's oldest route, hostnames through the tunnel
//	originports.go   each stream route's origin port through a tunnel
//	backends.go      backendRefs to clusters: Services, EndpointSlices,
//	                 ServiceImports, ExternalBackends, appProtocol
//	backendtls.go    BackendTLSPolicy: CA, SANs, conflicts, ancestors
//	access.go        AccessPolicy: which policy protects each rule
//	accessstatus.go  AccessPolicy statuses, and the condition on targets
//	streamaccess.go  AccessPolicy on stream routes: checked by the tunnel
//	loadbalancingpolicy.go
//	                 LoadBalancingPolicy: the hostname a Cloudflare load
//	                 balancer takes, its listeners' health checks, and
//	                 the policies' statuses
//	dnspolicy.go     DNSPolicy: the hostnames whose DNS is left to
//	                 others, and the policies' statuses
//	translate.go     the order of the steps, route and Gateway statuses,
//	                 and the assembled config
//
// and beside them:
//
//	snapshot.go      Input and Snapshot: what translate reads
//	output.go        Output: what it decides
//	index.go         the snapshot's objects keyed for lookups, built once
//	tunnel.go        what the Cloudflare sync reports back (TunnelState)
//	rotation.go      the GatewayClass condition on its tunnel credential's
//	                 rotation
//	loadbalancing.go what a cluster asks of Cloudflare Load Balancing
//	                 (LoadBalancing), and what the sync reports (LBState)
//	addresses.go     the address each Gateway is given
//	frontendtls.go   client certificates asked of a Gateway's clients
//	hostname.go      which hostnames the Gateway API accepts
//	duration.go      Gateway API durations (GEP-2257)
//
// Every condition is built by conds (conditions.go), which keeps a
// condition's lastTransitionTime when its status did not change, so a
// resync of an unchanged cluster produces an identical Output, and Diff
// (diff.go) finds nothing to write.
//
// A problem is reported on the object that has it and stays there. A bad
// listener, a route that does not attach, an unresolved backendRef or an
// invalid rule never keeps another object from being served. In the config
// they become a listener not served, a route left out, a backend answering
// 500 for its share, or a rule dropped. Translate never emits a config the
// proxy would refuse: each rule is checked with compiled.ValidateRule,
// whose RuleError says where each problem is, for the route's status.
//
// Incremental translation is a layer in front of Translate: a Cache's
// Translate method returns what Translate would, with the work of the
// last translation reused. It remembers rule validation, and whole route
// translations whose inputs are unchanged since last time (by identity
// and resourceVersion, cache.go), even when objects every route may
// depend on changed, if the change does not reach them (a Gateway's
// other listeners, a grant they did not ask). When only backends and
// routes changed since the last translation (an EndpointSlice, the most
// common change in a cluster; a route edited, added or deleted), it
// patches that translation instead: the routes changed or using them are
// translated again, and the rest of the Output is shared with the last
// one (so an Output is read-only).
//
//	cache.go      the Cache: what it keeps, the objects every route may
//	              depend on (the epoch), and which of their changes a
//	              route's remembered translation survives
//	echo.go       a status the controller wrote, come back: no change
//	routememo.go  a route's remembered translation, and when it holds
//	patch.go      patching the last translation when only backends changed
//	routepatch.go ... and routes added or deleted
//	lookup.go     the translator's only way to objects by name; it records
//	              what a route's translation read, so the Cache knows what
//	              to check before reusing it
//
// Translate itself knows nothing of the Cache beyond a few calls that do
// nothing (or the plain computation) without one, and a route's
// translation cannot read a backend without the read being recorded.
package translate
