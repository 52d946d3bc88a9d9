// This file defines what a cluster asks of Cloudflare Load Balancing for
// one hostname, and what the Cloudflare sync reports back.

package translate

// LoadBalancing is one load balanced hostname this cluster serves, as a
// LoadBalancingPolicy asks. Several clusters (regions, or blue and
// green) serve the hostname, each through its own tunnel: each tunnel is
// an origin (<tunnel-id>.cfargotunnel.com, the hostname as its Host) of a
// pool, and a load balancer on the hostname steers visitors between the
// pools, failing over in Pools' order. A monitor probes each origin with
// a request the proxies answer from the state of the hostname's routes
// (proxycfg.HealthCheck), so a cluster whose backends are down is failed
// over too, not only one whose tunnel is.
//
// Pools, the monitor and the load balancer are shared by the clusters
// that name them. Each cluster's sync changes only its own origin (the
// one whose address is its tunnel's), creates what is missing, and
// changes a shared object's settings only if tunnelgate created it. The
// hostname's DNS belongs to the load balancer: the sync gives it no CNAME
// of its own, removes one it made before, and reports, without touching,
// one it does not own.
type LoadBalancing struct {
	// Policy is the LoadBalancingPolicy's namespace/name.
	Policy string `json:"policy"`
	// Hostname is the load balancer's name: the public hostname visitors
	// use, one the tunnel serves (among Desired.Hostnames).
	Hostname string `json:"hostname"`
	// Pool is the pool this cluster's tunnel joins as an origin.
	Pool string `json:"pool"`
	// Pools are the load balancer's pools in failover order, Pool among
	// them: the load balancer sends to the first with a healthy origin
	// (with steering off), and the last is its fallback.
	Pools []string `json:"pools"`
	// Weight is this cluster's origin's share of its pool's traffic, 0
	// to 1 in steps of 0.01.
	Weight float64 `json:"weight"`
	// Enabled: false keeps the origin in the pool but sends it nothing
	// (draining a cluster).
	Enabled bool `json:"enabled"`
	// Steering is the load balancer's steering policy, as Cloudflare
	// spells it: "off", "random", "geo", "dynamic_latency",
	// "proximity", "least_outstanding_requests", "least_connections".
	Steering string `json:"steering"`
	// SessionAffinity is "none", "cookie" or "ip_cookie";
	// SessionAffinityTTL its lifetime in seconds (0: Cloudflare's
	// default).
	SessionAffinity    string `json:"sessionAffinity"`
	SessionAffinityTTL int    `json:"sessionAffinityTTL,omitempty"`
	// Monitor is how the pool's origins are probed.
	Monitor LBMonitor `json:"monitor"`
	// DeleteUnused lets the sync delete the pool, monitor and load
	// balancer once this cluster leaves and no other origin remains in
	// the pool, but only those tunnelgate created. Without it they stay.
	DeleteUnused bool `json:"deleteUnused,omitempty"`
}

// LBMonitor is a load balancer monitor's probe of each origin: an HTTPS
// GET of Path on the hostname, through the tunnel, carrying the header
// LBHealthHeader with the monitor's token.
type LBMonitor struct {
	// Path is the path probed; the proxies answer it (and only it, with
	// the token) from the state of the hostname's routes.
	Path string `json:"path"`
	// Interval is the seconds between probes (Cloudflare's minimum
	// depends on the plan); Timeout and Retries as Cloudflare's monitor
	// fields.
	Interval int `json:"interval"`
	Timeout  int `json:"timeout"`
	Retries  int `json:"retries"`
	// ExpectedCodes is the status a healthy origin answers: "200".
	ExpectedCodes string `json:"expectedCodes"`
}

// LBHealthHeader is the request header a monitor tunnelgate creates
// sends its token in. The proxies answer a health request only with it
// (proxycfg.HealthCheck).
const LBHealthHeader = "Tunnelgate-Health-Token"

// LBState is what the Cloudflare sync achieved for one LoadBalancing, by
// its Policy, for the policy's status.
type LBState struct {
	// Ready: this cluster's origin is in its pool as asked, and the pool,
	// monitor and load balancer exist.
	Ready bool
	// Reason and Message explain a state that is not Ready: a condition
	// reason (LBReason*) and what the user can do.
	Reason, Message string
	// HealthToken is the token the pool's monitor sends in
	// LBHealthHeader (made by whichever cluster created the monitor, read
	// from it by the others), for the proxies' HealthCheck; "" until
	// known.
	HealthToken string
	// Origins is how many origins the pool has, this cluster's included.
	Origins int
}

// The reasons of an LBState that is not Ready.
const (
	LBReasonPending      = "Pending"
	LBReasonNotEntitled  = "LoadBalancingNotEnabled"
	LBReasonQuota        = "QuotaExceeded"
	LBReasonNameTaken    = "HostnameLoadBalancedElsewhere"
	LBReasonInvalid      = "Invalid"
	LBReasonAPIError     = "CloudflareError"
	LBReasonForeignOwner = "NotOwned"
)
