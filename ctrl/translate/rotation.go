// This file checks the rotation settings of tunnels and reports the
// rotation of a tunnel's credential on its GatewayClass, or on the
// Gateway whose own tunnel it is.

package translate

import (
	"fmt"
	"time"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
)

// ClassConditionCredentialRotated says when the credential of a tunnel
// was last rotated and when it is next, on a GatewayClass (its tunnel)
// or a Gateway (its own tunnel) whose GatewayClassConfig or GatewayConfig
// asks for rotations (tunnel.credentialRotation, or the
// v1alpha1.AnnotationRotateTunnelCredential annotation) or whose tunnel's
// credential was rotated.
const ClassConditionCredentialRotated = "tunnelgate.dev/TunnelCredentialRotated"

// Its reasons.
const (
	RotationReasonRotated    = "Rotated"
	RotationReasonNotYet     = "NotRotatedYet"
	RotationReasonFailed     = "RotationFailed"
	RotationReasonNotManaged = "TokenNotManaged"
)

// rotationCondition sets the class's condition from its tunnel's report,
// if rotations are asked for or one happened.
func rotationCondition(c *conds, ts *TunnelState) {
	if ts == nil || !ts.Rotation.Asked && ts.Rotation.Last.IsZero() {
		return
	}
	r := ts.Rotation
	last := "never rotated"
	if !r.Last.IsZero() {
		last = "last rotated at " + rfc3339(r.Last)
	}
	next := "; no schedule (tunnel.credentialRotation): rotated on demand only, by setting the annotation " +
		v1alpha1.AnnotationRotateTunnelCredential + " to a new value"
	switch {
	case !r.Next.IsZero():
		next = "; next rotation due at " + rfc3339(r.Next)
	case r.Every > 0:
		next = "; rotated every " + r.Every.String() + ", counted from when the token Secret is first written"
	}
	switch {
	case r.Refused != "":
		c.set(ClassConditionCredentialRotated, false, RotationReasonNotManaged, r.Refused)
	case r.Failed != "":
		c.set(ClassConditionCredentialRotated, false, RotationReasonFailed,
			fmt.Sprintf("rotation failed, retrying: %s; %s%s", r.Failed, last, next))
	case r.Last.IsZero():
		c.set(ClassConditionCredentialRotated, false, RotationReasonNotYet, last+next)
	default:
		c.set(ClassConditionCredentialRotated, true, RotationReasonRotated,
			last+" (a new tunnel secret, its token written and the Pods that mount it rolled)"+next)
	}
}

// RotationInterval is how often r asks for a rotation (0 without r), or
// what is wrong with its interval: the one reading of the setting, for
// the statuses here and the controller's schedule.
func RotationInterval(r *v1alpha1.CredentialRotation) (time.Duration, string) {
	if r == nil {
		return 0, ""
	}
	d, err := parseDuration(string(r.Interval))
	if err != nil || d < v1alpha1.MinRotationInterval {
		return 0, fmt.Sprintf("tunnel.credentialRotation.interval %q is not a duration (such as 720h) of at least %v", r.Interval, v1alpha1.MinRotationInterval)
	}
	return d, ""
}

// rotationIntervalProblem says what is wrong with a rotation interval,
// or "".
func rotationIntervalProblem(r *v1alpha1.CredentialRotation) string {
	_, problem := RotationInterval(r)
	return problem
}

// rfc3339 is a time as conditions show it.
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }
