// This file holds the API of tunnel credential rotation: the setting, the
// on-demand annotation and the annotations that record a rotation.

package v1alpha1

import (
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// CredentialRotation rotates the secret of a tunnel whose token the
// controller writes, every Interval: a class's (GatewayClassConfig
// tunnel.tokenSecretRef) or a Gateway's own (GatewayConfig tunnel by name
// or id). A rotation sets a new secret in Cloudflare, writes the new
// token to the Secret and rolls the Pods that mount it, one at a time.
type CredentialRotation struct {
	// Interval between two rotations, counted from the last one (or, for a
	// tunnel never rotated, from when the controller first wrote its
	// token): a Gateway API duration (GEP-2257) such as "720h", at least
	// MinRotationInterval.
	Interval gwv1.Duration `json:"interval"`
}

// MinRotationInterval is the shortest CredentialRotation.Interval: a roll
// of every connector must fit well within it.
const MinRotationInterval = time.Hour

// Annotations of credential rotation.
const (
	// AnnotationRotateTunnelCredential, set on a GatewayClassConfig or a
	// GatewayConfig to any new value, asks for one rotation of its
	// tunnel's credential now (each Gateway's, for a GatewayConfig).
	// The controller rotates once per value and records the value it
	// handled on the token Secret (AnnotationRotationTrigger).
	AnnotationRotateTunnelCredential = "tunnelgate.dev/rotate-tunnel-credential"
	// AnnotationRotatedAt, on the token Secret, is when the controller
	// last rotated the credential (RFC 3339). The same annotation on a
	// Deployment's Pod template rolls the Deployment: the chart's, set by
	// the controller after a rotation; a plane's, rendered with it.
	AnnotationRotatedAt = "tunnelgate.dev/tunnel-credential-rotated-at"
	// AnnotationRotationTrigger, on the token Secret, is the last value of
	// AnnotationRotateTunnelCredential a rotation answered.
	AnnotationRotationTrigger = "tunnelgate.dev/tunnel-credential-rotation-trigger"
)
