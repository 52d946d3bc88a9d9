// This file implements the rotation of a tunnel's credential: a new
// secret in Cloudflare, the token read back into its Secret, the
// connectors rolled.

package cloudflare

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// Rotation is what a tunnel's wish asks of its credential's rotation,
// and what its token Secret records of the last one, so that a restart
// (or a new leader) neither repeats a rotation nor forgets it.
type Rotation struct {
	// Every is the schedule (tunnel.credentialRotation.interval); zero:
	// none.
	Every time.Duration
	// Trigger is the GatewayClassConfig's on-demand request
	// (v1alpha1.AnnotationRotateTunnelCredential); a value not yet
	// Handled asks for one rotation.
	Trigger string
	// Last and Handled are what the token Secret records: when the
	// credential was last rotated, and the Trigger that rotation answered.
	Last    time.Time
	Handled string
	// Since is when the token Secret was made: the schedule of a tunnel
	// never rotated counts from it. Zero while the Secret is not seen.
	Since time.Time
	// Refused says why this tunnel's credential cannot be rotated (the
	// controller does not write its token) when rotations are asked.
	Refused string
}

// Asked says whether rotations are asked for.
func (r Rotation) Asked() bool { return r.Every > 0 || r.Trigger != "" }

// Stamp is what a token Secret records of the last rotation.
type Stamp struct {
	At      time.Time // zero: never rotated
	Trigger string
}

// RotationEvent tells the controller of a rotation, for its events.
type RotationEvent struct {
	Class string
	// Stage: RotationStarted (a new secret is set in Cloudflare; the old
	// token opens no new connection), RotationRolling (the token is
	// written and the Deployments that mount it are rolling), or
	// RotationFailed (Err says why; retried), RotationRefused (Err says
	// why; not retried until the request or the setting changes).
	Stage       string
	At          time.Time
	Trigger     string
	Deployments []string
	Err         error
}

// The stages of a RotationEvent.
const (
	RotationStarted = "Started"
	RotationRolling = "Rolling"
	RotationFailed  = "Failed"
	RotationRefused = "Refused"
)

// RollFunc rolls the Deployments whose Pods mount the token Secret ref
// names, one Pod at a time, stamping their Pod template with at; it
// returns their names.
type RollFunc func(ctx context.Context, ref v1alpha1.SecretKeyRef, at time.Time) ([]string, error)

// rotationMemory is what a Syncer remembers of a tunnel's rotations
// beyond what its token Secret says (the informer's copy of the Secret
// lags the write). It belongs to Run's goroutine.
type rotationMemory struct {
	last    Stamp
	pending *Stamp // the secret is set in Cloudflare; the token is not yet written or the roll not begun
	failed  string // the last attempt's failure
	refused string // the Trigger whose refusal was told
}

// current is the last rotation: what the Secret says, or what this
// Syncer did since, if later.
func (m *rotationMemory) current(r Rotation) Stamp {
	if m.last.At.After(r.Last) {
		return m.last
	}
	return Stamp{At: r.Last, Trigger: r.Handled}
}

// rotationDue says whether a rotation is due at now, why, and when the
// schedule next asks for one (zero without a schedule, or before the
// schedule's start is known).
func rotationDue(r Rotation, last Stamp, now time.Time) (due bool, why string, next time.Time) {
	if r.Every > 0 {
		base := last.At
		if base.IsZero() {
			base = r.Since
		}
		if !base.IsZero() {
			next = base.Add(r.Every)
		}
	}
	switch {
	case r.Trigger != "" && r.Trigger != last.Trigger:
		return true, fmt.Sprintf("on demand (%s=%q)", v1alpha1.AnnotationRotateTunnelCredential, r.Trigger), next
	case !next.IsZero() && !now.Before(next):
		return true, "on schedule (every " + r.Every.String() + ")", next
	}
	return false, "", next
}

// newTunnelSecret is a tunnel secret: 32 random bytes, base64.
func newTunnelSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.StdEncoding.EncodeToString(b)
}

// rotationState is the report of c's rotations at now.
func (s *Syncer) rotationState(c *classSync, d Desired) translate.RotationState {
	r := d.Rotation
	if r.Refused != "" {
		return translate.RotationState{Asked: true, Refused: r.Refused}
	}
	last := c.rot.current(r)
	_, _, next := rotationDue(r, last, s.opts.Now())
	return translate.RotationState{Asked: r.Asked(), Last: last.At, Every: r.Every, Next: next, Failed: c.rot.failed}
}

// rotate rotates the tunnel's credential when it is due (or finishes a
// rotation begun): a new secret set in Cloudflare, the token read back
// and written to tunnel.tokenSecretRef with the time, and the
// Deployments that mount it rolled. A failure is returned to be retried
// with back-off; once the secret is set, the retry does not set another
// but reads the token back again, which is what the Secret must hold.
func (s *Syncer) rotate(ctx context.Context, c *classSync, d Desired) error {
	r := d.Rotation
	ref := d.Spec.Tunnel.TokenSecretRef
	if r.Refused != "" {
		if r.Trigger != c.rot.refused {
			c.rot.refused = r.Trigger
			s.tell(RotationEvent{Class: d.Class, Stage: RotationRefused, Trigger: r.Trigger, Err: problem(r.Refused)})
		}
		return nil
	}
	if ref == nil || s.opts.SaveToken == nil {
		return nil
	}
	now := s.opts.Now()
	if c.rot.pending == nil {
		due, why, _ := rotationDue(r, c.rot.current(r), now)
		if !due {
			return nil
		}
		if err := c.l.api.setTunnelSecret(ctx, c.l.account, c.l.tunnelID, newTunnelSecret()); err != nil {
			return s.rotationFailed(c, d, err)
		}
		c.rot.pending = &Stamp{At: now.UTC().Truncate(time.Second), Trigger: r.Trigger}
		s.opts.Log.Info("tunnel credential rotated in Cloudflare", "class", d.Class, "tunnel", c.l.tunnelID, "why", why)
		s.tell(RotationEvent{Class: d.Class, Stage: RotationStarted, At: c.rot.pending.At, Trigger: r.Trigger})
	}
	p := *c.rot.pending
	tok, err := c.l.api.tunnelToken(ctx, c.l.account, c.l.tunnelID)
	if err != nil {
		return s.rotationFailed(c, d, err)
	}
	if err := s.opts.SaveToken(ctx, *ref, tok, p); err != nil {
		return s.rotationFailed(c, d, fmt.Errorf("storing the new tunnel token in Secret %s/%s: %w", ref.Namespace, ref.Name, err))
	}
	c.l.savedToken = tokenKey(c.l.tunnelID, *ref)
	var rolled []string
	if s.opts.Roll != nil {
		if rolled, err = s.opts.Roll(ctx, *ref, p.At); err != nil {
			return s.rotationFailed(c, d, fmt.Errorf("rolling the Deployments that mount Secret %s/%s: %w", ref.Namespace, ref.Name, err))
		}
	}
	c.rot.last, c.rot.pending, c.rot.failed = p, nil, ""
	s.obs.rotations.Add(context.WithoutCancel(ctx), 1, s.obs.rotatedSet)
	s.opts.Log.Info("tunnel token written; connectors rolling", "class", d.Class, "secret", ref.Namespace+"/"+ref.Name, "deployments", rolled)
	s.tell(RotationEvent{Class: d.Class, Stage: RotationRolling, At: p.At, Trigger: p.Trigger, Deployments: rolled})
	return nil
}

// rotationFailed records, counts and tells a failed step.
func (s *Syncer) rotationFailed(c *classSync, d Desired, err error) error {
	c.rot.failed = err.Error()
	s.obs.rotations.Add(context.Background(), 1, s.obs.rotationFailSet)
	s.tell(RotationEvent{Class: d.Class, Stage: RotationFailed, Trigger: d.Rotation.Trigger, Err: err})
	return err
}

// tell hands ev to Options.OnRotation, if set.
func (s *Syncer) tell(ev RotationEvent) {
	if s.opts.OnRotation != nil {
		s.opts.OnRotation(ev)
	}
}

// rotationDueAt is when c's schedule next asks for a rotation; zero if
// it does not.
func (s *Syncer) rotationDueAt(c *classSync) time.Time {
	r := c.desired.Rotation
	if r.Refused != "" {
		return time.Time{}
	}
	_, _, next := rotationDue(r, c.rot.current(r), s.opts.Now())
	return next
}
