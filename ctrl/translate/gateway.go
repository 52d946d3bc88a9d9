// This file translates Gateways and their listeners.

package translate

import (
	"crypto/tls"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

type gatewayInfo struct {
	obj   *gwv1.Gateway
	key   types.NamespacedName
	class *classInfo
	// listeners are the Gateway's own, then those of attached ListenerSets
	// (oldest set first): the order conflicts are decided in.
	listeners []*listenerInfo
	own       []*listenerInfo
	sets      []*listenerSetInfo
	accepted  bool
	// address is the Gateway's own, from Input.AddressPool (addresses.go);
	// invalid when there is no pool or it is exhausted.
	address netip.Addr
	// addressReason and addressMsg say why the Gateway has no address
	// when it needs one (the Programmed condition's).
	addressReason, addressMsg string
	// clientCert is the Gateway's backend client certificate, when valid.
	clientCertPEM, clientKeyPEM []byte
	// insecureFrontend: a served HTTPS listener lets clients in without a
	// valid certificate (frontendtls.go).
	insecureFrontend bool
	// params is the GatewayConfig its parametersRef names, if valid;
	// dedicated says it asks for a data plane of the Gateway's own.
	params    *v1alpha1.GatewayConfig
	dedicated bool
	// moving: a dedicated Gateway the shared proxies still serve, through
	// its class's tunnel, until its plane has a ready proxy (planes.go).
	moving bool
	conds  conds
	// facts is what its routes' translations read of it, once worked
	// out (routeFacts).
	facts *gatewayFacts
}

// listenerInfo is one listener of a Gateway or a ListenerSet entry.
type listenerInfo struct {
	gw       *gatewayInfo
	set      *listenerSetInfo // nil for the Gateway's own listeners
	name     string
	hostname string
	// publicHost is a TCP listener's public hostname, which its owner's
	// tcp-hostnames annotation gives it (tcphostnames.go).
	publicHost string
	port       int32
	protocol   gwv1.ProtocolType
	// ns is the namespace "Same" refers to: the owner's.
	ns       string
	from     gwv1.FromNamespaces
	selector labels.Selector
	kinds    []gwv1.RouteGroupKind
	// attachable: routes may attach (accepted, not conflicted).
	attachable bool
	// certOK is false when an HTTPS listener's certificates do not
	// resolve: routes attach, but the listener is not served.
	certOK bool
	// certs are the certificateRefs' pairs, once they all resolve.
	certs []proxycfg.Certificate
	// clientValidation is the Gateway's frontend validation for this
	// HTTPS listener's port, nil when there is none.
	clientValidation *proxycfg.ClientValidation
	// terminate: a TLS listener of tls.mode Terminate. Its certificates
	// resolve as an HTTPS listener's do (listenerTLS); on its port it
	// conflicts with Passthrough listeners (protoKey).
	terminate bool
	// conflict is the Conflicted reason, when the listener lost one.
	conflict string
	attached int32
	dpName   string
	conds    conds
}

const groupGateway = gwv1.GroupName // gateway.networking.k8s.io

// gateways decides every Gateway of an accepted class of ours, its
// listeners, and the ListenerSets attached to it.
func (t *translator) gateways() {
	gws := append([]*gwv1.Gateway(nil), t.in.Gateways...)
	sort.Slice(gws, func(i, j int) bool { return lessNN(gws[i].Namespace, gws[i].Name, gws[j].Namespace, gws[j].Name) })
	for _, g := range gws {
		ci := t.classByName[string(g.Spec.GatewayClassName)]
		if ci == nil {
			continue
		}
		t.out.GatewayClasses[ci.obj.Name].Finalizer = true
		if g.DeletionTimestamp != nil {
			continue // being deleted: it holds its class, and is served no more
		}
		gi := &gatewayInfo{obj: g, key: nn(g.Namespace, g.Name), class: ci,
			conds: t.newConds(g.Status.Conditions, g.Generation)}
		t.gatewayByKey[gi.key] = gi
		t.gatewayList = append(t.gatewayList, gi)
		for i := range g.Spec.Listeners {
			l := &g.Spec.Listeners[i]
			li := t.newListener(gi, nil, g.Namespace, string(l.Name), l.Hostname, l.Port, l.Protocol, l.TLS, l.AllowedRoutes, l.Filters, prevListenerConds(g.Status.Listeners, l.Name))
			li.dpName = g.Namespace + "/" + g.Name + "/" + string(l.Name)
			gi.own = append(gi.own, li)
		}
		v, ok := g.Annotations[AnnotationTCPHostnames]
		tcpHostnames(v, ok, gi.own, &gi.conds)
		gi.listeners = append(gi.listeners, gi.own...)
	}
	t.listenerSets()
	for _, gi := range t.gatewayList {
		t.finishGateway(gi)
	}
}

func prevListenerConds(st []gwv1.ListenerStatus, name gwv1.SectionName) []metav1.Condition {
	for i := range st {
		if st[i].Name == name {
			return st[i].Conditions
		}
	}
	return nil
}

// newListener validates one listener on its own: protocol, TLS, route
// kinds and pre-routing filters. Conflicts with its siblings are decided
// later.
func (t *translator) newListener(gi *gatewayInfo, set *listenerSetInfo, ns, name string, host *gwv1.Hostname,
	port gwv1.PortNumber, proto gwv1.ProtocolType, tlsCfg *gwv1.ListenerTLSConfig, ar *gwv1.AllowedRoutes,
	filters *gwv1.ListenerFilters, prev []metav1.Condition) *listenerInfo {
	gen := gi.obj.Generation
	if set != nil {
		gen = set.obj.Generation
	}
	li := &listenerInfo{gw: gi, set: set, name: name, port: int32(port), protocol: proto, ns: ns,
		from: gwv1.NamespacesFromSame, conds: t.newConds(prev, gen), certOK: true}
	if host != nil {
		li.hostname = strings.ToLower(string(*host))
	}
	accepted, acceptReason, acceptMsg := true, string(gwv1.ListenerReasonAccepted), "listener accepted"
	switch proto {
	case gwv1.HTTPProtocolType, gwv1.HTTPSProtocolType, gwv1.TCPProtocolType, gwv1.TLSProtocolType:
		if proto == gwv1.TCPProtocolType && li.hostname != "" {
			// The Gateway API's CRD refuses it; standalone mode has none.
			accepted, acceptReason = false, string(gwv1.ListenerReasonUnsupportedValue)
			acceptMsg = fmt.Sprintf("hostname %q: a TCP listener has none (a TCP connection names no host); its public hostname for the tunnel comes from the %s annotation", li.hostname, AnnotationTCPHostnames)
		} else if li.hostname != "" && !validHostname(li.hostname) {
			accepted, acceptReason = false, string(gwv1.ListenerReasonUnsupportedValue)
			acceptMsg = fmt.Sprintf("hostname %q is not a valid DNS name or wildcard", li.hostname)
		}
	default:
		accepted, acceptReason = false, string(gwv1.ListenerReasonUnsupportedProtocol)
		acceptMsg = fmt.Sprintf("protocol %s is not supported: tunnelgate serves HTTP, HTTPS, TCP and TLS listeners", proto)
	}
	if accepted {
		if msg := streamListenerTLS(li, proto, tlsCfg); msg != "" {
			accepted, acceptReason, acceptMsg = false, string(gwv1.ListenerReasonUnsupportedValue), msg
		}
	}
	// Pre-routing filters (GEP-5224, experimental in v1.7) run before any
	// route: tunnelgate has none of their kinds (ExternalAuth,
	// ExtensionRef), and serving the listener without them would let
	// requests past a check meant for all of them, so it is not accepted.
	if accepted && filters != nil && len(filters.Requests) > 0 {
		accepted, acceptReason = false, string(gwv1.ListenerReasonUnsupportedValue)
		acceptMsg = fmt.Sprintf("filters: pre-routing filters (%s) are not supported; the listener serves nothing until they are removed", filters.Requests[0].Type)
	}

	resolved, refReason, refMsg := true, string(gwv1.ListenerReasonResolvedRefs), "all references resolved"
	// Route kinds: the ones asked for that this protocol carries.
	supported := routeKindsOf(proto)
	if ar != nil && len(ar.Kinds) > 0 {
		var bad []string
		for _, k := range ar.Kinds {
			g := groupGateway
			if k.Group != nil {
				g = string(*k.Group)
			}
			if g == groupGateway && slices.Contains(supported, k.Kind) && accepted {
				li.kinds = append(li.kinds, gwv1.RouteGroupKind{Group: groupPtr(groupGateway), Kind: k.Kind})
			} else {
				bad = append(bad, g+"/"+string(k.Kind))
			}
		}
		if len(bad) > 0 {
			resolved, refReason = false, string(gwv1.ListenerReasonInvalidRouteKinds)
			refMsg = "unsupported route kinds: " + strings.Join(bad, ", ")
		}
	} else if accepted {
		for _, k := range supported {
			li.kinds = append(li.kinds, gwv1.RouteGroupKind{Group: groupPtr(groupGateway), Kind: k})
		}
	}
	if ar != nil && ar.Namespaces != nil {
		if ar.Namespaces.From != nil {
			li.from = *ar.Namespaces.From
		}
		if li.from == gwv1.NamespacesFromSelector {
			sel, err := metav1.LabelSelectorAsSelector(ar.Namespaces.Selector)
			if err != nil {
				accepted, acceptReason = false, string(gwv1.ListenerReasonUnsupportedValue)
				acceptMsg = "allowedRoutes.namespaces.selector: " + err.Error()
			}
			li.selector = sel
		}
	}
	if accepted && (proto == gwv1.HTTPSProtocolType || li.terminate) {
		if ok, reason, msg := t.listenerTLS(li, ns, set, tlsCfg); !ok {
			li.certOK = false
			if reason == string(gwv1.ListenerReasonUnsupportedValue) {
				accepted, acceptReason, acceptMsg = false, reason, msg
			} else {
				// A certificate problem outranks a route kind one: it
				// stops the listener, while bad kinds only narrow it.
				resolved, refReason, refMsg = false, reason, msg
			}
		}
	}
	if accepted && proto == gwv1.HTTPSProtocolType && li.certOK {
		fc := t.frontendValidation(gi, li.port)
		if fc.refReason != "" {
			resolved, refReason, refMsg = false, fc.refReason, fc.refMsg
		}
		if fc.noneValid {
			accepted, acceptReason = false, string(gwv1.ListenerReasonNoValidCACertificate)
			acceptMsg = "no valid CA certificate for client certificate validation: " + fc.refMsg
		}
		li.clientValidation = fc.cv
		switch {
		case fc.cv == nil:
		case fc.insecure:
			acceptMsg += "; client certificates are asked for but not required (AllowInsecureFallback)"
			gi.insecureFrontend = true
		default:
			acceptMsg += "; clients must present a valid certificate, checked on the Gateway's address (through the tunnel such requests get 403: use mutual TLS at Cloudflare's edge)"
		}
	}
	li.conds.set(string(gwv1.ListenerConditionAccepted), accepted, acceptReason, acceptMsg)
	li.conds.set(string(gwv1.ListenerConditionResolvedRefs), resolved, refReason, refMsg)
	li.attachable = accepted
	return li
}

// listenerTLS checks the certificateRefs of a listener that terminates
// TLS (HTTPS, or TLS of mode Terminate): Secrets of type
// kubernetes.io/tls holding a usable pair, cross-namespace only with a
// grant. Their pairs go to li.certs, for proxies that terminate.
func (t *translator) listenerTLS(li *listenerInfo, ns string, set *listenerSetInfo, cfg *gwv1.ListenerTLSConfig) (bool, string, string) {
	if cfg == nil || len(cfg.CertificateRefs) == 0 {
		return false, string(gwv1.ListenerReasonInvalidCertificateRef), fmt.Sprintf("listener %s: terminating TLS needs tls.certificateRefs", li.name)
	}
	if cfg.Mode != nil && *cfg.Mode != gwv1.TLSModeTerminate {
		return false, string(gwv1.ListenerReasonUnsupportedValue), "tls.mode must be Terminate on an HTTPS listener"
	}
	fromKind := "Gateway"
	if set != nil {
		fromKind = "ListenerSet"
	}
	li.certs = nil
	for _, ref := range cfg.CertificateRefs {
		s, p := t.tlsSecret(&ref, fromKind, ns)
		if p == nil {
			li.certs = append(li.certs, proxycfg.Certificate{Cert: string(s.Data[corev1.TLSCertKey]), Key: string(s.Data[corev1.TLSPrivateKeyKey])})
			continue
		}
		li.certs = nil
		switch {
		case p.notSecret:
			return false, string(gwv1.ListenerReasonInvalidCertificateRef), "certificateRef " + p.msg + ": only core Secrets are supported"
		case p.notPermitted:
			return false, string(gwv1.ListenerReasonRefNotPermitted), p.msg
		}
		return false, string(gwv1.ListenerReasonInvalidCertificateRef), p.msg
	}
	return true, "", ""
}

// secretProblem is why a reference to a certificate Secret cannot be used.
type secretProblem struct {
	notSecret    bool // not a core Secret: the caller words it
	notPermitted bool // in another namespace without a ReferenceGrant
	msg          string
}

// tlsSecret resolves a reference, from an object of fromKind in fromNS, to
// a core Secret holding a usable certificate and key (tls.crt, tls.key):
// listener certificateRefs and the Gateway's backend client certificate
// follow the same rules and differ only in the reasons they report.
func (t *translator) tlsSecret(ref *gwv1.SecretObjectReference, fromKind, fromNS string) (*corev1.Secret, *secretProblem) {
	group, kind := "", "Secret"
	if ref.Group != nil {
		group = string(*ref.Group)
	}
	if ref.Kind != nil {
		kind = string(*ref.Kind)
	}
	ns := fromNS
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	if group != "" || kind != "Secret" {
		return nil, &secretProblem{notSecret: true, msg: fmt.Sprintf("%s/%s %s", group, kind, ref.Name)}
	}
	if !t.look.granted(groupGateway, fromKind, fromNS, "", "Secret", ns, string(ref.Name)) {
		return nil, &secretProblem{notPermitted: true,
			msg: fmt.Sprintf("Secret %s/%s is in another namespace and no ReferenceGrant there allows it", ns, ref.Name)}
	}
	s := t.look.secret(ns, string(ref.Name))
	if s == nil {
		return nil, &secretProblem{msg: fmt.Sprintf("Secret %s/%s not found", ns, ref.Name)}
	}
	if msg := t.cache.keyPairProblem(s); msg != "" {
		return nil, &secretProblem{msg: msg}
	}
	return s, nil
}

// keyPairProblem says what is wrong with a Secret's tls.crt and tls.key,
// or "" when they form a usable pair.
func keyPairProblem(s *corev1.Secret) string {
	crt, key := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
	if len(crt) == 0 || len(key) == 0 {
		return fmt.Sprintf("Secret %s/%s needs the keys tls.crt and tls.key", s.Namespace, s.Name)
	}
	if _, err := tls.X509KeyPair(crt, key); err != nil {
		return fmt.Sprintf("Secret %s/%s: %v", s.Namespace, s.Name, err)
	}
	return ""
}

// finishGateway decides listener conflicts, the backend client
// certificate, and the Gateway's own conditions.
func (t *translator) finishGateway(gi *gatewayInfo) {
	g := gi.obj
	conflicts(gi.own, gi.listeners[len(gi.own):])

	resolved, refReason, refMsg := true, string(gwv1.GatewayReasonResolvedRefs), "all references resolved"
	if b := g.Spec.TLS; b != nil && b.Backend != nil && b.Backend.ClientCertificateRef != nil {
		if sec, p := t.tlsSecret(b.Backend.ClientCertificateRef, "Gateway", g.Namespace); p != nil {
			resolved, refReason, refMsg = false, string(gwv1.GatewayReasonInvalidClientCertificateRef), p.msg
			switch {
			case p.notSecret:
				refMsg = "clientCertificateRef must be a core Secret"
			case p.notPermitted:
				refReason = string(gwv1.GatewayReasonRefNotPermitted)
			}
		} else {
			gi.clientCertPEM, gi.clientKeyPEM = sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey]
		}
	}
	if resolved {
		for _, li := range gi.own {
			if !li.conds.isTrue(string(gwv1.ListenerConditionResolvedRefs)) {
				resolved, refReason, refMsg = false, string(gwv1.GatewayReasonListenersNotResolved), "listener "+li.name+" has unresolved references"
				break
			}
		}
	}

	var problem string
	params, dedicated, paramsProblem := t.gatewayParameters(g, gi.class)
	gi.params, gi.dedicated = params, dedicated
	gi.moving = dedicated && t.movingToPlane(gi)
	if gi.servesInCluster() {
		refuseHeldPorts(gi)
	}
	badAddress := unsupportedAddress(g)
	switch {
	case !gi.class.accepted:
		problem = fmt.Sprintf("GatewayClass %s is not accepted (see its conditions)", gi.class.obj.Name)
		gi.conds.set(string(gwv1.GatewayConditionAccepted), false, string(gwv1.GatewayReasonPending), problem)
	case paramsProblem != "":
		problem = paramsProblem
		gi.conds.set(string(gwv1.GatewayConditionAccepted), false, string(gwv1.GatewayReasonInvalidParameters), problem)
	case badAddress != "":
		problem = badAddress
		gi.conds.set(string(gwv1.GatewayConditionAccepted), false, string(gwv1.GatewayReasonUnsupportedAddress), problem)
	default:
		var valid, invalid []string
		for _, li := range gi.own {
			if li.attachable {
				valid = append(valid, li.name)
			} else {
				invalid = append(invalid, li.name)
			}
		}
		if len(valid) == 0 && len(gi.own) > 0 {
			problem = "no listener is valid: " + strings.Join(invalid, ", ")
			gi.conds.set(string(gwv1.GatewayConditionAccepted), false, string(gwv1.GatewayReasonListenersNotValid), problem)
		} else if len(invalid) > 0 {
			gi.conds.set(string(gwv1.GatewayConditionAccepted), true, string(gwv1.GatewayReasonListenersNotValid),
				"listeners not valid: "+strings.Join(invalid, ", ")+"; served: "+strings.Join(valid, ", "))
		} else {
			gi.conds.set(string(gwv1.GatewayConditionAccepted), true, string(gwv1.GatewayReasonAccepted), "gateway accepted")
		}
	}
	gi.accepted = problem == ""
	if !gi.accepted {
		for _, li := range gi.listeners {
			if li.attachable {
				li.attachable = false
				li.conds.set(string(gwv1.ListenerConditionAccepted), false, string(gwv1.ListenerReasonPending), "the Gateway is not accepted")
			}
		}
	}
	gi.conds.set(string(gwv1.GatewayConditionResolvedRefs), resolved, refReason, refMsg)
	if gi.accepted && gi.insecureFrontend {
		gi.conds.set(string(gwv1.GatewayConditionInsecureFrontendValidationMode), true, string(gwv1.GatewayReasonConfigurationChanged),
			"an HTTPS listener admits clients without a valid certificate (frontend validation mode AllowInsecureFallback)")
	}
}

// conflicts marks listeners that cannot be served together. Among the
// Gateway's own listeners no one wins: every listener of a port serving
// two protocols, and every listener repeating a port and hostname, is
// conflicted, as the spec requires. A ListenerSet entry then conflicts
// with whatever came before it (the Gateway, older sets), so a set never
// takes a port or hostname from its Gateway.
func conflicts(own, sets []*listenerInfo) {
	type portUse struct {
		proto string // protoKey
		hosts map[string]*listenerInfo
	}
	ports := map[int32]*portUse{}
	mark := func(li *listenerInfo, reason, msg string) {
		li.attachable = false
		li.conflict = reason
		li.conds.set(string(gwv1.ListenerConditionConflicted), true, reason, msg)
		li.conds.set(string(gwv1.ListenerConditionAccepted), false, reason, msg)
	}
	protos := map[int32]map[string]bool{}
	hostCount := map[string]int{}
	hostKey := func(li *listenerInfo) string { return strconv.Itoa(int(li.port)) + "|" + li.distinctHost() }
	for _, li := range own {
		if li.attachable {
			if protos[li.port] == nil {
				protos[li.port] = map[string]bool{}
			}
			protos[li.port][li.protoKey()] = true
			hostCount[hostKey(li)]++
		}
	}
	for _, li := range own {
		if !li.attachable {
			continue
		}
		switch {
		case len(protos[li.port]) > 1:
			mark(li, string(gwv1.ListenerReasonProtocolConflict), fmt.Sprintf("port %d is used by listeners of different protocols", li.port))
		case hostCount[hostKey(li)] > 1 && li.protocol == gwv1.TCPProtocolType:
			mark(li, string(gwv1.ListenerReasonHostnameConflict), fmt.Sprintf("port %d has more than one TCP listener (TCP listeners are told apart by port alone)", li.port))
		case hostCount[hostKey(li)] > 1:
			mark(li, string(gwv1.ListenerReasonHostnameConflict), fmt.Sprintf("port %d has more than one listener for hostname %q", li.port, li.hostname))
		default:
			pu := ports[li.port]
			if pu == nil {
				pu = &portUse{proto: li.protoKey(), hosts: map[string]*listenerInfo{}}
				ports[li.port] = pu
			}
			pu.hosts[li.distinctHost()] = li
		}
	}
	for _, li := range sets {
		// A protocol we do not serve (UDP) on a port that is taken is a
		// protocol conflict before it is unsupported: the port's owner
		// decides, as it would for an implementation that serves both.
		unsupported := false
		if a := li.conds.get(string(gwv1.ListenerConditionAccepted)); a != nil && a.Reason == string(gwv1.ListenerReasonUnsupportedProtocol) {
			unsupported = true
		}
		if !li.attachable && !unsupported {
			continue
		}
		pu, host := ports[li.port], li.distinctHost()
		switch {
		case unsupported:
			if pu != nil && pu.proto != li.protoKey() {
				mark(li, string(gwv1.ListenerReasonProtocolConflict), fmt.Sprintf("port %d already serves %s", li.port, pu.proto))
			}
		case pu == nil:
			ports[li.port] = &portUse{proto: li.protoKey(), hosts: map[string]*listenerInfo{host: li}}
		case len(protos[li.port]) > 1 || pu.proto != li.protoKey():
			mark(li, string(gwv1.ListenerReasonProtocolConflict), fmt.Sprintf("port %d already serves %s", li.port, pu.proto))
		case pu.hosts[host] != nil:
			mark(li, string(gwv1.ListenerReasonHostnameConflict), fmt.Sprintf("port %d already has a listener for hostname %q (%s)", li.port, host, pu.hosts[host].dpName))
		default:
			pu.hosts[host] = li
		}
	}
	for _, li := range append(own[:len(own):len(own)], sets...) {
		if li.conflict == "" {
			li.conds.set(string(gwv1.ListenerConditionConflicted), false, string(gwv1.ListenerReasonNoConflicts), "no conflicts")
		}
	}
}

// protoKey is what listeners of one port must share to be served
// together: the protocol, and for TLS the mode (tunnelgate does not serve
// Terminate and Passthrough on one port: the spec's TLSRouteModeMixed).
func (li *listenerInfo) protoKey() string {
	if li.protocol != gwv1.TLSProtocolType {
		return string(li.protocol)
	}
	if li.terminate {
		return "TLS (Terminate)"
	}
	return "TLS (Passthrough)"
}

// distinctHost is the hostname that tells listeners of one port and
// protocol apart: none for TCP, whose listeners the spec tells apart by
// port alone.
func (li *listenerInfo) distinctHost() string {
	if li.protocol == gwv1.TCPProtocolType {
		return ""
	}
	return li.hostname
}

// serves reports whether the data plane serves this listener. Invalid
// route kinds do not stop it: it serves the kinds that are valid.
func (li *listenerInfo) serves() bool {
	return li.attachable && li.certOK && len(li.kinds) > 0
}

// allows reports whether a route of kind in namespace ns may attach.
func (li *listenerInfo) allows(kind, ns string, look lookup) bool {
	kindOK := false
	for _, k := range li.kinds {
		if string(k.Kind) == kind {
			kindOK = true
			break
		}
	}
	return kindOK && li.allowsNamespace(ns, look)
}

func (li *listenerInfo) allowsNamespace(ns string, look lookup) bool {
	switch li.from {
	case gwv1.NamespacesFromAll:
		return true
	case gwv1.NamespacesFromSelector:
		return li.selector != nil && li.selector.Matches(look.namespaceLabels(ns))
	case gwv1.NamespacesFromNone:
		return false
	default:
		return ns == li.ns
	}
}

func groupPtr(g string) *gwv1.Group { gg := gwv1.Group(g); return &gg }

func lessNN(ans, an, bns, bn string) bool {
	if ans != bns {
		return ans < bns
	}
	return an < bn
}

// routeKindsOf are the route kinds a listener of proto carries: HTTP
// routes on HTTP and HTTPS, a TCPRoute on TCP, TLSRoutes on TLS.
func routeKindsOf(proto gwv1.ProtocolType) []gwv1.Kind {
	switch proto {
	case gwv1.TCPProtocolType:
		return []gwv1.Kind{kindTCPRoute}
	case gwv1.TLSProtocolType:
		return []gwv1.Kind{kindTLSRoute}
	}
	return []gwv1.Kind{kindHTTPRoute, kindGRPCRoute}
}

// streamListenerTLS checks the tls of a TCP or TLS listener as the
// Gateway CRD does, and the mode tunnelgate serves, and says what is
// wrong ("" when nothing is). A TCP listener has no tls. A TLS listener
// must set tls.mode: Passthrough (certificateRefs are ignored, as the
// spec says) or Terminate (the extended feature TLSRouteModeTerminate),
// which marks the listener li.terminate.
func streamListenerTLS(li *listenerInfo, proto gwv1.ProtocolType, cfg *gwv1.ListenerTLSConfig) string {
	switch {
	case proto == gwv1.TCPProtocolType && cfg != nil:
		return "tls must not be set on a TCP listener: its connections are relayed as they come"
	case proto != gwv1.TLSProtocolType:
		return ""
	case cfg == nil || cfg.Mode == nil || *cfg.Mode == "":
		return "tls.mode must be set on a TLS listener: Passthrough or Terminate"
	case *cfg.Mode == gwv1.TLSModeTerminate:
		li.terminate = true
	case *cfg.Mode != gwv1.TLSModePassthrough:
		return fmt.Sprintf("tls.mode %q is not Terminate or Passthrough", *cfg.Mode)
	}
	return ""
}
