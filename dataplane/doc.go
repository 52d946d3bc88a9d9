// Package dataplane is the tunnelgate proxy: it serves HTTP with the
// Gateway API semantics of a compiled Config (and relays the connections
// of its TCPRoutes and TLSRoutes), and takes a new Config or a
// cluster's new endpoints at any time without dropping a request.
//
// # How a request goes through
//
//	listener (package http1's server on the origin listener; net/http
//	          for TLS with HTTP/2, plain h2c, Gateway addresses and
//	          listener ports, admin)
//	  → handler.ServeHTTP (handler.go), which keeps the request's record
//	    (record.go) for metrics, traces and the access log
//	  → handler.serve (pipeline.go): refuse what no request line may hold,
//	    pick the Gateway listener by host, answer a load balancer
//	    monitor's health request (health.go), match a route rule (package
//	    matcher), fail closed, CORS preflight, redirect, rewrite, choose a
//	    backend (weights, session pin), take the body (whole, within the
//	    request buffer, to an HTTP/1.1 backend; else its start)
//	  → mirrors (mirror.go): copies sent on the side, never waited for
//	  → forward: HTTP/1.1 on a pooled connection (forward_h1.go, with
//	    retries and timeouts), HTTP/2 through net/http's Transport
//	    (forward_h2.go), or a WebSocket tunnel (websocket.go)
//	  → response: header filters, CORS, session cookie, body streamed
//	    (a short one from an HTTP/1.1 backend read whole first, its
//	    connection given back)
//
// Everything a request reads is in a compiledConfig (compile.go), built and
// checked whole by Proxy.Apply (proxy.go) and swapped atomically, so a
// request finishes on the config it started with. Clusters are reached
// through stable slots (cluster.go), so a config that changes only
// clusters' endpoints replaces them without recompiling routes
// (apply.go).
//
// # Where things are
//
//   - The config a proxy serves is package proxycfg; its rules compiled
//     into filter programs are package compiled. A compiledConfig files each
//     compiled rule into the views of the sockets the proxy serves
//     (views.go) and keeps, beside it, what the proxy counts per rule
//     (servedRule) and the slot of each cluster, by the IDs the compiled
//     rules use.
//   - HTTP/1.1 on the wire, server and upstream client, is package
//     http1; the grammar both it and the proxy check is package
//     httpsyntax. Here: the request body on its way in, kept or
//     streamed, and never a backend connection before it started
//     (body.go), held in buffers charged against one budget
//     (buffers.go); the request as it leaves (outrequest.go); the exchange
//     with retries and timeouts (forward_h1.go, retry.go); noticing a
//     client that left (clientwatch.go). Endpoints, pools and TLS
//     identities: cluster.go, backendtls.go.
//   - HTTP/2 backends: forward_h2.go; WebSocket tunnels: websocket.go;
//     mirrored copies: mirror.go; session tokens: session.go (signing)
//     and persist.go (setting them on a response).
//   - What net/http's servers need beside the own one: netwriter.go (the
//     status and size of an answer, and deadlines on slow clients).
//   - Answers the proxy makes itself: reply.go; to load balancer
//     monitors' health requests: health.go. Forwarding headers:
//     forwarded.go. Listeners and shutdown: server.go; Gateway addresses
//     and listener ports: gateways.go; the admin listener: admin.go. The
//     generated TLS origin certificate: selfsigned.go.
//   - Metrics, traces and the access log are package observe's; here is
//     what feeds them: what the proxy counts (observe.Counters, and each
//     rule's stats kept across configs: counters.go), the record each
//     request leaves (record.go), the spans filled from it (tracing.go),
//     and what /metrics reads (metrics.go).
//
// # Stream routes
//
// TCPRoutes and TLSRoutes relay connections, not requests: compile checks
// them and builds a streamTable beside the HTTP side (stream.go), the
// stream sockets (TCP and TLS listeners' sockets of their own, and a port
// per route through the tunnel) open as configs come and relay each
// connection with package pipe (streamserve.go), and the connections held
// are capped, cut when their route goes, and drained at shutdown
// (streamlive.go).
//
// Users' documentation is docs/proxy.md; measured costs are in
// BENCHMARKS.md.
package dataplane
