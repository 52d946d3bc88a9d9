package cfaccess

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// A team is noted once per interval, however many tokens name unknown
// keys; a taken team that was not delivered is put back; Ready signals
// each time a team becomes pending.
func TestUnknownKeysNotesATeamOncePerInterval(t *testing.T) {
	u := NewUnknownKeys(time.Minute)
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	ready := func() bool {
		select {
		case <-u.Ready():
			return true
		default:
			return false
		}
	}
	if u.Pending() || ready() {
		t.Fatal("pending before any note")
	}
	u.Note("a.cloudflareaccess.com", t0)
	u.Note("a.cloudflareaccess.com", t0.Add(time.Second))
	u.Note("b.cloudflareaccess.com", t0.Add(2*time.Second))
	if !ready() || !u.Pending() {
		t.Fatal("not ready after notes")
	}
	if got := u.Take(); !slices.Equal(got, []string{"a.cloudflareaccess.com", "b.cloudflareaccess.com"}) {
		t.Fatalf("took %q", got)
	}
	if u.Pending() || u.Take() != nil {
		t.Fatal("pending after Take")
	}

	u.Note("a.cloudflareaccess.com", t0.Add(59*time.Second))
	if u.Pending() {
		t.Error("noted again within the minute")
	}
	u.Note("a.cloudflareaccess.com", t0.Add(61*time.Second))
	if got := u.Take(); !slices.Equal(got, []string{"a.cloudflareaccess.com"}) {
		t.Errorf("after the minute took %q", got)
	}
	// A clock that went back does not silence a team for longer.
	u.Note("a.cloudflareaccess.com", t0)
	if got := u.Take(); len(got) != 1 {
		t.Errorf("after the clock went back took %q", got)
	}

	ready() // drain
	u.Put([]string{"b.cloudflareaccess.com", "b.cloudflareaccess.com"})
	if !ready() {
		t.Error("Put did not signal")
	}
	if got := u.Take(); !slices.Equal(got, []string{"b.cloudflareaccess.com"}) {
		t.Errorf("put back %q", got)
	}
}

// The teams remembered stay few: those noted an interval ago are
// forgotten once maxNotedTeams are.
func TestUnknownKeysForgetsOldTeams(t *testing.T) {
	u := NewUnknownKeys(time.Minute)
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for i := range 10 * maxNotedTeams {
		u.Note(fmt.Sprintf("t%d.cloudflareaccess.com", i), t0.Add(time.Duration(i)*time.Second))
		u.Take()
	}
	if n := len(u.noted); n > maxNotedTeams {
		t.Errorf("%d teams remembered, want at most %d", n, maxNotedTeams)
	}
}
