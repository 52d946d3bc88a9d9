// Package pipe relays bytes both ways between a client connection and a
// backend connection once the proxy has opened the second: the core of
// TCPRoute, of TLSRoute passthrough and of a WebSocket after its 101,
// where the proxy sees the stream but does not interpret it.
//
// Run copies client to backend and backend to client concurrently, the
// first in a goroutine of its own, the second on the caller's, and
// returns when the pipe has ended, after that goroutine has exited and
// both connections are closed. Nothing Run starts outlives it but, for a
// moment, a watchdog check or a cancellation that began as it ended;
// they find the pipe closed and return. Between two plain sockets on
// Linux the bytes move through the kernel (see Through the kernel);
// otherwise each direction copies through a pooled 32 KiB buffer, held
// only while bytes move where its source allows (see Waiting without a
// buffer).
//
// # Preface
//
// Options.Preface is written to the backend before any byte read from the
// client: for passthrough, the ClientHello that package sni read to route
// the connection. Options.Reply is its mirror, written to the client
// before any byte from the backend: for a WebSocket, what the server sent
// right after its 101 answer. Each is counted in its direction's Result
// count, and its write is bounded like any other (see Idle).
//
// # Half-close
//
// When one side ends its stream (a read returns io.EOF), the pipe passes
// the end on: it calls CloseWrite on the other connection if it has one
// (*net.TCPConn, *net.UnixConn and *tls.Conn do), and the other direction
// goes on, so a client may send a request, shut down its write side, and
// still read the whole reply. The other direction may then go on for at
// most Options.HalfClose; past that the pipe ends. When the other
// connection has no CloseWrite, the pipe ends at the first end of stream.
// When both directions have ended the pipe ends, with the reason of the
// side that ended first.
//
// # Timeouts
//
// Options.Idle bounds silence: when no byte has moved either way for
// Idle, the pipe ends. It also bounds a peer that stops reading: a write
// of one chunk (a buffer of at most 32 KiB, or a preface) that has not
// completed after Idle, or on the kernel path a chunk's pump that has
// moved no byte for Idle, ends the pipe, even while the other direction still flows,
// so a full receive window cannot hold a pipe forever. The Gateway API
// has no idle timeout for TCPRoute or TLSRoute; the default is one hour,
// long enough for an SSH session or a pooled database connection left
// quiet, short enough that lost peers do not pile up.
//
// Options.HalfClose bounds the time from the first end of stream to the
// end of the other direction; the default is 30 seconds.
//
// A negative Idle or HalfClose disables that bound; zero takes the
// default.
//
// Cancelling the context passed to Run (the route was removed, the proxy
// is stopping) closes both connections at once, whatever they are doing.
//
// # What ends a pipe
//
// Result.End says why the pipe ended, as a string fit for a metrics label
// and an access log field:
//
//   - client_closed, backend_closed: the streams ended normally; the side
//     named ended first (or ended without CloseWrite on the other side).
//   - idle: nothing moved for Idle, or a write made no progress for Idle.
//   - half_close_timeout: one side ended and the other went on past
//     HalfClose.
//   - stopped: the context was cancelled.
//   - client_error, backend_error: reading from or writing to that side
//     failed (a reset, say); Result.Err holds the error. The other side is
//     closed too, never left half open.
//
// Errors that follow the end of the pipe, caused by its own closing of
// the connections, are not reported.
//
// # Idle tracking and the cost of it
//
// The pipe sets no deadlines: each direction stores the time of its last
// read and write in an atomic, and notes when a write begins and ends;
// the pipe's watchdog is one timer (time.AfterFunc), set to the nearest
// of the idle, stalled-write and half-close bounds and set again when it
// fires early, and it runs only when it fires: a quiet pipe has two
// goroutines, its two directions, and nothing that wakes. A chunk
// therefore costs two clock reads and four atomic stores (about 70 ns on
// a 2-CPU AMD EPYC VM, BenchmarkNoteActivity) where a read and a write
// deadline per chunk would cost about 300 ns (BenchmarkDeadlines).
//
// Allocations are per pipe, not per read: the pipe, its goroutine, its
// timer and the callbacks of the watchdog and of cancellation, 7 in all;
// on the kernel path the sockets' raw conns and the directions' state
// and callbacks, 12 in all; on the buffer path, a raw conn and a
// callback for each direction that waits without a buffer, 9 to 11
// (TestAllocsPerPipe); buffers and kernel pipes are reused.
//
// # Through the kernel
//
// When both conns are TCP or Unix stream sockets as the net package makes
// them (no TLS, no wrapper that could hold bytes it has read), on Linux,
// each direction moves its bytes with splice(2): from the source socket
// into a kernel pipe, as much as the socket holds up to the pipe's 256
// KiB, then from the pipe into the destination socket. The bytes never
// enter the process, and a chunk is two system calls where a buffer
// copies it in eight 32 KiB reads and writes. The pipe still sees each
// chunk, so the bounds above hold as they do on the buffer path: the
// chunk's drain is activity, its pump a write in progress. io.Copy
// between two *net.TCPConn splices too, but in one call until the
// stream ends, so a relay on it could bound neither silence nor a
// stalled write.
//
// A direction waiting for bytes holds no kernel pipe and no buffer: it
// takes a kernel pipe when bytes arrive and gives it back, empty, when
// its next read finds none. A waiting pipe on this path costs about 4
// KiB of heap against 68 KiB when its buffers are held
// (TestWaitingPipeHoldsNoBuffer), besides its two goroutines' stacks
// (about 5 KiB): that matters for thousands of quiet SSH or database
// sessions. Up to 32 empty kernel pipes are kept for reuse.
//
// A direction that cannot have a kernel pipe of that size (the process is
// out of file descriptors, or its user past the pipe-user-pages-soft
// quota, 64 MiB by default) copies the rest of its stream through a
// buffer; nothing is lost, since a chunk begins only with a kernel pipe
// in hand.
//
// On a 2-CPU AMD EPYC VM, on one CPU (BENCHMARKS.md, "TCPRoutes through
// the kernel"), the relay made about 8 system calls per MiB against about
// 64 through a buffer, and BenchmarkPipe's kernel path ran at about twice
// the buffer path's throughput.
//
// # Waiting without a buffer
//
// Where the kernel cannot splice (the proxy terminates the client's TLS,
// or re-encrypts to the backend, or one side is TLS as a wss WebSocket's
// backend is), a direction copies through a buffer, but on Linux it need
// not hold one while it waits: when its source is a plain socket, or TLS
// over one, a read that leaves the source empty is followed by a look at
// the socket (a one-byte recvfrom(2) with MSG_PEEK, inside the socket's
// raw read, so no byte can come in unseen between the look and the
// wait), and a direction that has to wait gives its buffer back to the
// pool; the next bytes take one. A TLS source may hold whole records its
// socket no longer shows (they came in with the last one): those are
// read first, with a read deadline in the past, which returns what
// crypto/tls holds or times out before it touches the socket. A read as
// long as the source can return (the buffer; for TLS, one record's 16
// KiB of plaintext) is not followed by a look, so a stream moving at
// speed reads on as before. A quiet connection then costs about the
// same system calls as a read that waited. Any other source (a wrapper
// that may keep bytes of its own) keeps its buffer while it lasts.
//
// So a quiet TLS stream holds no copy buffer: 100 waiting pipes between
// TLS conns took about 28 KiB each with their four TLS conns' state,
// against 94 KiB with the buffers held (TestWaitingTLSPipeHoldsNoBuffer).
package pipe
