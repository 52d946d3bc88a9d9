// This file hands the dedicated planes to the provisioner and the config
// server.

package controller

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
	"github.com/tunnelgate/tunnelgate/ctrl/planes"
	"github.com/tunnelgate/tunnelgate/ctrl/provision"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Provisioner applies the planes the leader wants, and says what their
// proxies are up to (ctrl/planes).
type Provisioner interface {
	Update(leading bool, wanted map[types.NamespacedName]planes.Want, retired []types.NamespacedName)
	State(gateway types.NamespacedName, class string) (planes.State, bool)
}

// planeStates are the states of the planes of the last translation, for
// the next one; translate's Cache compares them by value
// (PlaneState.Equal). A plane new in a translation gets its state at the
// next, which its Deployment's first events bring.
func (c *Controller) planeStates() map[types.NamespacedName]*translate.PlaneState {
	last := c.Last()
	if c.opts.Planes == nil || last == nil || len(last.Planes) == 0 {
		c.lastPlaneStates = nil
		return nil
	}
	out := make(map[types.NamespacedName]*translate.PlaneState, len(last.Planes))
	for key, p := range last.Planes {
		st, ok := c.opts.Planes.State(key, string(p.Gateway.Spec.GatewayClassName))
		if !ok {
			continue
		}
		ps := &translate.PlaneState{Replicas: st.Replicas, Ready: st.Ready, Problem: st.Problem, NoResources: st.NoResources,
			ServiceIP: st.ServiceIP}
		prev := c.lastPlaneStates[key]
		var checked *translate.Relay
		if prev != nil {
			checked = prev.Relay
		}
		var problem string
		if ps.Relay, problem = relayOf(st, checked); problem != "" && ps.Problem == "" {
			ps.Problem = fmt.Sprintf("the relay credentials in Secret %s/%s: %s", key.Namespace,
				provision.CredentialsName(key.Name, string(p.Gateway.Spec.GatewayClassName)), problem)
		}
		out[key] = ps
	}
	c.lastPlaneStates = out
	return out
}

// relayOf is how the shared proxies reach a plane, from its state: its
// ready Pods' relay listeners and its relay credentials, once these are
// written. Credentials that do not parse are left out, with why: the
// shared proxies refuse a whole config with a cluster they cannot use,
// and the provisioner writes new ones. Those of prev, the last sync's,
// were checked then: every sync runs this for every plane.
func relayOf(st planes.State, prev *translate.Relay) (*translate.Relay, string) {
	c := st.Relay
	if c == nil {
		return nil, ""
	}
	checked := prev != nil && prev.CAPEM == string(c.CA) && prev.ClientCertPEM == string(c.ClientCert) &&
		prev.ClientKeyPEM == string(c.ClientKey)
	if !checked {
		if _, err := tls.X509KeyPair(c.ClientCert, c.ClientKey); err != nil {
			return nil, "the client certificate: " + err.Error()
		}
		if !x509.NewCertPool().AppendCertsFromPEM(c.CA) {
			return nil, "the CA holds no PEM certificate"
		}
	}
	r := &translate.Relay{ServerName: provision.RelayServerName, CAPEM: string(c.CA),
		ClientCertPEM: string(c.ClientCert), ClientKeyPEM: string(c.ClientKey)}
	for _, ip := range st.PodIPs {
		r.Endpoints = append(r.Endpoints, net.JoinHostPort(ip, strconv.Itoa(provision.RelayPort)))
	}
	return r, ""
}

// publishPlanes hands the config server each plane's config with the
// token from its credentials Secret. A plane whose Secret is not written
// yet is left out: its proxies do not exist yet either.
func (c *Controller) publishPlanes(snap *translate.Snapshot, out *translate.Output, configs map[types.NamespacedName]*proxycfg.Config) {
	if c.opts.Publisher == nil {
		return
	}
	if len(configs) == 0 {
		c.opts.Publisher.PublishPlanes(nil) // none: the server drops any it served
		return
	}
	credentials := make(map[types.NamespacedName]types.NamespacedName, len(configs)) // Secret → plane
	for key := range configs {
		p := out.Planes[key]
		name := provision.SecretsOf(p.Gateway, &p.Params.Spec).Credentials
		credentials[types.NamespacedName{Namespace: key.Namespace, Name: name}] = key
	}
	list := make(map[string]configserver.Plane, len(configs))
	for _, s := range snap.Secrets {
		key, ok := credentials[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}]
		if tok := s.Data[provision.KeyConfigToken]; ok && len(tok) > 0 {
			list[key.String()] = configserver.Plane{Token: string(tok), Config: configs[key]}
		}
	}
	c.opts.Publisher.PublishPlanes(list)
}

// handPlanes gives the provisioner, while leading, the planes to apply
// and the Gateways of ours that ask for none.
func (c *Controller) handPlanes(_ context.Context, leading bool, snap *translate.Snapshot, out *translate.Output) {
	if c.opts.Planes == nil {
		return
	}
	if !leading {
		c.opts.Planes.Update(false, nil, nil)
		return
	}
	wanted := make(map[types.NamespacedName]planes.Want, len(out.Planes))
	for key, p := range out.Planes {
		wanted[key] = wantOf(p, snap.Secrets)
	}
	c.opts.Planes.Update(true, wanted, gatewaysWantingNoPlane(snap, c.controllerName))
}

// wantOf is what the provisioner needs of a translated plane, with the
// last rotation of its own tunnel's credential that its token Secret
// records (among secrets).
func wantOf(p *translate.Plane, secrets []*corev1.Secret) planes.Want {
	w := planes.Want{Gateway: p.Gateway, Params: p.Params.Spec, TunnelRotatedAt: planeRotatedAt(p, secrets)}
	for _, port := range p.Ports {
		w.Ports = append(w.Ports, provision.Port{Port: port.Port, TLS: port.Protocol == gwv1.HTTPSProtocolType})
	}
	if p.Address.IsValid() {
		w.ClusterIP = p.Address.String()
	}
	return w
}

// gatewaysWantingNoPlane are our Gateways being deleted, whose planes go
// at once (so a plane's connectors leave its tunnel before the tunnel is
// cleaned up, departures.go), and those that say they want no plane of
// their own: no GatewayConfig (none named, no class default), or one with
// dataPlane Shared. A Gateway refused for another reason (its
// GatewayConfig missing) is in neither list, and its plane, if it has one,
// is left running.
func gatewaysWantingNoPlane(snap *translate.Snapshot, controllerName string) []types.NamespacedName {
	byClass := classConfigs(snap, controllerName)
	ours := map[string]bool{}
	for _, gc := range snap.GatewayClasses {
		ours[gc.Name] = string(gc.Spec.ControllerName) == controllerName
	}
	configs := gatewayConfigs(snap)
	var out []types.NamespacedName
	for _, g := range snap.Gateways {
		class := string(g.Spec.GatewayClassName)
		if ours[class] && (g.DeletionTimestamp != nil || wantsShared(g, byClass[class], configs)) {
			out = append(out, types.NamespacedName{Namespace: g.Namespace, Name: g.Name})
		}
	}
	return out
}

// gatewaysWantingPlanes are, by class, the Gateways that do not ask for
// the shared proxies: those with a plane, and those refused for a mistake
// (their GatewayConfig missing), whose plane is kept. A Gateway being
// deleted wants none.
func gatewaysWantingPlanes(snap *translate.Snapshot, byClass map[string]*v1alpha1.GatewayClassConfig) map[string][]types.NamespacedName {
	configs := gatewayConfigs(snap)
	out := map[string][]types.NamespacedName{}
	for _, g := range snap.Gateways {
		class := string(g.Spec.GatewayClassName)
		if g.DeletionTimestamp != nil {
			continue
		}
		if !wantsShared(g, byClass[class], configs) {
			out[class] = append(out[class], types.NamespacedName{Namespace: g.Namespace, Name: g.Name})
		}
	}
	return out
}

// gatewayConfigs indexes the snapshot's GatewayConfigs.
func gatewayConfigs(snap *translate.Snapshot) map[types.NamespacedName]*v1alpha1.GatewayConfig {
	configs := make(map[types.NamespacedName]*v1alpha1.GatewayConfig, len(snap.GatewayConfigs))
	for _, gc := range snap.GatewayConfigs {
		configs[types.NamespacedName{Namespace: gc.Namespace, Name: gc.Name}] = gc
	}
	return configs
}

// wantsShared says whether a Gateway asks for the shared proxies: it takes
// no GatewayConfig (translate.GatewayConfigRef), or one that exists and
// says Shared. A reference that cannot be resolved asks for neither.
func wantsShared(g *gwv1.Gateway, class *v1alpha1.GatewayClassConfig, configs map[types.NamespacedName]*v1alpha1.GatewayConfig) bool {
	key, named, problem := translate.GatewayConfigRef(g, class)
	if !named {
		return problem == ""
	}
	cfg := configs[key]
	return cfg != nil && (cfg.Spec.DataPlane == "" || cfg.Spec.DataPlane == v1alpha1.DataPlaneShared)
}
