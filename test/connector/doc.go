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
// and answers one line, "ok" or the reason it refuses. The token is
// checked then, once: as Cloudflare documents for a rotated tunnel token,
// a connection registered before the tunnel's secret changed keeps
// serving until its connector stops, while a new registration with the old
// token is refused (Edge.RegisteredWith says which token each connection
// came with). From then on the
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
//     https://host:port, unix:/path and http_status:NNN. The request goes
//     to the origin with keep-alive, its Host unchanged; the headers the
//     edge adds (Cf-Connecting-Ip, Cf-Ray, Cf-Visitor, X-Forwarded-For,
//     X-Forwarded-Proto) pass through. The stream services tcp://,
//     ssh:// and rdp:// are modeled below; unix+tls:, smb://, bastion and
//     the other services are not (502).
//   - Of a rule's originRequest, exactly the fields ctrl/cloudflare writes:
//     http2Origin, originServerName, caPool and access (required,
//     teamName, audTag). Any other field refuses the document, so a
//     setting the controller starts to write cannot be ignored here
//     unnoticed.
//   - originRequest.access, cloudflared's AccessJWTValidator: with
//     required: true the rule's requests and streams are checked before
//     anything is dialled. No Cf-Access-Jwt-Assertion is 403; a token
//     that does not verify (RS256 against the team's keys, issuer
//     https://<teamName>.cloudflareaccess.com) is 502, as cloudflared
//     answers its check's error; a valid token for none of the audTag is
//     403. The team's keys are read from --access-certs=TEAM=URL (the
//     stand-in's own flag; cloudflared reads
//     https://<teamName>.cloudflareaccess.com/cdn-cgi/access/certs). As in
//     cloudflared, a required check with audTag but no teamName refuses
//     the document, and the check is the rule's own only.
//   - Streams to tcp://, ssh:// and rdp:// services (cloudflared's
//     tcpOverWSService; a service without a port gets 7864, 22 or 3389):
//     what `cloudflared access tcp` (ssh, rdp) opens is a WebSocket to the
//     hostname, which the edge sends as a stream marked as a WebSocket
//     (Edge.Stream). After the access check the connector dials the
//     origin (502 if it cannot), acknowledges the stream (cloudflared's
//     101 with Sec-WebSocket-Accept, 200 on HTTP/2), and relays bytes
//     both ways until either side ends, then closes both. cloudflared
//     reads and writes WebSocket binary frames on such a stream (the
//     visitor's cloudflared frames them); the stand-in carries the bytes
//     unframed.
//   - HTTP/1.1 to the origin, except to an https:// service with
//     http2Origin: true, which gets HTTP/2 over TLS with ALPN h2, as
//     cloudflared's http2Origin only lets its transport offer h2 in the
//     TLS handshake (a cleartext origin always gets HTTP/1.1). An https://
//     origin is verified against the system's roots plus the caPool file's
//     CAs (a path in the connector's container; one it cannot read refuses
//     the document; cloudflared also adds Cloudflare's own roots), for
//     originServerName, or the service's host when there is none; a
//     failed handshake answers 502. Trailers come back to
//     the visitor (the http2 tunnel protocol carries them; QUIC, not
//     modeled, drops them), which is what gRPC needs.
//   - Answers without a Content-Length (server-sent events, gRPC, chunked
//     bodies) are passed on as they come, not held until they end.
//   - WebSocket, as cloudflared carries it over its http2 protocol: the
//     edge sends the visitor's handshake on an HTTP/2 stream marked
//     "Cf-Cloudflared-Proxy-Connection-Upgrade: websocket", without the
//     Connection and Upgrade fields HTTP/2 forbids; the connector sends the
//     origin an HTTP/1.1 GET with Connection: Upgrade, Upgrade: websocket
//     and Sec-WebSocket-Version: 13 put back, answers the edge 200 for the
//     origin's 101 (HTTP/2 has no 101), and pipes the stream both ways
//     until either side ends, then closes both; any other answer goes back
//     as it came. To a unix: service, a WebSocket is answered 502 before
//     anything reaches the origin, and the connector logs "http: no Host
//     in request URL": cloudflared's bug with unix: services
//     (cloudflare/cloudflared#560, closed upstream), modeled from
//     observation of cloudflared 2026.8.2 with --protocol http2 (issue 40).
//     The stand-in speaks only its http2-shaped protocol, whatever
//     --protocol says, so it answers so always. Plain requests, server-sent
//     events and the rest still reach a unix: service.
//   - What the stand-in does not model of the http2 protocol's framing:
//     cloudflared carries a request's and an answer's fields serialized in
//     Cf-Cloudflared-Request-Headers and Cf-Cloudflared-Response-Headers;
//     here they are the stream's own header fields.
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
// edge adds the headers Cloudflare adds to a proxied request and drops
// the visitor's hop-by-hop fields. A visitor's WebSocket (Edge.WebSocket)
// goes as the marked stream above; the connector's 200 becomes the
// visitor's 101, whose Body carries the bytes both ways. A visitor's
// stream (Edge.Stream) is such a WebSocket, carrying the Access token as
// the edge sends it for a visitor Access approved (Access at the edge is
// not modeled).
package connector
