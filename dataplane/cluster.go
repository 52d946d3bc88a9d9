// This file implements clusters, their endpoints and the choice of one.

package dataplane

import (
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
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
	// stream counts the connections stream routes relayed to the cluster
	// (streamserve.go), and streamNext takes its endpoints in turn.
	stream     observe.StreamStats
	streamNext atomic.Uint32
}

// install makes cs the slot's state. When the state it replaces has made
// its endpoints, cs makes its own now, so that the endpoints both list
// keep their pools and counts through the sweep that follows (a request
// making the old state's at this moment may lose them: its pools close,
// and the next state makes new ones).
func (s *clusterSlot) install(cs *clusterState) {
	if old := s.state.Load(); old != nil && old.eps.Load() != nil {
		cs.endpoints()
	}
	s.state.Store(cs)
}

// clusterState is one version of a cluster: its protocol, endpoints and
// the transports that reach them.
// A large config has thousands of clusters, most of a few endpoints, and
// most of them get no request from one proxy for a long time. So a state
// holds little: what its transport says (protocol, TLS, HTTP/2) is the
// transport's, and its endpoints are made from their addresses at its
// first request (endpoints).
type clusterState struct {
	name string
	t    *transport
	// addrs are its endpoints' addresses, without repeats, in config
	// order: the config's own list when it has none.
	addrs []proxycfg.Endpoint
	// eps are its endpoints, once made; only under the transports' lock.
	eps atomic.Pointer[[]*endpoint]
}

// endpoints are the state's endpoints, in the order of addrs: those of
// its transport with the same addresses, made there at the first call.
func (cs *clusterState) endpoints() []*endpoint {
	if eps := cs.eps.Load(); eps != nil {
		return *eps
	}
	return cs.t.owner.makeEndpoints(cs)
}

// madeEndpoints are the state's endpoints if they are made, without
// making them: what a metrics scrape reads.
func (cs *clusterState) madeEndpoints() []*endpoint {
	if eps := cs.eps.Load(); eps != nil {
		return *eps
	}
	return nil
}

// endpoint is one address with its outstanding request count, shared by
// every cluster state that lists it so load balancing stays accurate
// across endpoint updates.
type endpoint struct {
	addr string
	// h1 pools HTTP/1.1 connections, made at the first request (pool):
	// a large config's endpoints are many, most get no request from one
	// proxy for a long time, and an empty pool costs a few hundred bytes
	// each. On an h2 cluster it still carries WebSocket handshakes, which
	// need HTTP/1.1.
	h1 atomic.Pointer[http1.Pool]
	t  *transport // what a pool is made with
	// downUntil (unix nanoseconds) is set when a connection to the
	// endpoint failed: until then the balancer prefers other endpoints.
	downUntil atomic.Int64
	inflight  atomic.Int32
	// gone is set when no config uses the endpoint any more (sweep): a
	// pool made after that, by a request in flight, is made closed.
	gone atomic.Bool
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
	if len(cs.addrs) == 0 {
		return nil
	}
	eps := cs.endpoints()
	switch n := len(eps); n {
	case 1:
		return eps[0]
	default:
		i := rand.IntN(n)
		j := rand.IntN(n - 1)
		if j >= i {
			j++
		}
		a, b := eps[i], eps[j]
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
	for _, e := range cs.endpoints() {
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
	owner *transports
	key   transportKey
	tls   *tls.Config // nil for cleartext
	tlsH1 *tls.Config // tls restricted to http/1.1 (WebSocket on h2 clusters)
	// h2 carries requests when its clusters speak HTTP/2 (h2c, or TLS
	// with h2); nil for HTTP/1.1, which uses each endpoint's pool.
	h2     *http.Transport
	scheme string // "http" or "https", for the h2 transport's URLs
	// eps are its endpoints, by address, that a state has made
	// (clusterState.endpoints) and sweep has not closed.
	eps map[string]*endpoint
	// gone is set when sweep drops the transport: endpoints a request in
	// flight makes in it later are made gone.
	gone bool
	// settings and explain are what its endpoints' pools are made with:
	// explain adds advice, from the clusters' TLS settings, to a failed
	// handshake (clusters of one key share those settings).
	settings http1.PoolSettings
	explain  func(error) error
}

// endpoints are every endpoint of every transport, in a new slice.
func (ts *transports) endpoints() []*endpoint {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var out []*endpoint
	for _, t := range ts.byKey {
		for _, e := range t.eps {
			out = append(out, e)
		}
	}
	return out
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
	case proxycfg.ProtoTCP:
		// TLS settings re-encrypt what the proxy terminated
		// (proxycfg.ProtoTCP); a stream offers no ALPN.
		if c.TLS != nil {
			if c.TLS.H2 {
				return nil, fmt.Errorf("protocol %q: TLS settings offer HTTP/2, which a stream does not speak", proto)
			}
			var err error
			if tlsConf, err = buildBackendTLS(c.TLS); err != nil {
				return nil, err
			}
			tlsConf.NextProtos = nil
			key.tlsID = tlsIdentity(c.TLS)
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
		return nil, fmt.Errorf("unknown protocol %q (want %q, %q, %q or %q)", proto, proxycfg.ProtoHTTP1, proxycfg.ProtoH2C, proxycfg.ProtoTLS, proxycfg.ProtoTCP)
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
		t = &transport{owner: ts, key: key, tls: tlsConf, eps: map[string]*endpoint{}, settings: ts.settings, scheme: "http"}
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
	return &clusterState{name: c.Name, t: t, addrs: withoutRepeats(c.Endpoints)}, nil
}

// withoutRepeats returns eps without the addresses listed before: eps
// itself when none is. A short list is checked against itself; a long
// one (a Service of many Pods) against a set, since comparing each
// address with all before it costs milliseconds at a thousand.
func withoutRepeats(eps []proxycfg.Endpoint) []proxycfg.Endpoint {
	var seen map[string]bool
	if len(eps) > 16 {
		seen = make(map[string]bool, len(eps))
	}
	var out []proxycfg.Endpoint // nil until the first repeat
	for i, e := range eps {
		var repeat bool
		if seen != nil {
			repeat, seen[e.Address] = seen[e.Address], true
		} else {
			repeat = slices.ContainsFunc(eps[:i], func(b proxycfg.Endpoint) bool { return b.Address == e.Address })
		}
		switch {
		case repeat && out == nil:
			out = slices.Clone(eps[:i])
		case !repeat && out != nil:
			out = append(out, e)
		}
	}
	if out == nil {
		return eps
	}
	return out
}

// makeEndpoints makes cs's endpoints, unless a request made them first:
// for each address, its transport's endpoint, or a new one kept there so
// that the next state of the cluster, or another cluster listing the
// address, shares its pool and counts.
func (ts *transports) makeEndpoints(cs *clusterState) []*endpoint {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if eps := cs.eps.Load(); eps != nil {
		return *eps
	}
	t := cs.t
	eps := make([]*endpoint, len(cs.addrs))
	for i, a := range cs.addrs {
		ep := t.eps[a.Address]
		if ep == nil {
			ep = &endpoint{addr: a.Address, t: t}
			ep.gone.Store(t.gone)
			t.eps[a.Address] = ep
		}
		eps[i] = ep
	}
	cs.eps.Store(&eps)
	return eps
}

// sweep closes the pools of endpoints, and the transports, that no live
// cluster state uses. In-flight requests on them finish; their connections
// are closed instead of pooled.
func (ts *transports) sweep(live []*clusterState) {
	ts.mu.Lock() // before reading states' endpoints, which makeEndpoints makes under it
	defer ts.mu.Unlock()
	used := map[*endpoint]bool{}
	usedT := map[transportKey]bool{}
	for _, cs := range live {
		usedT[cs.t.key] = true
		for _, e := range cs.madeEndpoints() {
			used[e] = true
		}
	}
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
			t.gone = true
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
