// This file tests when a tunnel credential's rotation is due.

package cloudflare

import (
	"encoding/base64"
	"testing"
	"time"
)

// A rotation is due once per new on-demand value and when the schedule
// has run since the last rotation, or, for a tunnel never rotated, since
// its token Secret was made; a restart reads the last rotation from the
// Secret and keeps counting from it.
func TestRotationDue(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	cases := []struct {
		name string
		r    Rotation
		mem  rotationMemory
		now  time.Time
		due  bool
		next time.Time
	}{
		{"nothing asked", Rotation{Since: t0}, rotationMemory{}, t0.Add(365 * day), false, time.Time{}},
		{"schedule not yet run, from the Secret's making", Rotation{Every: 30 * day, Since: t0}, rotationMemory{}, t0.Add(29 * day), false, t0.Add(30 * day)},
		{"schedule run, never rotated", Rotation{Every: 30 * day, Since: t0}, rotationMemory{}, t0.Add(30 * day), true, t0.Add(30 * day)},
		{"schedule counts from the last rotation", Rotation{Every: 30 * day, Since: t0, Last: t0.Add(20 * day)}, rotationMemory{}, t0.Add(40 * day), false, t0.Add(50 * day)},
		{"no start known yet (no Secret)", Rotation{Every: time.Hour}, rotationMemory{}, t0, false, time.Time{}},
		{"new request", Rotation{Trigger: "1", Since: t0}, rotationMemory{}, t0, true, time.Time{}},
		{"request handled, per the Secret (a restart)", Rotation{Trigger: "1", Handled: "1", Last: t0, Since: t0}, rotationMemory{}, t0.Add(time.Hour), false, time.Time{}},
		{"request handled, the Secret not yet seen again", Rotation{Trigger: "1", Since: t0}, rotationMemory{last: Stamp{At: t0, Trigger: "1"}}, t0.Add(time.Second), false, time.Time{}},
		{"another request", Rotation{Trigger: "2", Handled: "1", Last: t0, Since: t0}, rotationMemory{}, t0.Add(time.Hour), true, time.Time{}},
		{"a request restarts the schedule", Rotation{Every: 30 * day, Trigger: "1", Since: t0}, rotationMemory{last: Stamp{At: t0.Add(10 * day), Trigger: "1"}}, t0.Add(31 * day), false, t0.Add(40 * day)},
	}
	for _, c := range cases {
		due, why, next := rotationDue(c.r, c.mem.current(c.r), c.now)
		if due != c.due || !next.Equal(c.next) || due != (why != "") {
			t.Errorf("%s: due %v (%q), next %v; want due %v, next %v", c.name, due, why, next, c.due, c.next)
		}
	}
}

// A new tunnel secret is 32 random bytes, base64, as Cloudflare asks.
func TestNewTunnelSecret(t *testing.T) {
	a, b := newTunnelSecret(), newTunnelSecret()
	raw, err := base64.StdEncoding.DecodeString(a)
	if err != nil || len(raw) != 32 || a == b {
		t.Errorf("secrets %q, %q: %d bytes (%v), want 32 random ones", a, b, len(raw), err)
	}
}
