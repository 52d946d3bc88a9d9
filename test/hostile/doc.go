// Package hostile is the proxy's hostile-input suite: tunnelgate's data
// plane, started as `tunnelgate proxy` starts it, attacked through real
// sockets on every listener by clients and backends that break the rules.
//
// Every test runs the same attack on each way in (see paths in
// harness_test.go): the origin listener with the proxy's own HTTP/1.1
// server and with net/http's, the TLS origin over HTTP/1.1 and HTTP/2, the
// plain listener over HTTP/1.1 and h2c, and a Gateway address over
// HTTP/1.1, h2c, and TLS with HTTP/1.1 and HTTP/2. What must hold, whatever
// the bytes:
//
//   - no client ever gets a response meant for another client: each gets
//     its own answer or an error;
//   - nothing a client sends over HTTP/2 is written into an HTTP/1.1
//     request line or header section unchecked;
//   - every wait has a deadline and every buffer a bound;
//   - a listener that does not trust its peer forwards none of the
//     headers Cloudflare's edge vouches for;
//   - a request that is not idempotent reaches a backend at most once.
//
// Everything here is test code; the package holds no other.
package hostile
