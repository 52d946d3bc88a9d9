// This file serves /metrics from the proxy's counters.

package dataplane

import (
	"net/http"
	"sync"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
)

// The admin listener's /metrics is package observe's handler reading the
// proxy through metricSource at each scrape (observe/metrics.go lists the
// families).

// metricsEndpoint serves /metrics, building the registry and meter
// provider on the first scrape so a proxy nobody scrapes pays nothing.
func (p *Proxy) metricsEndpoint() http.Handler {
	build := sync.OnceValues(func() (http.Handler, error) {
		return observe.NewMetricsHandler(metricSource{p}, observe.MetricsOptions{
			AccessLog: p.opts.AccessLog,
			Tracer:    p.tracer,
			Register:  p.opts.Metrics,
			Log:       p.opts.Log,
			Detail:    p.opts.MetricsDetail,
		})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, err := build()
		if err != nil {
			http.Error(w, "metrics unavailable: "+err.Error(), http.StatusInternalServerError)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// metricSource is the proxy as the metrics read it (observe.Source).
type metricSource struct{ p *Proxy }

func (m metricSource) Counters() *observe.Counters { return &m.p.stats }

func (m metricSource) Inflight() int64 { return m.p.inflight.Load() }

func (m metricSource) BufferedBytes() int64 { return m.p.buffers.inUse() }

func (m metricSource) ConfigVersion() (string, bool) {
	if cc := m.p.current.Load(); cc != nil {
		return cc.version, true
	}
	return "", false
}

func (m metricSource) Rules(into []*observe.RuleStats) []*observe.RuleStats {
	p := m.p
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, st := range p.ruleStats {
		into = append(into, st)
	}
	return into
}

// Clusters reads each cluster's current state, into a slice the scrape
// reuses, so that a scrape of thousands of clusters allocates nothing
// here. p.mu is held while they are read (atomic loads, and no endpoint
// made): a config waits that long to be applied.
func (m metricSource) Clusters(into []observe.Cluster) []observe.Cluster {
	p := m.p
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.slots {
		c := observe.Cluster{Name: s.name, Upstream: &s.upstream, Stream: &s.stream}
		if cs := s.state.Load(); cs != nil {
			c.Endpoints = len(cs.addrs)
			for _, e := range cs.madeEndpoints() { // a scrape makes none
				c.Inflight += int64(e.inflight.Load())
				idle, open := e.conns()
				c.IdleConns += idle
				c.OpenConns += open
			}
		}
		into = append(into, c)
	}
	return into
}

// PoolConnections reads every endpoint's pool once, however many
// clusters share it. The transports' lock is held only to list them.
func (m metricSource) PoolConnections() (idle, open int) {
	for _, e := range m.p.transports.endpoints() {
		i, o := e.conns()
		idle += i
		open += o
	}
	return idle, open
}

func (m metricSource) StreamRoutes() []observe.StreamRoute {
	cc := m.p.current.Load()
	if cc == nil {
		return nil
	}
	out := make([]observe.StreamRoute, 0, len(cc.streams.routes))
	for _, r := range cc.streams.routes {
		out = append(out, observe.StreamRoute{Kind: string(r.id.Kind), Name: r.name, Stats: r.stats})
	}
	return out
}

func (m metricSource) Listeners() []*observe.ListenerStats {
	out := []*observe.ListenerStats{&m.p.noListener}
	if cc := m.p.current.Load(); cc != nil {
		for _, st := range cc.filed.stats {
			out = append(out, st)
		}
	}
	return out
}
