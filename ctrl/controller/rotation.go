// This file feeds the rotation of class tunnels' credentials: what each
// class asks and its token Secret records, the roll of the Deployments
// that mount the Secret, and the events.

package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	applyappsv1 "k8s.io/client-go/applyconfigurations/apps/v1"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/provision"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// rollFieldManager owns the rotation's stamp on the Pod templates of the
// Deployments it rolls, and nothing else of them: helm's upgrades, and
// whoever else manages those Deployments, keep it.
const rollFieldManager = "tunnelgate-rotation"

// classNotManaged and planeNotManaged say why a tunnel whose token the
// controller does not write cannot be rotated, and what to do.
const (
	classNotManaged = "tunnelgate does not write this tunnel's token (the GatewayClassConfig sets no tunnel.tokenSecretRef: " +
		"the token was given, as the chart's cloudflare.tunnel.token or by hand), so it cannot rotate it: rotate it in Cloudflare " +
		"(the dashboard's Rotate token on the tunnel), put the new token in the Secret the connectors read, " +
		"and restart them; or name the tunnel by id or name and let tunnelgate write its token"
	planeNotManaged = "tunnelgate does not write this tunnel's token (the GatewayConfig gives it by tunnel.tokenSecretRef), " +
		"so it cannot rotate it: rotate it in Cloudflare (the dashboard's Rotate token on the tunnel), put the new token in that Secret, " +
		"and restart the plane (kubectl rollout restart); or name the tunnel by name or id and let tunnelgate write its token"
)

// rotationOf is what a tunnel's GatewayClassConfig or GatewayConfig (its
// annotations, and t: the setting and the Secret the controller writes
// the token to, nil if none) asks of its credential's rotation, with
// what that Secret records of the last one; notManaged is why it cannot
// rotate without that Secret.
func rotationOf(secrets []*corev1.Secret, annotations map[string]string, t *v1alpha1.TunnelRef, notManaged string) cloudflare.Rotation {
	r := cloudflare.Rotation{Trigger: annotations[v1alpha1.AnnotationRotateTunnelCredential]}
	if d, problem := translate.RotationInterval(t.CredentialRotation); problem == "" {
		r.Every = d // a bad interval is on the class's or Gateway's status, and sets no schedule
	}
	if t.TokenSecretRef == nil {
		if r.Asked() {
			r.Refused = notManaged
		}
		return r
	}
	ref := t.TokenSecretRef
	for _, s := range secrets {
		if s.Namespace != ref.Namespace || s.Name != ref.Name {
			continue
		}
		r.Since = s.CreationTimestamp.Time
		if at, err := time.Parse(time.RFC3339, s.Annotations[v1alpha1.AnnotationRotatedAt]); err == nil {
			r.Last = at // written by the controller alone; anything else reads as never
		}
		r.Handled = s.Annotations[v1alpha1.AnnotationRotationTrigger]
	}
	return r
}

// planeRotatedAt is when the credential of a plane's own tunnel was last
// rotated, per the token Secret the controller writes for it; "" if
// never, or if the controller does not write it.
func planeRotatedAt(p *translate.Plane, secrets []*corev1.Secret) string {
	t := p.Params.Spec.Tunnel
	if t == nil || t.TokenSecretRef != nil {
		return ""
	}
	name := provision.SecretsOf(p.Gateway, &p.Params.Spec).TunnelToken
	for _, s := range secrets {
		if s.Namespace == p.Gateway.Namespace && s.Name == name {
			return s.Annotations[v1alpha1.AnnotationRotatedAt]
		}
	}
	return ""
}

// stampAnnotations are the token Secret's annotations recording stamp.
func stampAnnotations(stamp cloudflare.Stamp) map[string]string {
	if stamp.At.IsZero() {
		return nil
	}
	a := map[string]string{v1alpha1.AnnotationRotatedAt: stamp.At.UTC().Format(time.RFC3339)}
	if stamp.Trigger != "" {
		a[v1alpha1.AnnotationRotationTrigger] = stamp.Trigger
	}
	return a
}

// ConnectorRoller rolls, after a rotation, the Deployments of the token
// Secret's namespace whose Pods mount it (a secret volume, or a projected
// one, of that Secret): it stamps their Pod template with the rotation's
// time (v1alpha1.AnnotationRotatedAt) by server-side apply, and their
// rollout strategy replaces the Pods. The chart's proxies roll one Pod at
// a time, each new Pod Ready (its cloudflared connected) before an old
// one stops. Deployments the controller renders itself (a Gateway's own
// plane, label app.kubernetes.io/managed-by=tunnelgate) roll from what it
// renders (provision.Plane.TunnelRotatedAt, read from the Secret), since
// a patch would be put back: they are named, not patched.
func ConnectorRoller(kube kubernetes.Interface) cloudflare.RollFunc {
	return func(ctx context.Context, ref v1alpha1.SecretKeyRef, at time.Time) ([]string, error) {
		list, err := kube.AppsV1().Deployments(ref.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		var rolled []string
		for _, d := range list.Items {
			if !mountsSecret(d.Spec.Template.Spec.Volumes, ref.Name) {
				continue
			}
			if d.Labels["app.kubernetes.io/managed-by"] == provision.ManagedBy {
				rolled = append(rolled, d.Name)
				continue
			}
			a := applyappsv1.Deployment(d.Name, d.Namespace).WithSpec(applyappsv1.DeploymentSpec().WithTemplate(
				applycorev1.PodTemplateSpec().WithAnnotations(map[string]string{v1alpha1.AnnotationRotatedAt: at.UTC().Format(time.RFC3339)})))
			if _, err := kube.AppsV1().Deployments(d.Namespace).Apply(ctx, a, metav1.ApplyOptions{FieldManager: rollFieldManager, Force: true}); err != nil {
				return rolled, fmt.Errorf("stamping Deployment %s/%s: %w", d.Namespace, d.Name, err)
			}
			rolled = append(rolled, d.Name)
		}
		slices.Sort(rolled)
		return rolled, nil
	}
}

// mountsSecret says whether volumes mount the Secret name.
func mountsSecret(volumes []corev1.Volume, name string) bool {
	for _, v := range volumes {
		if v.Secret != nil && v.Secret.SecretName == name {
			return true
		}
		if v.Projected != nil && slices.ContainsFunc(v.Projected.Sources, func(p corev1.VolumeProjection) bool {
			return p.Secret != nil && p.Secret.Name == name
		}) {
			return true
		}
	}
	return false
}

// RotationEvent records an event of a rotation step on the GatewayClass
// whose tunnel it is, or the Gateway (its own tunnel).
func (c *Controller) RotationEvent(ev cloudflare.RotationEvent) {
	if c.opts.Events == nil {
		return
	}
	e := rotationEvent(ev)
	kind, ns, name := "GatewayClass", "", ev.Class
	if gw, ok := translate.GatewayOfTunnelKey(ev.Class); ok {
		kind, ns, name = "Gateway", gw.Namespace, gw.Name
	}
	ref := &corev1.ObjectReference{Kind: kind, APIVersion: eventAPIVersion[kind], Namespace: ns, Name: name}
	if a := accessor(c.w.lookup(kind, ns, name)); a != nil {
		ref.UID, ref.ResourceVersion = a.GetUID(), a.GetResourceVersion()
	}
	c.opts.Events.Event(ref, e.typ, e.reason, e.message)
	c.Stats.EventsRecorded.Add(1)
}

type event struct{ typ, reason, message string }

// rotationEvent is the event of a rotation step.
func rotationEvent(ev cloudflare.RotationEvent) event {
	asked := "on schedule"
	if ev.Trigger != "" {
		asked = fmt.Sprintf("(last request %s=%q)", v1alpha1.AnnotationRotateTunnelCredential, ev.Trigger)
	}
	at := ev.At.UTC().Format(time.RFC3339)
	switch ev.Stage {
	case cloudflare.RotationStarted:
		return event{corev1.EventTypeNormal, "TunnelCredentialRotationStarted", fmt.Sprintf(
			"new tunnel secret set in Cloudflare at %s %s: connectors already connected keep serving; the old token opens no new connection", at, asked)}
	case cloudflare.RotationRolling:
		what := "no Deployment in the Secret's namespace mounts it: restart the connectors that read it"
		if len(ev.Deployments) > 0 {
			what = "rolling Deployments " + strings.Join(ev.Deployments, ", ") + " one Pod at a time"
		}
		return event{corev1.EventTypeNormal, "TunnelCredentialRotated", fmt.Sprintf("new tunnel token (rotated at %s) written; %s", at, what)}
	case cloudflare.RotationRefused:
		return event{corev1.EventTypeWarning, "TunnelCredentialRotationRefused", fmt.Sprint(ev.Err)}
	}
	return event{corev1.EventTypeWarning, "TunnelCredentialRotationFailed", fmt.Sprintf("rotation failed, retrying: %v", ev.Err)}
}
