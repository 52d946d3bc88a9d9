// This file notes the teams whose tokens named a key the proxy lacks.

package cfaccess

import (
	"sync"
	"time"
)

// DefaultUnknownKeyInterval is how often a proxy may ask again for one
// team's keys (UnknownKeys).
const DefaultUnknownKeyInterval = time.Minute

// UnknownKeys collects the teams for which a token named a key their set
// lacks (ReasonUnknownKey). That is how a key rotation shows at the proxy
// before its config carries the new key: the config client tells the
// controller, which fetches the team's keys again, so tokens signed with
// the new key pass within seconds rather than at the next scheduled
// refresh.
//
// Any client can send a token naming any kid, so a team is noted at most
// once per interval; the controller limits its fetches too. Teams come
// from the proxy's config, never from a request, so the set is as small
// as the config's list of teams. It is safe for concurrent use.
type UnknownKeys struct {
	every time.Duration
	ready chan struct{} // holds a signal while pending is not empty

	mu      sync.Mutex
	noted   map[string]time.Time // when each team was last noted
	pending []string
}

// NewUnknownKeys notes each team at most once per every
// (DefaultUnknownKeyInterval when 0).
func NewUnknownKeys(every time.Duration) *UnknownKeys {
	if every <= 0 {
		every = DefaultUnknownKeyInterval
	}
	return &UnknownKeys{every: every, ready: make(chan struct{}, 1), noted: map[string]time.Time{}}
}

// Note records that a token for team named a key its set lacks, at now,
// unless the team was noted less than the interval ago.
func (u *UnknownKeys) Note(team string, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if last, ok := u.noted[team]; ok && now.Sub(last) < u.every && !now.Before(last) {
		return
	}
	if len(u.noted) >= maxNotedTeams {
		u.forget(now)
	}
	u.noted[team] = now
	u.add(team)
}

// Ready receives a signal when teams are pending. A signal may remain
// after Take emptied the list: check Pending.
func (u *UnknownKeys) Ready() <-chan struct{} { return u.ready }

// Pending reports whether teams wait to be taken.
func (u *UnknownKeys) Pending() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.pending) > 0
}

// Take returns the pending teams and empties the list.
func (u *UnknownKeys) Take() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := u.pending
	u.pending = nil
	return out
}

// Put makes teams taken but not delivered (the request carrying them
// failed) pending again.
func (u *UnknownKeys) Put(teams []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, t := range teams {
		u.add(t)
	}
}

// maxNotedTeams is where the teams noted longer than the interval ago
// are forgotten: teams leave the config, and nothing else removes them.
const maxNotedTeams = 64

// forget removes teams noted the interval or longer before now; u.mu is
// held.
func (u *UnknownKeys) forget(now time.Time) {
	for t, last := range u.noted {
		if now.Sub(last) >= u.every {
			delete(u.noted, t)
		}
	}
}

// add appends team to pending once and signals Ready; u.mu is held.
func (u *UnknownKeys) add(team string) {
	for _, p := range u.pending {
		if p == team {
			return
		}
	}
	u.pending = append(u.pending, team)
	select {
	case u.ready <- struct{}{}:
	default:
	}
}
