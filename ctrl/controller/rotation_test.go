// This file tests what feeds a tunnel credential's rotation: the request
// and the Secret's record, the roll, the events.

package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
)

// A rotation asked (a schedule, a request) is read with what the token
// Secret records of the last one, so a restart keeps counting from it;
// without a Secret the controller writes, it is refused.
func TestRotationOf(t *testing.T) {
	made := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	last := "2026-02-01T00:00:00Z"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tg", Name: "tok", CreationTimestamp: metav1.NewTime(made),
		Annotations: map[string]string{v1alpha1.AnnotationRotatedAt: last, v1alpha1.AnnotationRotationTrigger: "one"}}}
	ref := &v1alpha1.SecretKeyRef{Namespace: "tg", Name: "tok"}
	every := &v1alpha1.CredentialRotation{Interval: "720h"}
	asked := map[string]string{v1alpha1.AnnotationRotateTunnelCredential: "two"}

	r := rotationOf([]*corev1.Secret{secret}, asked, &v1alpha1.TunnelRef{TokenSecretRef: ref, CredentialRotation: every}, classNotManaged)
	want := cloudflare.Rotation{Every: 720 * time.Hour, Trigger: "two", Last: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), Handled: "one", Since: made}
	if r != want {
		t.Errorf("rotation %+v, want %+v", r, want)
	}
	if r := rotationOf(nil, nil, &v1alpha1.TunnelRef{TokenSecretRef: ref}, classNotManaged); r.Asked() || r.Refused != "" || !r.Since.IsZero() {
		t.Errorf("nothing asked, no Secret yet: %+v", r)
	}
	if r := rotationOf(nil, asked, &v1alpha1.TunnelRef{}, classNotManaged); r.Refused != classNotManaged {
		t.Errorf("a token the controller does not write: %+v, want refused", r)
	}
	if r := rotationOf(nil, nil, &v1alpha1.TunnelRef{}, classNotManaged); r.Refused != "" {
		t.Errorf("nothing asked of a token the controller does not write: %+v, want no refusal", r)
	}
	// An interval translate refuses (the class is then held) schedules
	// nothing.
	if r := rotationOf(nil, nil, &v1alpha1.TunnelRef{TokenSecretRef: ref, CredentialRotation: &v1alpha1.CredentialRotation{Interval: "30m"}}, classNotManaged); r.Every != 0 {
		t.Errorf("interval 30m scheduled: %+v", r)
	}
	// A stamp not of the controller's making reads as never rotated.
	secret.Annotations[v1alpha1.AnnotationRotatedAt] = "yesterday"
	if r := rotationOf([]*corev1.Secret{secret}, nil, &v1alpha1.TunnelRef{TokenSecretRef: ref}, classNotManaged); !r.Last.IsZero() {
		t.Errorf("a hand-written stamp read as %v", r.Last)
	}
}

// The roll stamps the Pod template of each Deployment that mounts the
// token Secret, under its own field manager, names a plane's without
// patching it (it rolls from what the controller renders), and leaves
// the others alone.
func TestConnectorRoller(t *testing.T) {
	mounting := func(name string, labels map[string]string, v corev1.VolumeSource) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "tg", Name: name, Labels: labels},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: v}}}}}}
	}
	secretVol := corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tok"}}
	kube := fake.NewClientset(
		mounting("proxy", nil, secretVol),
		mounting("projected", nil, corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "tok"}}}}}}),
		mounting("other", nil, corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "not-tok"}}),
		mounting("plane", map[string]string{"app.kubernetes.io/managed-by": "tunnelgate"}, secretVol),
	)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rolled, err := ConnectorRoller(kube)(context.Background(), v1alpha1.SecretKeyRef{Namespace: "tg", Name: "tok"}, at)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"plane", "projected", "proxy"}; !slices.Equal(rolled, want) {
		t.Errorf("rolled %v, want %v", rolled, want)
	}
	for name, stamped := range map[string]bool{"proxy": true, "projected": true, "other": false, "plane": false} {
		d, err := kube.AppsV1().Deployments("tg").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := d.Spec.Template.Annotations[v1alpha1.AnnotationRotatedAt]
		if (got == "2026-03-01T12:00:00Z") != stamped || !stamped && got != "" {
			t.Errorf("Deployment %s: stamp %q, want stamped %v", name, got, stamped)
		}
	}
}

// Each step's event says what happened and when.
func TestRotationEvents(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		ev                  cloudflare.RotationEvent
		typ, reason, saying string
	}{
		{cloudflare.RotationEvent{Stage: cloudflare.RotationStarted, At: at, Trigger: "x"}, "Normal", "TunnelCredentialRotationStarted", "2026-03-01T12:00:00Z"},
		{cloudflare.RotationEvent{Stage: cloudflare.RotationRolling, At: at, Deployments: []string{"proxy"}}, "Normal", "TunnelCredentialRotated", "rolling Deployments proxy one Pod at a time"},
		{cloudflare.RotationEvent{Stage: cloudflare.RotationRolling, At: at}, "Normal", "TunnelCredentialRotated", "restart the connectors"},
		{cloudflare.RotationEvent{Stage: cloudflare.RotationFailed, Err: context.DeadlineExceeded}, "Warning", "TunnelCredentialRotationFailed", "retrying"},
		{cloudflare.RotationEvent{Stage: cloudflare.RotationRefused, Err: errString(classNotManaged)}, "Warning", "TunnelCredentialRotationRefused", "does not write"},
	} {
		e := rotationEvent(c.ev)
		if e.typ != c.typ || e.reason != c.reason || !strings.Contains(e.message, c.saying) {
			t.Errorf("%s: %+v, want %s %s saying %q", c.ev.Stage, e, c.typ, c.reason, c.saying)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }
