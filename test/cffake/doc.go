// Package cffake is a stateful, in-process fake of the Cloudflare API v4 for
// tests that drive cloudflare-go v7 against loopback.
//
// The idea: a controller's Cloudflare client is pointed at the fake with
// option.WithBaseURL(f.URL()) and runs unchanged. The fake keeps real state
// (accounts, zones, tunnels and their configurations, DNS records, Access
// applications, policies and tags, and Load Balancing's monitors, pools
// and zone load balancers) and
// enforces the rules the real API enforces, so that code which passes
// against it does not fail later against Cloudflare for reasons a test could
// have seen: the catch-all ingress rule, CNAME exclusivity, identical
// records, all-or-nothing DNS batches, pagination that needs more than one
// page, deleted tunnels that list queries still return. Tests seed state
// with AddAccount/AddZone/AddTunnel/AddRecord (AddPool, AddLoadBalancer,
// SetPoolOrigins for Load Balancing), assert on it with Records,
// TunnelConfig, Tunnels, Monitors, Pools, LoadBalancers and Calls, and
// inject rate limits, server errors and slow responses with Fail.
//
// Load Balancing (loadbalancing.go) models the objects, not the service:
// account monitors and pools (origins with name, address, enabled,
// weight, port and a Host header; monitor, enabled, minimum_origins,
// description) and zone load balancers (name, default_pools,
// fallback_pool, proxied, steering_policy, session_affinity and its ttl,
// ttl, enabled, description), with the references between them, per-
// account quotas (SetLBLimits) and the subscription (SetLBEntitled).
// Cloudflare's steering, health checks, failover and the DNS answers of a
// load balancer cannot be modelled: nothing routes by these objects, and
// an origin's health is whatever a test sets (SetOriginHealth), reported
// by the pool health endpoint for one data centre (HealthPoP). Not
// modelled: account-level load balancers, monitor groups, previews,
// references and search endpoints, region/country/PoP pools, rules,
// adaptive routing, load shedding, check regions, notifications,
// virtual networks and the bulk PATCH of pools.
//
// Every response uses Cloudflare's envelope
//
//	{"success":bool,"errors":[{"code":int,"message":string}],"messages":[],"result":...,"result_info":{...}}
//
// with result_info (page, per_page, count, total_count, total_pages) on lists.
// A page past the end is an empty list, which is what stops cloudflare-go's
// auto-pager.
//
// Behaviour chosen where Cloudflare's is not certain, kept strict where a
// lenient fake could hide a bug:
//   - DNS names are fully qualified and lowercased: "@" is the apex, a
//     trailing dot is dropped, and a name outside the zone gets the zone
//     appended ("www" and "www.other.org" become "www.example.com" and
//     "www.other.org.example.com"), as the real API does.
//   - POST and PUT of a DNS record need ttl (1 = automatic, else 60–86400);
//     a proxied record is stored with ttl 1.
//   - Listing tunnels without is_deleted includes deleted ones.
//   - PUT of a configuration on a tunnel created with config_src "local"
//     succeeds and makes the tunnel remotely managed.
//   - A tunnel's configuration reads as version 0 with a null config until
//     the first PUT.
//   - A tunnel's connections are only those tests make (Connect); DELETE
//     of a tunnel with any is refused until DELETE …/connections removes
//     them.
//
// Error codes. Seen in public reports of real responses: 10000
// "Authentication error" (403 here, wrong token), 1013 (tunnel name taken;
// 409 here), 1022 (deleting a tunnel that has connections; 400 here),
// 1004 "DNS Validation Error", 9004 (proxied on a type that
// cannot be), 9005 (bad IPv4), 9021 (bad TTL), 81053 (a CNAME where any
// record has the name), 81054 (a non-CNAME where a CNAME has the name),
// 81058 (identical record). Recalled, not verified: 9106 (400, no
// credentials), 7003 "Could not route to ..." (404 here), 971 (429),
// 81044 (404, record does not exist). Chosen in the same style: 7001 (405),
// 9207 (unreadable body), 1001 (bad parameter), 1003 (404, tunnel not
// found), 1056 (400, invalid tunnel configuration), 9000 (bad DNS name),
// 9006 (bad IPv6), 9007 (bad CNAME content), 9020 (unknown record type),
// 10013 (injected 5xx), 12130–12133 (Access: invalid request, not found,
// conflict, a policy in use; messages in Access's "access.api.error."
// style), 1101–1106 (Load Balancing: invalid request 400, not found 404,
// a load balancer's name taken 409, a monitor or pool in use 409, a
// quota exceeded 400, and 403 for an account without Load Balancing;
// neither these codes nor those statuses are verified against the real
// API). Controllers should branch on the HTTP status and
// treat codes as detail.
package cffake
