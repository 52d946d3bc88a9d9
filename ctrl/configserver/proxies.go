// This file remembers the tunnel protocols the proxies report.

package configserver

import (
	"slices"
	"sync"
	"time"
)

// proxies remembers what each watching proxy reports about itself: the
// protocol its cloudflared sidecar runs the tunnel with. A proxy asks
// again at least every MaxWait, so one not heard from for a few of those
// is gone.
type proxies struct {
	ttl time.Duration
	now func() time.Time

	mu   sync.Mutex
	byID map[string]proxyReport
}

type proxyReport struct {
	protocol string
	at       time.Time
}

// seen records a report; changed is called (outside the lock) when the
// proxy is new or reports a different protocol.
func (p *proxies) seen(id, protocol string, changed func()) {
	if protocol == "" {
		return
	}
	if len(id) > 253 || len(protocol) > 32 {
		return // not a pod name and a protocol name; do not keep it
	}
	p.mu.Lock()
	if p.byID == nil {
		p.byID = map[string]proxyReport{}
	}
	old, ok := p.byID[id]
	p.byID[id] = proxyReport{protocol, p.now()}
	p.mu.Unlock()
	if (!ok || old.protocol != protocol) && changed != nil {
		changed()
	}
}

// Protocols are the tunnel protocols reported by the proxies heard from
// lately, sorted, without repeats.
func (s *Server) Protocols() []string {
	p := &s.proxies
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	var out []string
	for id, r := range p.byID {
		if now.Sub(r.at) > p.ttl {
			delete(p.byID, id)
			continue
		}
		if !slices.Contains(out, r.protocol) {
			out = append(out, r.protocol)
		}
	}
	slices.Sort(out)
	return out
}
