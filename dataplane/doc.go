// Package dataplane is the tunnelgate proxy: it serves HTTP with the
// Gateway API semantics of a compiled Config, and takes a new Config or a
// cluster's new endpoints at any time without dropping a request.
//
// # How a request goes through
//
//	listener (srvconn.go: own HTTP/1.1 server on the origin listener;
//	          net/http for TLS with HTTP/2, plain h2c, admin)
//	  → handler.ServeHTTP (handler.go): pick the Gateway listener by host,
//	    match a route rule (package matcher), fail closed, CORS preflight,
//	    redirect, rewrite, choose a backend (weights, session pin)
//	  → mirrors (mirror.go): copies sent on the side, never waited for
//	  → forward: HTTP/1.1 on a pooled connection (forward_h1.go, with
//	    retries and timeouts), HTTP/2 through net/http's Transport
//	    (forward_h2.go), or a WebSocket tunnel (websocket.go)
//	  → response: header filters, CORS, session cookie, body streamed
//
// Everything a request reads is in a snapshot (compile.go), built and
// checked whole by Proxy.Load (proxy.go) and swapped atomically, so a
// request finishes on the config it started with. Clusters are reached
// through stable slots (cluster.go), so Proxy.UpdateCluster replaces a
// cluster's endpoints without recompiling routes.
//
// # Where things are
//
//   - Wire config: config.go. Compilation: compile.go, headers.go (header
//     modifier plans), redirect.go, rewrite.go, cors.go, session.go,
//     retry.go, mirror.go, backendtls.go.
//   - Upstream HTTP/1.1: h1pool.go (connections), h1write.go (request
//     head and body), h1read.go (response head), body.go (body copy and
//     chunked decoding). Connections and TLS identities: cluster.go.
//   - Origin server: srvconn.go (connections, janitor, shutdown),
//     srvrequest.go (request heads), srvbody.go (request bodies),
//     srvresponse.go (the response writer), clientwatch.go (noticing a
//     client that left).
//   - Answers the proxy makes itself: reply.go. Forwarding headers:
//     forwarded.go. Listeners and shutdown: server.go. Admin and metrics:
//     admin.go, metrics.go. The generated TLS origin certificate:
//     selfsigned.go.
//
// Users' documentation is docs/proxy.md; measured costs are in
// BENCHMARKS.md.
package dataplane
