// This file implements the cleanup finalizer of Gateways that give up
// their tunnel.

package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/provision"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// A Gateway with a tunnel of its own leaves things in Cloudflare that the
// garbage collector cannot reach: its DNS records, its tunnel's document,
// and, when it asks, the tunnel itself. So the leader puts
// translate.TunnelFinalizer on it, and when the Gateway is deleted, or
// stops wanting a tunnel of its own, hands the Cloudflare syncer a
// departure (cloudflare.Desired with Departing) and removes the finalizer
// once the syncer reports it done.
//
// A departure that cannot be carried out for a reason only a user can fix
// (no credentials, the token refused, the class no longer ours) does not
// hold the Gateway forever: the finalizer goes, with a Warning event
// saying what was left in Cloudflare. Failures Cloudflare may get over
// (an outage, a rate limit) are retried, holding the Gateway.

// departure is a Gateway holding translate.TunnelFinalizer that has no
// tunnel of its own any more.
type departure struct {
	gateway *gwv1.Gateway
	// desired is the cleanup to hand the syncer; nil when none can be
	// made, and why says why.
	desired *cloudflare.Desired
	why     string
}

// departures lists the Gateways holding translate.TunnelFinalizer that
// are being deleted, or whose GatewayConfig now names no tunnel (or that
// take none). A Gateway refused for a mistake (its GatewayConfig missing) is not
// departing: its tunnel and records stay until the mistake is fixed.
func departures(snap *translate.Snapshot, out *translate.Output, byClass map[string]*v1alpha1.GatewayClassConfig) []departure {
	configs := gatewayConfigs(snap)
	var list []departure
	for _, g := range snap.Gateways {
		if !slices.Contains(g.Finalizers, translate.TunnelFinalizer) {
			continue
		}
		key := types.NamespacedName{Namespace: g.Namespace, Name: g.Name}
		class := string(g.Spec.GatewayClassName)
		cc := byClass[class]
		cfg := gatewayConfigOf(g, cc, configs)
		if g.DeletionTimestamp == nil && (ownTunnel(out, key) || !wantsNoOwnTunnel(g, cc, cfg)) {
			continue
		}
		if cc == nil {
			list = append(list, departure{gateway: g, why: "its GatewayClass " + class + " has no GatewayClassConfig of this controller"})
			continue
		}
		d := departureOf(snap, g, class, cc, cfg)
		list = append(list, departure{gateway: g, desired: &d})
	}
	return list
}

// departureOf is the cleanup after g's own tunnel. The tunnel is the one
// its GatewayConfig names (within the class's gatewayTunnels policy), or
// else the one its status records; it is to be deleted when the Gateway
// is, if the GatewayConfig (or, when that is gone, the record) asks.
func departureOf(snap *translate.Snapshot, g *gwv1.Gateway, class string, cc *v1alpha1.GatewayClassConfig, cfg *v1alpha1.GatewayConfig) cloudflare.Desired {
	key := types.NamespacedName{Namespace: g.Namespace, Name: g.Name}
	d := cloudflare.Desired{Class: translate.PlaneTunnelKey(class, key), Departing: true,
		Since: g.CreationTimestamp.Time, Spec: planeSpec(class, key, cc)}
	rec, recorded := translate.TunnelRecordOf(g)
	if recorded && rec.Created {
		d.CreatedTunnel = rec.ID
	}
	deleting := g.DeletionTimestamp != nil
	t := tunnelOf(cfg)
	if cc.Spec.GatewayTunnels.Refuses(g.Namespace, t) != "" {
		t = nil // named against the class's policy: only the record counts
	}
	switch {
	case t != nil && t.TokenSecretRef != nil:
		if recorded {
			d.Spec.Tunnel = &v1alpha1.TunnelRef{ID: rec.ID}
		}
	case t != nil:
		d.Spec.Tunnel = &v1alpha1.TunnelRef{ID: t.ID, Name: t.Name}
		d.DeleteTunnel = deleting && t.DeleteWithGateway
	case recorded:
		d.Spec.Tunnel = &v1alpha1.TunnelRef{ID: rec.ID}
		d.DeleteTunnel = deleting && rec.DeleteWithGateway
	}
	d.Token, d.Problem = apiToken(snap.Secrets, cc.Spec.CredentialsRef)
	return d
}

// planeSpec is what a Gateway's own tunnel takes from its class: the
// credentials and account, the plane's origin, and the class's DNS
// settings under an owner of the Gateway's own, so the class's sync and
// the plane's never take each other's records. The tunnel is left to the
// caller.
func planeSpec(class string, key types.NamespacedName, cc *v1alpha1.GatewayClassConfig) v1alpha1.GatewayClassConfigSpec {
	spec := v1alpha1.GatewayClassConfigSpec{
		CredentialsRef: cc.Spec.CredentialsRef,
		AccountID:      cc.Spec.AccountID,
		Origin:         &v1alpha1.OriginSettings{Port: provision.OriginPort, CAPool: provision.OriginCAPool},
	}
	if dns := cc.Spec.DNS; dns != nil {
		own := *dns
		own.OwnerID = cloudflare.PlaneOwner(classOwner(class, cc), key.Namespace, key.Name)
		spec.DNS = &own
	}
	return spec
}

// gatewayConfigOf is the GatewayConfig g takes, or nil.
func gatewayConfigOf(g *gwv1.Gateway, cc *v1alpha1.GatewayClassConfig, configs map[types.NamespacedName]*v1alpha1.GatewayConfig) *v1alpha1.GatewayConfig {
	key, named, _ := translate.GatewayConfigRef(g, cc)
	if !named {
		return nil
	}
	return configs[key]
}

// tunnelOf is the tunnel a GatewayConfig gives its Gateway, or nil.
func tunnelOf(cfg *v1alpha1.GatewayConfig) *v1alpha1.GatewayTunnel {
	if cfg == nil || cfg.Spec.DataPlane != v1alpha1.DataPlaneDedicated {
		return nil
	}
	return cfg.Spec.Tunnel
}

// ownTunnel says whether the translation gives the Gateway a plane with a
// tunnel of its own.
func ownTunnel(out *translate.Output, key types.NamespacedName) bool {
	p := out.Planes[key]
	return p != nil && p.Params.Spec.Tunnel != nil
}

// wantsNoOwnTunnel says whether a Gateway clearly asks for no tunnel of its
// own: it takes no GatewayConfig, or one that exists and names none. One
// whose GatewayConfig cannot be found asks for nothing yet.
func wantsNoOwnTunnel(g *gwv1.Gateway, cc *v1alpha1.GatewayClassConfig, cfg *v1alpha1.GatewayConfig) bool {
	_, named, problem := translate.GatewayConfigRef(g, cc)
	if !named {
		return problem == ""
	}
	return cfg != nil && tunnelOf(cfg) == nil
}

// keepFinalizers puts translate.TunnelFinalizer on each Gateway whose
// plane has a tunnel of its own, and takes it off each departed Gateway, or one whose
// departure cannot be carried out (saying so in a Warning event). Without
// a Cloudflare syncer nobody would carry one out, so every Gateway is let
// go.
func (c *Controller) keepFinalizers(ctx context.Context, snap *translate.Snapshot, out *translate.Output, deps []departure) error {
	var errs []error
	if c.opts.Cloudflare == nil {
		for _, g := range snap.Gateways {
			if slices.Contains(g.Finalizers, translate.TunnelFinalizer) {
				errs = append(errs, c.setTunnelFinalizer(ctx, g, false))
			}
		}
		return errors.Join(errs...)
	}
	for key, p := range out.Planes {
		if g := p.Gateway; ownTunnel(out, key) && g.DeletionTimestamp == nil && !slices.Contains(g.Finalizers, translate.TunnelFinalizer) {
			errs = append(errs, c.setTunnelFinalizer(ctx, g, true))
		}
	}
	states := c.opts.Cloudflare.States()
	var events []translate.Event
	for _, d := range deps {
		g := d.gateway
		why := d.why
		if d.desired != nil {
			st := states[d.desired.Class]
			switch {
			case st == nil:
				continue // not synced yet
			case st.Problem != "":
				why = st.Problem
			case !st.Departed:
				continue
			}
		}
		if err := c.setTunnelFinalizer(ctx, g, false); err != nil {
			errs = append(errs, err)
			continue
		}
		if why != "" {
			events = append(events, translate.Event{Kind: "Gateway", Namespace: g.Namespace, Name: g.Name,
				Type: corev1.EventTypeWarning, Reason: "TunnelCleanupSkipped",
				Message: "its own tunnel's DNS records and document are left in Cloudflare: " + why})
		}
	}
	c.recordEvents(events)
	return errors.Join(errs...)
}

// setTunnelFinalizer adds or removes translate.TunnelFinalizer with a
// merge patch that holds the resourceVersion read, so a finalizer someone
// else added meanwhile is never lost. A conflict is no error: the change
// that caused it brings the Gateway to the informer, and a sync with it.
func (c *Controller) setTunnelFinalizer(ctx context.Context, g *gwv1.Gateway, on bool) error {
	fins := slices.DeleteFunc(slices.Clone(g.Finalizers), func(f string) bool { return f == translate.TunnelFinalizer })
	if on {
		fins = append(fins, translate.TunnelFinalizer)
	}
	if fins == nil {
		fins = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": g.ResourceVersion, "finalizers": fins}})
	if err != nil {
		return err
	}
	_, err = c.gw.GatewayV1().Gateways(g.Namespace).Patch(ctx, g.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finalizer %s of Gateway %s/%s: %w", translate.TunnelFinalizer, g.Namespace, g.Name, err)
	}
	c.Stats.StatusWrites.Add(1)
	return nil
}
