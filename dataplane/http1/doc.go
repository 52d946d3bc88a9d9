// Package http1 is the proxy's HTTP/1.1 on the wire: a server for the
// origin listener, and the client that carries requests to HTTP/1.1
// backends over pooled connections. Everything that parses or writes
// HTTP/1.1 bytes is here, so that it can be audited as one unit; what the
// proxy decides (routes, filters, retries, which headers a listener
// trusts) is not.
//
// # Why not net/http
//
// The origin listener serves one client, cloudflared, with kept-alive
// connections, and carries every request the proxy handles. net/http's
// server allocates a request, a URL, a context and a string per header
// field on every request, and hands each connection to a second goroutine
// that watches for the client going away; its Transport hands every
// request to two goroutines of its own and allocates a request clone, a
// response and a header map per exchange. Here one goroutine per client
// connection reads the request, and the same goroutine writes it upstream
// and reads the answer; a proxied request costs four allocations.
// HTTP/2 (the TLS origin, h2c, gRPC backends) stays on net/http.
//
// # Rules enforced
//
// Requests, read by the Server (request.go, reqbody.go):
//   - RFC 9112 §3: a request line is method SP request-target SP
//     HTTP-version; the method is a token (RFC 9110 §9.1), the target
//     holds no byte at or below space nor DEL, an origin-form path has
//     well-formed percent-escapes, the version is HTTP/1.0 or HTTP/1.1
//     (else 505). A line over 256 KiB is answered 414.
//   - RFC 9112 §3.2: an HTTP/1.1 request has exactly one Host, whose value
//     holds only reg-name, IP-literal and port bytes, as net/http's server
//     accepts (no '@': a Host names no userinfo, RFC 9110 §7.2); an
//     absolute-form target is parsed as net/http parses it and its
//     authority is the host (§3.2.2); userinfo in a target is refused
//     (RFC 9110 §4.2.4).
//   - RFC 9112 §5.1 and §5.2: a field name is a token with no whitespace
//     before the colon; obs-fold is refused; values hold no control
//     character other than HTAB (RFC 9110 §5.5). A head over 256 KiB or
//     512 fields is answered 431.
//   - RFC 9112 §6.1 and §6.3, stricter than a recipient must be, since
//     these are the shapes request smuggling takes: Transfer-Encoding
//     other than "chunked" alone is answered 501; Content-Length with
//     Transfer-Encoding, repeated or listed lengths, and Transfer-Encoding
//     in HTTP/1.0 are answered 400.
//   - RFC 9112 §7.1: chunk-size lines end in CRLF and are at most 4 KiB;
//     chunk data is followed by CRLF; a trailer section is read and
//     dropped (at most 64 lines).
//   - RFC 9110 §10.1.1: Expect other than 100-continue is answered 417;
//     100 Continue is sent when the handler first reads the body.
//   - RFC 9112 §9.3 and §9.6: HTTP/1.1 is persistent unless Connection:
//     close; HTTP/1.0 only with keep-alive. What the handler left of a body
//     is read (up to 256 KiB) before the next request, else the
//     connection is closed.
//   - Every wait on a client has a limit, from its last progress: a head
//     (HeadTimeout), a body's next bytes (BodyTimeout: the read fails, the
//     handler may answer 408), a write the client does not read
//     (WriteTimeout: the connection is closed), an idle connection
//     (IdleTimeout). Between requests a connection keeps only its buffers.
//   - A connection's requests are served inside one long read of its
//     socket (inread.go), so that it waits for the next without a read
//     that finds nothing; a request that needs the client meanwhile (a
//     body still to come, an upgrade) or a head over 4 KiB is read the
//     usual way. Closes from other goroutines do not wait for a handler
//     (conn.abort). A handler waiting on a backend is told its client
//     left from a peek at the socket once a second (waiton.go).
//
// Responses, written by the Server (response.go):
//   - RFC 9112 §6: a body without a declared length is held (up to 4 KiB)
//     to be given one, else sent chunked (to HTTP/1.0: ended by the
//     close); HEAD, 1xx, 204 and 304 carry no body (RFC 9110 §6.4.1).
//   - Field values the handler sets cannot break a line: CR and LF become
//     spaces.
//   - Writes go through the connection's 4 KiB writer; one that does not
//     fit beside what it holds (the head, a chunk-size line) goes out with
//     it in one vectored write, timed by the janitor as every write is.
//
// Requests, written upstream (reqwrite.go, conn.go):
//   - RFC 9112 §3: nothing goes into a request line unchecked, whatever
//     protocol the request arrived in: the method is a token, the target
//     is origin-form ("/…", or "*" for OPTIONS) with no byte at or below
//     space nor DEL, the host holds only host bytes (ErrRequestLine).
//   - RFC 9112 §3.2: Host comes first. The framing (Content-Length, or
//     chunked for an unknown length) is always the writer's own.
//   - A request body larger than 64 KiB or of unknown length is written by
//     a goroutine of its own, so a backend that answers early cannot
//     deadlock the exchange; a body cut short closes the connection, so
//     the backend never takes it as whole.
//   - The last bytes of a request (all of a small one) go out as the first
//     step of reading its answer (rawio.go): the read that would follow
//     the write and find nothing yet is saved. A connection whose request
//     did not go out is never pooled.
//
// Responses, read from upstream (head.go, body.go):
//   - RFC 9112 §4: the status line is HTTP/1.0 or HTTP/1.1, a three-digit
//     status from 100. Informational responses other than 101 are skipped
//     (RFC 9110 §15.2), at most 5 of them, and all heads of one response
//     together are at most 256 KiB, as Go's transports bound them.
//   - RFC 9112 §5: field names are tokens with no whitespace before the
//     colon, obs-fold is refused (§5.2: a proxy answers 502), values hold
//     no control characters; the head is at most 256 KiB and 512 fields.
//   - RFC 9112 §6.3: Transfer-Encoding other than "chunked" alone, and
//     conflicting or listed Content-Length values, are refused; with both
//     Transfer-Encoding and Content-Length the first wins and the
//     connection is not reused; a body without either ends at the close.
//     HEAD, 1xx, 204 and 304 answers have no body (§6.3 rules 1 and 2).
//   - RFC 9110 §7.6.1: hop-by-hop fields, and fields named in Connection,
//     are not passed on; nor is a Content-Length beside chunking.
//   - RFC 9112 §7.1: chunked bodies are decoded strictly (CRLF line ends,
//     sizes of at most 15 hex digits, CRLF after chunk data).
//   - RFC 9110 §6.5.1: trailer fields that frame the message, route it,
//     authenticate, control caching, describe the content or set cookies
//     are dropped (TrailerAllowed), as net/http refuses them.
//   - A body is passed on as it arrives: bytes received are never held
//     back while more are awaited (what was written is flushed before any
//     read that may wait). What the connection's 8 KiB reader holds is
//     written out of its buffer; the rest of a body of known length, of
//     one ended by the close, or of a chunk, when at least 8 KiB of it is
//     left, is read straight from the connection in reads of up to 64 KiB
//     into a pooled buffer, never past the body's end, and written on in
//     one write each. Memory: a response streaming a large body holds one
//     64 KiB buffer more, from its first large read until the copy ends or
//     a read brings less than 8 KiB (a trickle, an event stream); a
//     connection that is idle, or waits on a trickle, holds none.
//
// Connections to backends (pool.go, conn.go). One client holds at most
// MaxConnsPerClient of an endpoint's connections (MaxConns/4 by default).
// Requests whose body is still coming from their client, which make the
// backend wait at the client's pace, hold at most MaxUploadConns of them
// (MaxConns/2), a quarter of those per client, whatever the number of
// clients: the rest is left to requests that wait on the backend alone.
// HTTP/1.1 has no way to
// tell which request a response answers but their order (RFC 9112 §9.3),
// so a byte the server sends that no request asked for would shift every
// later answer on the connection to the wrong client. Hence:
//   - A connection carries one exchange at a time and goes back to the
//     pool only when the response was read whole, the request body was
//     written whole, and the server did not ask to close (Connection:
//     close, HTTP/1.0, a body ended by the close).
//   - Bytes left over after a complete response close it, whether in the
//     reader's buffer or still inside crypto/tls.
//   - An answer without a body (to HEAD, 204, 304) that announced one, by
//     a length or chunking, closes it: a server that gets this wrong sends
//     the body too, and it may arrive after any check.
//   - An idle connection is checked before every reuse, and once a second
//     while idle, with a non-blocking peek at its socket: one that is
//     readable (a late response, junk) or closed by the server is closed,
//     never handed out.
//
// What no HTTP/1.1 client can catch (nginx and Go's Transport included):
// stray bytes a server sends after the next request was written are taken
// as its answer. The checks above close that window everywhere but in the
// microseconds between a check and the write.
package http1
