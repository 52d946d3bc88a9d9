// This file implements the request buffers and their memory budget.

package dataplane

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// Bodies held in memory, so that a backend connection never waits on a
// client. A request body is read whole before a connection is taken when
// it ends within Options.RequestBuffer (body.go), and a response whose
// length is at most responseBuffer is read whole and its connection
// given back before the client is sent it (forward_h1.go). Either way a
// slow client, or one that sends nothing or reads nothing, holds memory
// instead of a connection, and that memory is bounded: every buffer is
// charged against one proxy-wide budget (Options.BufferMemory) as it
// grows. A body that cannot get more is neither refused nor kept waiting:
// it is streamed from there on, as every body was before, under the
// connection caps (http1.PoolSettings).
//
// Buffers come in power-of-two sizes from minBuffer up, each size from a
// pool of its own, so that the common small body costs no allocation.
//
// Not charged here: the 64 KiB buffer through which http1 streams an
// answer longer than responseBuffer (http1's bigRead says why).

// Defaults of Options.RequestBuffer and Options.BufferMemory.
const (
	// DefaultRequestBuffer covers form posts and API bodies (nginx's
	// client_max_body_size refuses anything larger by default) while a
	// file upload, which is larger, streams; it is also what net/http's
	// HTTP/2 server lets a client send on a stream before the proxy
	// reads any (its per-stream upload buffer).
	DefaultRequestBuffer = 1 << 20
	// DefaultBufferMemory is 64 bodies at DefaultRequestBuffer at once,
	// or thousands of the usual few kilobytes: half the chart's proxy
	// memory request (128 MiB) and a sixteenth of its limit (1 GiB),
	// which leaves the rest to the config and the connections.
	DefaultBufferMemory = 64 << 20
)

// responseBuffer is the longest response, by its Content-Length, read
// whole from an HTTP/1.1 backend before the client gets it: API answers
// and most pages. A longer one (a download), or one without a length
// (chunked, an event stream), streams as it comes, under the write
// timeout and the per-client cap: reading it whole would hold its first
// byte back from the client, and a slow client would hold that much
// more memory.
const responseBuffer = 64 << 10

// minBuffer is the smallest buffer: what a body is first read into, and
// what a client that announces a body and sends a byte of it costs.
const minBuffer = 4 << 10

// buffers hands out the memory bodies are held in, within the budget.
type buffers struct {
	limit int64 // bytes of all buffers handed out together
	used  atomic.Int64
	// sizes[i] pools the buffers of minBuffer<<i bytes.
	sizes []sync.Pool
}

// newBuffers returns buffers within limit bytes in all, the largest of at
// least largest bytes.
func newBuffers(limit int64, largest int) *buffers {
	return &buffers{limit: limit, sizes: make([]sync.Pool, sizeClass(largest)+1)}
}

// sizeClass is the index of the smallest size that holds n bytes.
func sizeClass(n int) int {
	if n <= minBuffer {
		return 0
	}
	return bits.Len(uint(n-1)) - bits.Len(uint(minBuffer-1))
}

// bodyBuf is one buffer: b is the whole of it (its length is its size,
// charged while it is out). It goes back when the last holder releases it.
type bodyBuf struct {
	b     []byte
	class int
	owner *buffers
	refs  atomic.Int32
	// loose says a holder gave b to code that may read it after its
	// release (net/http's HTTP/2 transport writes a request body on a
	// goroutine of its own): b is left to the garbage collector instead
	// of being handed out again.
	loose atomic.Bool
}

// get returns a buffer of at least n bytes (at most the largest size),
// charged against the budget, or nil when the budget has no room for it.
func (bs *buffers) get(n int) *bodyBuf {
	class := min(sizeClass(n), len(bs.sizes)-1)
	size := int64(minBuffer) << class
	if !bs.charge(size) {
		return nil
	}
	buf, _ := bs.sizes[class].Get().(*bodyBuf)
	if buf == nil {
		buf = &bodyBuf{b: make([]byte, size), class: class, owner: bs}
	}
	buf.refs.Store(1)
	return buf
}

// grow returns a buffer of at least n bytes holding the first keep bytes
// of buf, and releases buf; nil, with buf untouched, when the budget has
// no room for the larger one.
func (bs *buffers) grow(buf *bodyBuf, keep, n int) *bodyBuf {
	next := bs.get(n)
	if next == nil {
		return nil
	}
	copy(next.b, buf.b[:keep])
	buf.release()
	return next
}

// charge takes n bytes of the budget, if they are free.
func (bs *buffers) charge(n int64) bool {
	for {
		used := bs.used.Load()
		if used+n > bs.limit {
			return false
		}
		if bs.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// inUse is the memory handed out, for metrics and tests.
func (bs *buffers) inUse() int64 { return bs.used.Load() }

// hold adds a holder: it, too, must release the buffer.
func (b *bodyBuf) hold() { b.refs.Add(1) }

// loosen marks the buffer as given to code that may read it after its
// release (see bodyBuf.loose).
func (b *bodyBuf) loosen() { b.loose.Store(true) }

// release drops a hold; the last one gives the memory back to the
// budget and the buffer to its pool. A nil buffer is none.
func (b *bodyBuf) release() {
	if b == nil || b.refs.Add(-1) != 0 {
		return
	}
	bs := b.owner
	bs.used.Add(-int64(len(b.b)))
	if !b.loose.Load() {
		bs.sizes[b.class].Put(b)
	}
}
