// This file resolves backendRefs into clusters.

package translate

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Backend kinds a backendRef may name.
const (
	groupMCS          = "multicluster.x-k8s.io"
	kindService       = "Service"
	kindServiceImport = "ServiceImport"
)

// refProblem is why a backendRef cannot be used: the route's ResolvedRefs
// reason and a message for the user.
type refProblem struct {
	reason string
	msg    string
}

// backendKey identifies one cluster: what it points at and how it is spoken
// to. Routes sharing a backend share the cluster.
type backendKey struct {
	kind, namespace, name string
	port                  int32
	grpc                  bool   // speaks HTTP/2 (a GRPCRoute's backend)
	stream                bool   // relays bytes (a TCPRoute's or TLSRoute's backend)
	terminate             bool   // a stream the proxy terminates: BackendTLSPolicy applies
	clientCert            string // the Gateway whose client certificate TLS uses
}

// resolvedBackend is a cluster decision, cached per backendKey.
type resolvedBackend struct {
	name    string
	problem *refProblem
	// policies are the BackendTLSPolicies that competed for this backend
	// port; the Gateways whose routes use it become their ancestors.
	policies []*policyInfo
}

// backendRef resolves one backendRef of a route into a cluster name, or a
// problem for the route's ResolvedRefs condition.
func (t *translator) backendRef(routeKind, routeNS string, ref *gwv1.BackendObjectReference, grpc bool, gw *gatewayInfo) (string, *refProblem) {
	var gws []*gatewayInfo
	if gw != nil {
		gws = []*gatewayInfo{gw}
	}
	return t.backendRefOf(routeKind, routeNS, ref, grpc, false, gws)
}

// backendRefOf is backendRef for the Gateways gws (the policies met have
// each for an ancestor; the first lends its backend client certificate),
// and for a stream the proxy terminates when terminate is set.
func (t *translator) backendRefOf(routeKind, routeNS string, ref *gwv1.BackendObjectReference, grpc, terminate bool, gws []*gatewayInfo) (string, *refProblem) {
	var gw *gatewayInfo
	if len(gws) > 0 {
		gw = gws[0]
	}
	group, kind := "", kindService
	if ref.Group != nil {
		group = string(*ref.Group)
	}
	if ref.Kind != nil {
		kind = string(*ref.Kind)
	}
	ns := routeNS
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	switch {
	case group == "" && kind == kindService:
	case group == groupMCS && kind == kindServiceImport:
	case group == v1alpha1.Group && kind == v1alpha1.KindExternalBackend:
	default:
		return "", &refProblem{string(gwv1.RouteReasonInvalidKind),
			fmt.Sprintf("backendRef %s: kind %s/%s is not supported (Service, %s/%s or %s/%s)",
				ref.Name, group, kind, groupMCS, kindServiceImport, v1alpha1.Group, v1alpha1.KindExternalBackend)}
	}
	if !t.look.granted(groupGateway, routeKind, routeNS, group, kind, ns, string(ref.Name)) {
		return "", &refProblem{string(gwv1.RouteReasonRefNotPermitted),
			fmt.Sprintf("backendRef %s/%s %s/%s: no ReferenceGrant in namespace %s allows it", group, kind, ns, ref.Name, ns)}
	}
	var port int32
	if ref.Port != nil {
		port = int32(*ref.Port)
	}
	k := backendKey{kind: kind, namespace: ns, name: string(ref.Name), port: port, grpc: grpc, stream: streamKind(routeKind), terminate: terminate}
	if gw != nil && gw.clientCertPEM != nil {
		k.clientCert = gw.key.String()
	}
	// Read before the resolution is reused: the read is what a Cache
	// records for the route (lookup.go).
	objs, policies := t.look.backend(k)
	if rb, ok := t.backends[k]; ok {
		t.noteAncestors(rb.policies, gws)
		return rb.name, rb.problem
	}
	t.lastPolicies = nil
	var c *proxycfg.Cluster
	var p *refProblem
	switch kind {
	case kindService:
		c, p = t.serviceCluster(k, objs, policies)
	case kindServiceImport:
		c, p = t.serviceImportCluster(k, objs.slices)
	default:
		c, p = t.externalCluster(k, objs.ext, policies)
	}
	rb := resolvedBackend{problem: p, policies: t.lastPolicies}
	t.noteAncestors(rb.policies, gws)
	if p == nil {
		if c.TLS != nil && gw != nil && gw.clientCertPEM != nil {
			c.TLS.ClientCertPEM, c.TLS.ClientKeyPEM = string(gw.clientCertPEM), string(gw.clientKeyPEM)
		}
		rb.name = c.Name
		if t.clusterIdx == nil {
			t.clusterIdx = map[string]int{}
		}
		t.clusterIdx[c.Name] = len(t.clusters)
		t.clusters = append(t.clusters, *c)
	}
	t.backends[k] = rb
	return rb.name, rb.problem
}

func (t *translator) noteAncestors(ps []*policyInfo, gws []*gatewayInfo) {
	for _, gw := range gws {
		for _, p := range ps {
			p.ancestors[gw] = true
		}
	}
}

// clusterName spells a cluster for logs and metrics: "ns/name:port", with
// the kind when it is not a Service and the protocol when it is not
// HTTP/1.1. tls says a TLS cluster offers HTTP/2, a tcp one re-encrypts.
func clusterName(k backendKey, proto string, tls bool) string {
	var b strings.Builder
	if k.kind != kindService {
		b.WriteString(k.kind)
		b.WriteByte(':')
	}
	b.WriteString(k.namespace)
	b.WriteByte('/')
	b.WriteString(k.name)
	if k.port != 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(int(k.port)))
	}
	switch {
	case proto == proxycfg.ProtoTCP && tls:
		b.WriteString("+tcp+tls")
	case proto == proxycfg.ProtoTCP:
		b.WriteString("+tcp")
	case proto == proxycfg.ProtoTLS && tls:
		b.WriteString("+tls-h2")
	case proto == proxycfg.ProtoTLS:
		b.WriteString("+tls")
	case proto == proxycfg.ProtoH2C:
		b.WriteString("+h2c")
	}
	if k.clientCert != "" {
		b.WriteString("@" + k.clientCert)
	}
	return b.String()
}

// serviceCluster resolves a Service port to its ready endpoints.
func (t *translator) serviceCluster(k backendKey, objs backendObjects, policies []*gwv1.BackendTLSPolicy) (*proxycfg.Cluster, *refProblem) {
	svc := objs.svc
	if svc == nil {
		return nil, &refProblem{string(gwv1.RouteReasonBackendNotFound), fmt.Sprintf("Service %s/%s not found", k.namespace, k.name)}
	}
	if k.port == 0 {
		return nil, &refProblem{string(gwv1.RouteReasonBackendNotFound), fmt.Sprintf("backendRef to Service %s/%s needs a port", k.namespace, k.name)}
	}
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == k.port {
			sp = &svc.Spec.Ports[i]
			break
		}
	}
	if sp == nil && svc.Spec.Type != corev1.ServiceTypeExternalName {
		return nil, &refProblem{string(gwv1.RouteReasonBackendNotFound), fmt.Sprintf("Service %s/%s has no port %d", k.namespace, k.name, k.port)}
	}
	if k.stream {
		return t.streamCluster(k, objs, sp, policies)
	}
	appProto := ""
	if sp != nil && sp.AppProtocol != nil {
		appProto = *sp.AppProtocol
	}
	proto, ok := protocolOf(appProto)
	if !ok {
		return nil, &refProblem{string(gwv1.RouteReasonUnsupportedProtocol),
			fmt.Sprintf("Service %s/%s port %d: appProtocol %q is not supported (use kubernetes.io/h2c, kubernetes.io/ws, kubernetes.io/wss or https)", k.namespace, k.name, k.port, appProto)}
	}
	if k.grpc && proto == wireHTTP1 && appProto != "" {
		return nil, &refProblem{string(gwv1.RouteReasonUnsupportedProtocol),
			fmt.Sprintf("Service %s/%s port %d: appProtocol %q is HTTP/1.1, and gRPC needs HTTP/2 (use kubernetes.io/h2c, or https with a BackendTLSPolicy)", k.namespace, k.name, k.port, appProto)}
	}
	sectionName := ""
	if sp != nil {
		sectionName = sp.Name
	}
	c := &proxycfg.Cluster{Endpoints: []proxycfg.Endpoint{}}
	tlsSet, p := t.backendTLS(policies, "", kindService, k.name, sectionName)
	if p != nil {
		return nil, p
	}
	c.Protocol, c.TLS = clusterProtocol(proto, k.grpc, tlsSet, k.name+"."+k.namespace+".svc")
	if c.Protocol == "" {
		return nil, &refProblem{string(gwv1.RouteReasonUnsupportedProtocol),
			fmt.Sprintf("Service %s/%s port %d: appProtocol %q needs TLS: attach a BackendTLSPolicy", k.namespace, k.name, k.port, appProto)}
	}
	c.Name = clusterName(k, c.Protocol, c.TLS != nil && c.TLS.H2)
	return c, t.serviceEndpoints(c, k, objs, sp)
}

// serviceEndpoints fills a Service port's cluster with its endpoints:
// its EndpointSlices' ready ones, or an ExternalName Service's name.
func (t *translator) serviceEndpoints(c *proxycfg.Cluster, k backendKey, objs backendObjects, sp *corev1.ServicePort) *refProblem {
	svc := objs.svc
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		// ExternalName lets a namespace name any host, including the
		// proxy's own node or a metadata service (CVE-2021-25740), so in a
		// cluster it must name a DNS name that is not local, never an IP.
		name := strings.TrimSuffix(strings.ToLower(svc.Spec.ExternalName), ".")
		if !t.in.AnyEndpointAddress && (net.ParseIP(name) != nil || name == "localhost" || strings.HasSuffix(name, ".localhost") || !validHostname(name)) {
			return &refProblem{string(gwv1.RouteReasonUnsupportedProtocol),
				fmt.Sprintf("Service %s/%s: externalName %q must be a DNS name, not an IP address or localhost", k.namespace, k.name, svc.Spec.ExternalName)}
		}
		c.Endpoints = append(c.Endpoints, proxycfg.Endpoint{Address: net.JoinHostPort(name, strconv.Itoa(int(k.port)))})
		return nil
	}
	c.Endpoints = t.endpoints(objs.slices, func(p *discoveryv1.EndpointPort) bool {
		return p.Name != nil && *p.Name == sp.Name || p.Name == nil && sp.Name == ""
	})
	return nil
}

// serviceImportCluster resolves a multi-cluster ServiceImport through the
// EndpointSlices labelled with its name.
func (t *translator) serviceImportCluster(k backendKey, slices []*discoveryv1.EndpointSlice) (*proxycfg.Cluster, *refProblem) {
	if len(slices) == 0 {
		return nil, &refProblem{string(gwv1.RouteReasonBackendNotFound),
			fmt.Sprintf("ServiceImport %s/%s has no EndpointSlices (label %s)", k.namespace, k.name, labelMCSService)}
	}
	// Without the ServiceImport object, its ports are what the slices
	// carry: the port named by the backendRef, or the only one.
	portOK := func(p *discoveryv1.EndpointPort) bool { return p.Port != nil && *p.Port == k.port }
	found := false
	for _, s := range slices {
		for i := range s.Ports {
			found = found || portOK(&s.Ports[i])
		}
	}
	if !found {
		if len(slices[0].Ports) != 1 {
			return nil, &refProblem{string(gwv1.RouteReasonBackendNotFound),
				fmt.Sprintf("ServiceImport %s/%s: no EndpointSlice port %d", k.namespace, k.name, k.port)}
		}
		portOK = func(*discoveryv1.EndpointPort) bool { return true }
	}
	c := &proxycfg.Cluster{}
	c.Protocol, c.TLS = clusterProtocol(wireHTTP1, k.grpc, nil, "")
	if k.stream {
		c.Protocol = proxycfg.ProtoTCP
	}
	c.Name = clusterName(k, c.Protocol, false)
	c.Endpoints = t.endpoints(slices, portOK)
	return c, nil
}

// externalCluster resolves an ExternalBackend: one DNS name or IP.
func (t *translator) externalCluster(k backendKey, eb *v1alpha1.ExternalBackend, policies []*gwv1.BackendTLSPolicy) (*proxycfg.Cluster, *refProblem) {
	if eb == nil {
		return nil, &refProblem{string(gwv1.RouteReasonBackendNotFound), fmt.Sprintf("ExternalBackend %s/%s not found", k.namespace, k.name)}
	}
	port := eb.Spec.Port
	if k.port != 0 {
		port = k.port
	}
	if eb.Spec.Host == "" || port <= 0 || port > 65535 {
		return nil, &refProblem{string(gwv1.RouteReasonBackendNotFound), fmt.Sprintf("ExternalBackend %s/%s needs a host and a port", k.namespace, k.name)}
	}
	if k.stream {
		// Bytes are relayed as they come: the backend's protocol is
		// the client's business, and a BackendTLSPolicy applies only
		// to a stream the proxy terminates (streamCluster).
		c := &proxycfg.Cluster{Protocol: proxycfg.ProtoTCP,
			Endpoints: []proxycfg.Endpoint{{Address: net.JoinHostPort(eb.Spec.Host, strconv.Itoa(int(port)))}}}
		if k.terminate {
			tlsSet, prob := t.backendTLS(policies, v1alpha1.Group, v1alpha1.KindExternalBackend, k.name, "")
			if prob != nil {
				return nil, prob
			}
			c.TLS = tlsSet
		}
		c.Name = clusterName(k, proxycfg.ProtoTCP, c.TLS != nil)
		return c, nil
	}
	var proto string
	switch eb.Spec.Protocol {
	case "", v1alpha1.ProtocolHTTP:
	case v1alpha1.ProtocolH2C:
		proto = "kubernetes.io/h2c"
	case v1alpha1.ProtocolHTTPS:
		proto = "https"
	default:
		return nil, &refProblem{string(gwv1.RouteReasonUnsupportedProtocol),
			fmt.Sprintf("ExternalBackend %s/%s: protocol %q is not http, h2c or https", k.namespace, k.name, eb.Spec.Protocol)}
	}
	p, _ := protocolOf(proto)
	tlsSet, prob := t.backendTLS(policies, v1alpha1.Group, v1alpha1.KindExternalBackend, k.name, "")
	if prob != nil {
		return nil, prob
	}
	c := &proxycfg.Cluster{}
	c.Protocol, c.TLS = clusterProtocol(p, k.grpc, tlsSet, eb.Spec.Host)
	c.Name = clusterName(k, c.Protocol, c.TLS != nil && c.TLS.H2)
	c.Endpoints = []proxycfg.Endpoint{{Address: net.JoinHostPort(eb.Spec.Host, strconv.Itoa(int(port)))}}
	return c, nil
}

// Wire protocols a Service port's appProtocol can ask for.
const (
	wireHTTP1 = "http1"
	wireH2C   = "h2c"
	wireTLS   = "tls"
)

// protocolOf maps an appProtocol to the wire protocol it asks for.
func protocolOf(appProtocol string) (string, bool) {
	switch strings.ToLower(appProtocol) {
	case "", "http", "kubernetes.io/http", "kubernetes.io/ws", "tcp":
		return wireHTTP1, true
	case "kubernetes.io/h2c", "h2c", "grpc", "http2":
		return wireH2C, true
	case "https", "kubernetes.io/wss", "kubernetes.io/https", "tls":
		return wireTLS, true
	}
	return "", false
}

// clusterProtocol combines what the port asks for, the route kind and any
// BackendTLSPolicy: a policy always means TLS, gRPC always means HTTP/2.
// It returns "" when TLS is asked for without a policy and without a
// server name to verify against.
func clusterProtocol(wire string, grpc bool, policy *proxycfg.TLSSettings, defaultSNI string) (string, *proxycfg.TLSSettings) {
	if policy != nil {
		policy.H2 = grpc || wire == wireH2C
		return proxycfg.ProtoTLS, policy
	}
	switch {
	case wire == wireTLS && defaultSNI == "":
		return "", nil
	case wire == wireTLS:
		// No policy: verify against the system roots, as a browser would.
		return proxycfg.ProtoTLS, &proxycfg.TLSSettings{SNI: defaultSNI, H2: grpc}
	case grpc || wire == wireH2C:
		return proxycfg.ProtoH2C, nil
	}
	return proxycfg.ProtoHTTP1, nil
}

// endpoints gathers the ready endpoints of slices on the port that portOK
// picks; when none is ready, the serving ones (terminating pods still
// answering) rather than nothing. Addresses are sorted for determinism.
func (t *translator) endpoints(sls []*discoveryv1.EndpointSlice, portOK func(*discoveryv1.EndpointPort) bool) []proxycfg.Endpoint {
	var ready, serving []proxycfg.Endpoint
	for _, s := range sls {
		var port int32
		for i := range s.Ports {
			if p := &s.Ports[i]; p.Port != nil && portOK(p) {
				port = *p.Port
				break
			}
		}
		if port == 0 {
			continue
		}
		ps := strconv.Itoa(int(port))
		for i := range s.Endpoints {
			e := &s.Endpoints[i]
			isReady := e.Conditions.Ready == nil || *e.Conditions.Ready
			isServing := e.Conditions.Serving != nil && *e.Conditions.Serving
			if !isReady && !isServing {
				continue
			}
			for _, a := range e.Addresses {
				if !t.in.AnyEndpointAddress && s.AddressType != discoveryv1.AddressTypeFQDN && !clusterAddress(a) {
					continue
				}
				ep := proxycfg.Endpoint{Address: joinHostPort(a, ps)}
				if isReady {
					ready = append(ready, ep)
				} else {
					serving = append(serving, ep)
				}
			}
		}
	}
	list := ready
	if len(list) == 0 {
		list = serving
	}
	if list == nil {
		return []proxycfg.Endpoint{}
	}
	// Sorted and without repeats (an address in two slices), so the
	// config does not change with the order slices are listed in.
	if !slices.IsSortedFunc(list, compareEndpoint) {
		slices.SortFunc(list, compareEndpoint)
	}
	return slices.CompactFunc(list, func(a, b proxycfg.Endpoint) bool { return a.Address == b.Address })
}

func compareEndpoint(a, b proxycfg.Endpoint) int { return strings.Compare(a.Address, b.Address) }

// joinHostPort is net.JoinHostPort without its scan for a colon when the
// address is plainly IPv4 or a name.
func joinHostPort(host, port string) string {
	if strings.IndexByte(host, ':') >= 0 {
		return net.JoinHostPort(host, port)
	}
	return host + ":" + port
}

// clusterAddress refuses what the API server refuses in an EndpointSlice
// (loopback, link-local, unspecified), in case a snapshot was built by
// hand: a Service must not turn the proxy into a door to its own host.
func clusterAddress(a string) bool {
	ip := net.ParseIP(a)
	return ip != nil && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() && !ip.IsUnspecified() && !ip.IsMulticast()
}

// streamCluster resolves a Service port for a stream route: a cluster of
// protocol tcp, whatever its appProtocol (which only picks the tunnel's
// scheme: portScheme). A BackendTLSPolicy applies only to a stream the
// proxy terminates (k.terminate: a TLSRoute on a listener of mode
// Terminate), whose cluster then carries its TLS settings and re-encrypts;
// otherwise the connection's TLS, if any, is the client's, end to end. An
// ExternalName Service is its name on the port; sp is nil only for one.
func (t *translator) streamCluster(k backendKey, objs backendObjects, sp *corev1.ServicePort, policies []*gwv1.BackendTLSPolicy) (*proxycfg.Cluster, *refProblem) {
	c := &proxycfg.Cluster{Protocol: proxycfg.ProtoTCP, Endpoints: []proxycfg.Endpoint{}}
	if k.terminate {
		sectionName := ""
		if sp != nil {
			sectionName = sp.Name
		}
		tlsSet, p := t.backendTLS(policies, "", kindService, k.name, sectionName)
		if p != nil {
			return nil, p
		}
		c.TLS = tlsSet
	}
	c.Name = clusterName(k, proxycfg.ProtoTCP, c.TLS != nil)
	if t.clusterSchemes == nil {
		t.clusterSchemes = map[string]string{}
	}
	t.clusterSchemes[c.Name] = portScheme(sp)
	return c, t.serviceEndpoints(c, k, objs, sp)
}
