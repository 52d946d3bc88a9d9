package dataplane

import (
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// A cluster's endpoints change far more often than routes (every pod
// restart), so routes do not hold endpoints: they hold a clusterSlot, one
// per cluster name for the life of the proxy, whose state is swapped when
// endpoints change. Requests load the state once and finish on it.

// clusterSlot is the stable handle routes keep on a cluster.
type clusterSlot struct {
	name  string
	state atomic.Pointer[clusterState]
	// upstream counts the attempts sent to the cluster, whatever its
	// endpoints at the time.
	upstream observe.UpstreamStats
}

// clusterState is one version of a cluster: its protocol, endpoints and
// the transports that reach them.
// A large config has thousands of clusters, most of a few endpoints, so
// a state holds little beside its endpoints: what its transport says
// (protocol, TLS, HTTP/2) is the transport's.
type clusterState struct {
	name string
	eps  []*endpoint
	t    *transport
}

// endpoint is one address with its outstanding request count, shared by
// every cluster state that lists it so load balancing stays accurate
// across endpoint updates.
type endpoint struct {
	addr     string
	inflight atomic.Int32
	// h1 pools HTTP/1.1 connections, made at the first request (pool):
	// a large config's endpoints are many, most get no request from one
	// proxy for a long time, and an empty pool costs a few hundred bytes
	// each. On an h2 cluster it still carries WebSocket handshakes, which
	// need HTTP/1.1.
	h1 atomic.Pointer[http1.Pool]
	t  *transport // what a pool is made with
	// gone is set when no config uses the endpoint any more (sweep): a
	// pool made after that, by a request in flight, is made closed.
	gone atomic.Bool
	// downUntil (unix nanoseconds) is set when a connection to the
	// endpoint failed: until then the balancer prefers other endpoints.
	downUntil atomic.Int64
}

// downFor is how long an endpoint that refused a connection is avoided.
// It is short: endpoint updates from the controller are the real signal,
// this only bridges the seconds before one arrives.
const downFor = 5 * time.Second

func (e *endpoint) markDown() { e.downUntil.Store(time.Now().Add(downFor).UnixNano()) }

// pool is the endpoint's HTTP/1.1 pool, made at the first call.
func (e *endpoint) pool() *http1.Pool {
	if p := e.h1.Load(); p != nil {
		return p
	}
	p := http1.NewPool(e.addr, e.t.tlsH1, e.t.settings, e.t.explain)
	if !e.h1.CompareAndSwap(nil, p) {
		return e.h1.Load()
	}
	if e.gone.Load() {
		p.Close() // its requests finish; their connections are not kept
	}
	return p
}

// close closes the endpoint's pool, if it has one, and any it is given
// later.
func (e *endpoint) close() {
	e.gone.Store(true)
	if p := e.h1.Load(); p != nil {
		p.Close()
	}
}

// conns counts its pooled connections and all open ones.
func (e *endpoint) conns() (idle, open int) {
	if p := e.h1.Load(); p != nil {
		return p.Counts()
	}
	return 0, 0
}

func (e *endpoint) down(now int64) bool { return e.downUntil.Load() > now }

// pick chooses an endpoint other than avoid (the one that just failed,
// on a retry): the less loaded of two picked at random ("power of two
// choices"), which avoids both the herd behaviour of least-loaded and the
// imbalance of plain random. An endpoint that recently refused a
// connection loses to one that did not.
func (cs *clusterState) pick(avoid *endpoint) *endpoint {
	switch n := len(cs.eps); n {
	case 0:
		return nil
	case 1:
		return cs.eps[0]
	default:
		i := rand.IntN(n)
		j := rand.IntN(n - 1)
		if j >= i {
			j++
		}
		a, b := cs.eps[i], cs.eps[j]
		switch {
		case a == avoid:
			return b
		case b == avoid:
			return a
		}
		if a.downUntil.Load() != 0 || b.downUntil.Load() != 0 {
			now := time.Now().UnixNano()
			if da, db := a.down(now), b.down(now); da != db {
				if da {
					return b
				}
				return a
			}
		}
		if b.inflight.Load() < a.inflight.Load() {
			return b
		}
		return a
	}
}

// find returns the endpoint with addr, for session persistence.
func (cs *clusterState) find(addr string) *endpoint {
	for _, e := range cs.eps {
		if e.addr == addr {
			return e
		}
	}
	return nil
}

// transportKey identifies connections that can be shared: same protocol,
// same TLS identity (CA, SNI, SANs, client certificate, ALPN).
type transportKey struct {
	proto string
	tlsID string
}

// transports owns every upstream connection. Clusters with the same key
// share one transport; endpoints with the same address in it share one
// pool. Pools and transports no longer referenced are closed by sweep.
type transports struct {
	settings http1.PoolSettings

	mu    sync.Mutex
	byKey map[transportKey]*transport
}

type transport struct {
	key   transportKey
	tls   *tls.Config // nil for cleartext
	tlsH1 *tls.Config // tls restricted to http/1.1 (WebSocket on h2 clusters)
	// h2 carries requests when its clusters speak HTTP/2 (h2c, or TLS
	// with h2); nil for HTTP/1.1, which uses each endpoint's pool.
	h2     *http.Transport
	scheme string // "http" or "https", for the h2 transport's URLs
	eps    map[string]*endpoint
	// settings and explain are what its endpoints' pools are made with:
	// explain adds advice, from the clusters' TLS settings, to a failed
	// handshake (clusters of one key share those settings).
	settings http1.PoolSettings
	explain  func(error) error
}

func newTransports(s http1.PoolSettings) *transports {
	return &transports{settings: s, byKey: map[transportKey]*transport{}}
}

// state builds a cluster state, reusing transports and endpoints that
// already exist so their connections and counters carry over.
func (ts *transports) state(c *proxycfg.Cluster) (*clusterState, error) {
	proto := c.Protocol
	key := transportKey{proto: proto}
	var tlsConf *tls.Config
	switch proto {
	case proxycfg.ProtoHTTP1, proxycfg.ProtoH2C:
		if c.TLS != nil {
			return nil, fmt.Errorf("protocol %q is cleartext but TLS settings are given; use %q", proto, proxycfg.ProtoTLS)
		}
	case proxycfg.ProtoTLS:
		if c.TLS == nil {
			return nil, fmt.Errorf("protocol %q needs TLS settings", proto)
		}
		var err error
		if tlsConf, err = buildBackendTLS(c.TLS); err != nil {
			return nil, err
		}
		key.tlsID = tlsIdentity(c.TLS)
	default:
		return nil, fmt.Errorf("unknown protocol %q (want %q, %q or %q)", proto, proxycfg.ProtoHTTP1, proxycfg.ProtoH2C, proxycfg.ProtoTLS)
	}
	for _, e := range c.Endpoints {
		if _, port, err := net.SplitHostPort(e.Address); err != nil || port == "" {
			return nil, fmt.Errorf("endpoint %q is not host:port", e.Address)
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.byKey[key]
	if t == nil {
		t = &transport{key: key, tls: tlsConf, eps: map[string]*endpoint{}, settings: ts.settings, scheme: "http"}
		if tlsConf != nil {
			t.scheme = "https"
		}
		if c.TLS != nil {
			settings := *c.TLS
			t.explain = func(err error) error { return backendTLSError(err, &settings) }
		}
		if tlsConf != nil {
			t.tlsH1 = tlsConf.Clone()
			t.tlsH1.NextProtos = []string{"http/1.1"}
		}
		switch {
		case proto == proxycfg.ProtoH2C:
			t.h2 = newH2Transport(nil, ts.settings)
		case proto == proxycfg.ProtoTLS && c.TLS.H2:
			t.h2 = newH2Transport(tlsConf, ts.settings)
		}
		ts.byKey[key] = t
	}
	cs := &clusterState{name: c.Name, t: t}
	seen := map[string]bool{}
	for _, e := range c.Endpoints {
		if seen[e.Address] {
			continue
		}
		seen[e.Address] = true
		ep := t.eps[e.Address]
		if ep == nil {
			ep = &endpoint{addr: e.Address, t: t}
			t.eps[e.Address] = ep
		}
		cs.eps = append(cs.eps, ep)
	}
	return cs, nil
}

// sweep closes the pools of endpoints, and the transports, that no live
// cluster state uses. In-flight requests on them finish; their connections
// are closed instead of pooled.
func (ts *transports) sweep(live []*clusterState) {
	used := map[*endpoint]bool{}
	usedT := map[transportKey]bool{}
	for _, cs := range live {
		usedT[cs.t.key] = true
		for _, e := range cs.eps {
			used[e] = true
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for key, t := range ts.byKey {
		for addr, e := range t.eps {
			if !used[e] {
				e.close()
				delete(t.eps, addr)
			}
		}
		if !usedT[key] {
			if t.h2 != nil {
				t.h2.CloseIdleConnections()
			}
			delete(ts.byKey, key)
		}
	}
}

// close shuts every pool, at proxy shutdown.
func (ts *transports) close() { ts.sweep(nil) }

// newH2Transport is net/http's transport limited to HTTP/2: prior
// knowledge over cleartext (h2c), or TLS with ALPN h2.
func newH2Transport(tlsConf *tls.Config, s http1.PoolSettings) *http.Transport {
	var p http.Protocols
	if tlsConf == nil {
		p.SetUnencryptedHTTP2(true)
	} else {
		p.SetHTTP2(true)
	}
	return &http.Transport{
		Protocols:           &p,
		TLSClientConfig:     tlsConf,
		DialContext:         (&net.Dialer{Timeout: s.DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: s.DialTimeout,
		IdleConnTimeout:     s.IdleTimeout,
		MaxIdleConnsPerHost: s.MaxIdle,
		MaxConnsPerHost:     s.MaxConns,
		DisableCompression:  true,
		ForceAttemptHTTP2:   true,
		HTTP2: &http.HTTP2Config{
			// Detect a dead backend connection instead of waiting on it.
			SendPingTimeout: 15 * time.Second,
			PingTimeout:     15 * time.Second,
		},
	}
}

// splitHostPort splits an endpoint address; an address without a port
// gives port 0.
func splitHostPort(addr string) (string, int) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	n, _ := strconv.Atoi(port)
	return host, n
}
