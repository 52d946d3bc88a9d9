// Package pipe relays bytes both ways between a client connection and a
// backend connection once the proxy has opened the second: the core of
// TCPRoute and of TLSRoute passthrough, where the proxy sees the stream
// but does not interpret it.
//
// Run copies client to backend and backend to client concurrently, each
// direction in its own goroutine with a pooled 32 KiB buffer, and returns
// when the pipe has ended, after both goroutines have exited and both
// connections are closed. Nothing Run starts outlives it.
//
// # Preface
//
// Options.Preface is written to the backend before any byte read from the
// client: for passthrough, the ClientHello that package sni read to route
// the connection. It is counted in Result.ClientToBackend, and its write
// is bounded like any other (see Idle).
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
// of one buffer (at most 32 KiB, or the preface) that has not completed
// after Idle ends the pipe, even while the other direction still flows,
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
// Run's own goroutine is the pipe's one watchdog, with one timer that it
// sets to the nearest of the idle, stalled-write and half-close bounds
// and re-arms when it fires early. A chunk of up to 32 KiB therefore
// costs two clock reads and four atomic stores (about 70 ns on a 2-CPU
// AMD EPYC VM, BenchmarkNoteActivity) where a read and a write deadline
// per chunk would cost about 300 ns (BenchmarkDeadlines).
//
// Allocations are per pipe, not per read: the pipe, its two goroutines,
// its timer and channel, 7 in all (TestAllocsPerPipe); the buffers come
// from a pool.
//
// # No splice
//
// io.Copy between two *net.TCPConn uses splice(2) on Linux, which moves
// the bytes in the kernel: the pipe would not see them until a whole copy
// had ended, so it could tell neither activity nor a stalled write, and
// deadlines per chunk do not fit that path. The package copies through
// its own buffer instead. On loopback, 256 MiB in 1 MiB writes (median of
// 10 runs, same VM) went at 2.4 GB/s through Run (BenchmarkPipe), 2.5
// GB/s through an io.Copy that splices (BenchmarkSplice) and 4.5 GB/s
// over one connection with no relay (BenchmarkDirect): the bounds cost
// no throughput worth the trade.
package pipe
