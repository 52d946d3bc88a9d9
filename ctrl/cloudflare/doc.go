// Package cloudflare keeps Cloudflare in step with the cluster: for each
// GatewayClass whose GatewayClassConfig names a tunnel, the tunnel's
// ingress document routes every hostname of the class to the proxies, and,
// when DNS is enabled, each hostname has a proxied CNAME to the tunnel
// plus a TXT record saying it is ours. A Gateway with a dedicated data
// plane has a tunnel of its own, synced the same way under a key and a
// DNS owner of its own (PlaneOwner), below its class's: the class's sync
// removes the records of such an owner whose Gateway is gone. When the
// Gateway goes, a departure (departure.go) removes its records and
// empties or deletes its tunnel.
//
// The work splits as the rest of the controller does: pure functions
// decide (BuildDocument and SameDocument for the ingress document,
// PlanDNS for records), and Syncer does the I/O, through cloudflare-go, as
// the leader's background loop. Syncer reports what it achieved as
// translate.TunnelState values, which the next translation turns into
// statuses; it never writes a status itself.
//
// loadbalancing.go holds the Cloudflare Load Balancing calls that let
// several clusters serve one hostname (a shared pool whose origins are
// the clusters' tunnels, a monitor, a load balancer on the hostname):
// each cluster changes only its own origin, by a read-modify-write
// guarded by a compare, since Cloudflare writes a pool's origins as one
// list; the account's lack of Load Balancing, its quotas, a hostname
// already load balanced and an object still in use come back as
// sentinel errors (ErrLBNotEntitled, ErrLBQuota, ErrLBNameTaken,
// ErrLBInUse) for a status condition to report.
//
// lbsync.go uses them to keep each load balanced hostname
// (Desired.LoadBalancers) in step, and reports each as a
// translate.LBState: the cluster's tunnel is an origin of the pool asked
// (found by name; its origin found by the tunnel's address, named
// "tunnel-<tunnel id>" when added), the pool's monitor carries a health
// token the proxies answer, and a load balancer on the hostname uses the
// pools. What is missing is created, marked "tunnelgate:" in its
// description; only what is so marked is ever changed, beyond this
// cluster's own origin, or deleted. A pool no longer wanted loses this
// cluster's origin, which is disabled instead when it is the last; the
// pool, its monitor and load balancer are deleted only with
// DeleteUnused, and only if tunnelgate created them. The load balancer
// runs before DNS: once it exists, the hostname's DNS is the load
// balancer's, so PlanDNS removes our CNAME there and reports, without
// touching, a record not ours.
//
// A hostname a DNSPolicy leaves to others (translate.Hostname.UnmanagedDNS)
// stays in the ingress document and gets no record: PlanDNS removes the
// records we own there and touches no other, takeover or not.
//
// rotation.go rotates a tunnel's credential when its wish asks
// (Desired.Rotation: a schedule, or a request not yet answered): a new
// secret PATCHed on the tunnel, the token read back and saved with a
// Stamp of the time and the request (which the token Secret keeps, so a
// restart neither repeats nor forgets), then Options.Roll rolls the Pods
// that mount it. Connections opened with the old token keep serving, as
// Cloudflare's edge keeps them, until their Pods are replaced.
//
// Rules it keeps:
//   - It writes only when something differs: a steady state costs one GET
//     of the ingress document per drift check, and no write.
//   - It touches only records it owns (an ownership TXT record with its
//     owner ID), unless told to take over unowned ones; a record owned by
//     another owner is never touched. In Load Balancing it changes only
//     its own origin in a shared pool, and only objects tunnelgate
//     created; nothing is deleted there without DeleteUnused.
//   - What only the user can fix (no Load Balancing on the account, a
//     quota, a hostname load balanced by someone else) is reported on the
//     one policy it concerns, not discovered again by retrying; the
//     others go on.
//   - Every failure is retried from the whole desired state, after the
//     server's Retry-After or an exponential back-off, so nothing is lost
//     and nothing spins.
//   - The API token never reaches a log, an event, a status, a span or a
//     metric; every API call is counted, timed and traced (observe.go).
package cloudflare
