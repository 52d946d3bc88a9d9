// This file builds what Cloudflare is handed, and writes tunnel tokens.

package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	applymetav1 "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/provision"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// desiredTunnels is what each of our GatewayClasses with a tunnel wants
// from Cloudflare after a translation: its hostnames, its settings and
// its API token, read from the credentials Secret; then each Gateway's
// own tunnel, and the cleanup after each departed one (deps).
func desiredTunnels(snap *translate.Snapshot, out *translate.Output, byClass map[string]*v1alpha1.GatewayClassConfig, deps []departure) []cloudflare.Desired {
	planeGateways := gatewaysWantingPlanes(snap, byClass)
	for _, d := range deps {
		// Its departure removes its records: the class's sync must not.
		g := d.gateway
		class := string(g.Spec.GatewayClassName)
		planeGateways[class] = append(planeGateways[class], types.NamespacedName{Namespace: g.Namespace, Name: g.Name})
	}
	var list []cloudflare.Desired
	for _, gc := range snap.GatewayClasses {
		cfg := byClass[gc.Name]
		if cfg == nil || cfg.Spec.Tunnel == nil {
			continue // no tunnel: served by the proxies alone
		}
		d := cloudflare.Desired{Class: gc.Name, Spec: *cfg.Spec.DeepCopy(),
			LivePlanes: livePlanes(classOwner(gc.Name, cfg), planeGateways[gc.Name])}
		d.Token, d.Problem = apiToken(snap.Secrets, cfg.Spec.CredentialsRef)
		d.Rotation = rotationOf(snap.Secrets, cfg.Annotations, cfg.Spec.Tunnel, classNotManaged)
		res := out.GatewayClasses[gc.Name]
		d.Hold = res == nil || !meta.IsStatusConditionTrue(res.Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted))
		for _, h := range out.Hostnames {
			if slices.Contains(h.Classes, gc.Name) {
				d.Hostnames = append(d.Hostnames, h)
			}
		}
		d.AccessApps = accessAppsOf(out.AccessApps, d.Hostnames)
		d.LoadBalancers = loadBalancersOf(out.LoadBalancers, d.Hostnames)
		list = append(list, d)
	}
	list = append(list, planeTunnels(snap, out, byClass)...)
	for _, d := range deps {
		if d.desired != nil {
			list = append(list, *d.desired)
		}
	}
	return list
}

// accessAppsOf are the Access applications a tunnel serving hosts keeps:
// each over those of its hostnames the tunnel serves. An AccessPolicy
// whose hostnames several tunnels serve has an application with each.
func accessAppsOf(apps []translate.AccessApp, hosts []translate.Hostname) []translate.AccessApp {
	var out []translate.AccessApp
	for _, a := range apps {
		var mine []string
		for _, h := range a.Hostnames {
			if slices.ContainsFunc(hosts, func(s translate.Hostname) bool { return s.Name == h }) {
				mine = append(mine, h)
			}
		}
		if len(mine) > 0 {
			a.Hostnames = mine
			out = append(out, a)
		}
	}
	return out
}

// loadBalancersOf are the load balanced hostnames a tunnel serving hosts
// joins: those among its hostnames. A LoadBalancingPolicy whose hostname
// several tunnels serve makes each an origin of its pool.
func loadBalancersOf(lbs []translate.LoadBalancing, hosts []translate.Hostname) []translate.LoadBalancing {
	var out []translate.LoadBalancing
	for _, lb := range lbs {
		if slices.ContainsFunc(hosts, func(h translate.Hostname) bool { return h.Name == lb.Hostname }) {
			out = append(out, lb)
		}
	}
	return out
}

// classConfigs are the GatewayClassConfigs of our GatewayClasses, by
// class.
func classConfigs(snap *translate.Snapshot, controllerName string) map[string]*v1alpha1.GatewayClassConfig {
	configs := make(map[string]*v1alpha1.GatewayClassConfig, len(snap.GatewayClassConfigs))
	for _, c := range snap.GatewayClassConfigs {
		configs[c.Name] = c
	}
	byClass := map[string]*v1alpha1.GatewayClassConfig{}
	for _, gc := range snap.GatewayClasses {
		ref := gc.Spec.ParametersRef
		if string(gc.Spec.ControllerName) != controllerName || ref == nil ||
			string(ref.Group) != v1alpha1.Group || string(ref.Kind) != v1alpha1.KindGatewayClassConfig {
			continue
		}
		if cfg := configs[ref.Name]; cfg != nil {
			byClass[gc.Name] = cfg
		}
	}
	return byClass
}

// planeTunnels is what each Gateway with a plane wants from Cloudflare:
// its own tunnel, with its hostnames, written with its class's
// credentials (planeSpec). The ingress document sends them to the plane's
// proxies (provision.OriginPort, provision.OriginCAPool).
func planeTunnels(snap *translate.Snapshot, out *translate.Output, byClass map[string]*v1alpha1.GatewayClassConfig) []cloudflare.Desired {
	var list []cloudflare.Desired
	for key, p := range out.Planes {
		class := string(p.Gateway.Spec.GatewayClassName)
		cc := byClass[class]
		t := p.Params.Spec.Tunnel
		if cc == nil || t == nil {
			continue // translate accepts neither
		}
		spec := planeSpec(class, key, cc)
		d := cloudflare.Desired{Class: translate.PlaneTunnelKey(class, key), Hostnames: p.Hostnames, Since: p.Gateway.CreationTimestamp.Time,
			AccessApps: accessAppsOf(out.AccessApps, p.Hostnames), LoadBalancers: loadBalancersOf(out.LoadBalancers, p.Hostnames)}
		if rec, ok := translate.TunnelRecordOf(p.Gateway); ok && rec.Created {
			d.CreatedTunnel = rec.ID
		}
		if intent, ok := translate.TunnelIntentOf(p.Gateway); ok {
			d.CreateIntent = intent
		}
		secrets := provision.SecretsOf(p.Gateway, &p.Params.Spec)
		switch {
		case t.TokenSecretRef != nil:
			id, problem := tunnelOfToken(snap.Secrets, key.Namespace, secrets.TunnelToken, secrets.TunnelTokenKey)
			d.Problem = problem
			spec.Tunnel = &v1alpha1.TunnelRef{ID: id}
		default:
			// The controller reads the token from Cloudflare and keeps it
			// where the plane's cloudflared reads it.
			spec.Tunnel = &v1alpha1.TunnelRef{ID: t.ID, Name: t.Name, TokenSecretRef: &v1alpha1.SecretKeyRef{
				Namespace: key.Namespace, Name: secrets.TunnelToken, Key: secrets.TunnelTokenKey}}
		}
		// The plane's Pods roll from their template (provision renders
		// the rotation's time from the token Secret), not from a patch.
		d.Rotation = rotationOf(snap.Secrets, p.Params.Annotations,
			&v1alpha1.TunnelRef{TokenSecretRef: spec.Tunnel.TokenSecretRef, CredentialRotation: t.CredentialRotation}, planeNotManaged)
		d.Spec = spec
		if d.Problem == "" {
			d.Token, d.Problem = apiToken(snap.Secrets, cc.Spec.CredentialsRef)
		}
		list = append(list, d)
	}
	slices.SortFunc(list, func(a, b cloudflare.Desired) int { return strings.Compare(a.Class, b.Class) })
	return list
}

// classOwner is the DNS owner of a class's records: its dns.ownerID, or
// else its name, as the Cloudflare sync takes it.
func classOwner(class string, cfg *v1alpha1.GatewayClassConfig) string {
	if cfg.Spec.DNS != nil && cfg.Spec.DNS.OwnerID != "" {
		return cfg.Spec.DNS.OwnerID
	}
	return class
}

// livePlanes are the DNS owners the planes of a class's Gateways that
// want one would have (gatewaysWantingPlanes): the records of any other
// plane owner under the class's are a deleted Gateway's, or one gone back
// to the class's tunnel.
func livePlanes(classOwner string, gateways []types.NamespacedName) []string {
	out := make([]string, 0, len(gateways))
	for _, g := range gateways {
		out = append(out, cloudflare.PlaneOwner(classOwner, g.Namespace, g.Name))
	}
	slices.Sort(out)
	return out
}

// tunnelOfToken reads the tunnel ID from a tunnel token a Secret holds
// (base64 of {"a": account, "t": tunnel, "s": secret}), or says what is
// wrong with it.
func tunnelOfToken(secrets []*corev1.Secret, namespace, name, key string) (id, problem string) {
	for _, s := range secrets {
		if s.Namespace != namespace || s.Name != name {
			continue
		}
		raw := strings.TrimSpace(string(s.Data[key]))
		if raw == "" {
			return "", fmt.Sprintf("tunnel token Secret %s/%s has no key %q", namespace, name, key)
		}
		id, err := cloudflare.TunnelIDOfToken(raw)
		if err != nil {
			return "", fmt.Sprintf("tunnel token Secret %s/%s key %q does not hold a tunnel token (base64 JSON with the tunnel ID)", namespace, name, key)
		}
		return id, ""
	}
	return "", fmt.Sprintf("tunnel token Secret %s/%s not found", namespace, name)
}

// apiToken reads the Cloudflare API token a credentialsRef names, or says
// what is wrong with it.
func apiToken(secrets []*corev1.Secret, ref *v1alpha1.SecretKeyRef) (token, problem string) {
	if ref == nil {
		return "", "credentialsRef is required to manage a tunnel: name the Secret holding the Cloudflare API token"
	}
	key := ref.Key
	if key == "" {
		key = "token"
	}
	for _, s := range secrets {
		if s.Namespace == ref.Namespace && s.Name == ref.Name {
			if v := s.Data[key]; len(v) > 0 {
				return string(v), ""
			}
			return "", fmt.Sprintf("credentials Secret %s/%s has no key %q", ref.Namespace, ref.Name, key)
		}
	}
	return "", fmt.Sprintf("credentials Secret %s/%s not found", ref.Namespace, ref.Name)
}

// TokenOwnerFunc names the owner a tunnel token Secret is to have, or
// nil: a plane's Gateway owns the Secret of its tunnel's token, so
// deleting the Gateway deletes it.
type TokenOwnerFunc func(namespace, name string) *metav1.OwnerReference

// TunnelTokenWriter stores tunnel tokens in Secrets for the cloudflared
// sidecars, with server-side apply: the Secret is created, or only its
// token key (and the owner owner names, if any) is set, other keys and
// fields left as they are. Applying needs no read of the Secret, so the
// controller is not allowed to read Secrets one by one. The credential's
// last rotation, if any, is recorded in its annotations (rotation.go).
func TunnelTokenWriter(kube kubernetes.Interface, owner TokenOwnerFunc) cloudflare.SaveTokenFunc {
	return func(ctx context.Context, ref v1alpha1.SecretKeyRef, token string, stamp cloudflare.Stamp) error {
		key := ref.Key
		if key == "" {
			key = "token"
		}
		s := applycorev1.Secret(ref.Name, ref.Namespace).
			WithLabels(map[string]string{"app.kubernetes.io/managed-by": "tunnelgate"}).
			WithData(map[string][]byte{key: []byte(token)})
		if a := stampAnnotations(stamp); a != nil {
			s.WithAnnotations(a)
		}
		if owner != nil {
			if o := owner(ref.Namespace, ref.Name); o != nil {
				s.WithOwnerReferences(applymetav1.OwnerReference().WithAPIVersion(o.APIVersion).WithKind(o.Kind).
					WithName(o.Name).WithUID(o.UID).WithController(true))
			}
		}
		_, err := kube.CoreV1().Secrets(ref.Namespace).Apply(ctx, s, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		return err
	}
}

// TokenOwner is the Gateway that owns a tunnel token Secret the
// controller writes, per the last translation: a plane's, when its tunnel
// is one the controller reads the token of.
func (c *Controller) TokenOwner(namespace, name string) *metav1.OwnerReference {
	out := c.Last()
	if out == nil {
		return nil
	}
	for key, p := range out.Planes {
		t := p.Params.Spec.Tunnel
		if key.Namespace != namespace || t == nil || t.TokenSecretRef != nil ||
			provision.SecretsOf(p.Gateway, &p.Params.Spec).TunnelToken != name {
			continue
		}
		return &metav1.OwnerReference{APIVersion: gwv1.GroupVersion.String(), Kind: "Gateway",
			Name: p.Gateway.Name, UID: p.Gateway.UID, Controller: new(true)}
	}
	return nil
}
