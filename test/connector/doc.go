// Package connector stands in for cloudflared and Cloudflare's edge in
// tests, so a rollout of the chart's Pods can be driven with visitors'
// requests the way production traffic reaches them: visitor → edge →
// a connector's outbound tunnel connection → the proxy's origin listener.
// cloudflared itself cannot be built here (its Go module cannot be
// fetched), and the real edge is Cloudflare's.
//
// # The tunnel connection
//
// A connector dials the edge (its --edge flag, the address real cloudflared
// reserves for Cloudflare's own test environments) and sends one line, a
// JSON hello with its tunnel token; the edge checks the token (see Tunnels)
// and answers one line, "ok" or the reason it refuses. From then on the
// connection carries HTTP/2 with the roles reversed, as cloudflared's
// http2 protocol does: the edge is the client and sends visitors' requests,
// the connector serves them. The edge first pushes the tunnel's
// configuration (the ingress document the controller PUT to the Cloudflare
// API) as a request to configHost, and pushes it again whenever its version
// changes, as the real edge pushes a remotely managed tunnel's
// configuration to its connectors.
//
// # What a connector models, from cloudflared's documentation
//
//   - `tunnel run --token-file=F` (or --token): the tunnel it serves; one
//     connection to the edge (cloudflared opens four, to several data
//     centres; one is enough to prove what the tests check).
//   - The ingress rules of a remotely managed tunnel, applied in order, the
//     first match wins: hostname (exact, or "*.domain" for any subdomain),
//     path (a regular expression), and the services http://host:port,
//     unix:/path and http_status:NNN. The request goes to the origin over
//     HTTP/1.1 with keep-alive, its Host unchanged; the headers the edge
//     adds (Cf-Connecting-Ip, Cf-Ray, Cf-Visitor, X-Forwarded-For,
//     X-Forwarded-Proto) pass through. https:// and unix+tls: origins are
//     not modeled (502).
//   - `--metrics=ADDR`: /ready answers 200 while the connection is
//     registered, 503 otherwise; /healthcheck answers 200.
//   - `--grace-period=D` (default 30s): on SIGTERM or SIGINT it "stops
//     accepting new requests, waits for in-progress requests to terminate,
//     then shuts down; waiting for in-progress requests times out after
//     this grace period, or when a second SIGTERM/SIGINT is received"
//     (cloudflared's run parameters). Stopping is modeled as an HTTP/2
//     GOAWAY on the tunnel connection: the edge sends it no new request,
//     the requests in flight finish, and the connector exits once they
//     have (or when the grace period ends, or on a second signal).
//     cloudflared is observed to wait out the whole grace period even when
//     nothing is in flight; the stand-in does not, which changes no
//     request's fate.
//
// # What the edge models
//
// Visitors' requests (Edge.Client) go to a registered connector that can
// take a new request, round robin. A request the edge sent just as the
// connector's GOAWAY crossed it was, by the GOAWAY's last stream ID, not
// processed, and goes to another connector (RFC 9113, section 6.8). With
// no connector the request fails, as Cloudflare answers error 1033. The
// edge adds the headers Cloudflare adds to a proxied request.
package connector
