// This file implements the pipe: its options and result, the two copying
// directions and the watchdog that ends it.

package pipe

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Default bounds, taken when an Options field is zero.
const (
	DefaultIdle      = time.Hour
	DefaultHalfClose = 30 * time.Second
)

// Options are a pipe's bounds and the bytes read before it began. The
// zero value is usable.
type Options struct {
	// Idle ends the pipe when no byte has moved either way for this
	// long, or when one write has made no progress for this long. Zero
	// means DefaultIdle, negative means no bound.
	Idle time.Duration
	// HalfClose ends the pipe when one direction has ended and the other
	// is still going on after this long. Zero means DefaultHalfClose,
	// negative means no bound but Idle.
	HalfClose time.Duration
	// Preface is written to the backend before any byte from the client:
	// bytes read from the client before the pipe began.
	Preface []byte
	// Reply is written to the client before any byte from the backend:
	// bytes read from the backend before the pipe began (a WebSocket
	// server's first frames, read with its 101 answer).
	Reply []byte
}

// Reason says why a pipe ended. Its values are fit for a metrics label.
type Reason string

// The reasons a pipe ends; see the package doc.
const (
	ClientClosed     Reason = "client_closed"
	BackendClosed    Reason = "backend_closed"
	Idle             Reason = "idle"
	HalfCloseTimeout Reason = "half_close_timeout"
	Stopped          Reason = "stopped"
	ClientError      Reason = "client_error"
	BackendError     Reason = "backend_error"
)

// Result is what a pipe did.
type Result struct {
	// ClientToBackend and BackendToClient count the bytes written to
	// each side, Preface and Reply included.
	ClientToBackend, BackendToClient int64
	// Duration is the time Run took.
	Duration time.Duration
	// End is why the pipe ended.
	End Reason
	// Err is the I/O error that ended the pipe, for ClientError and
	// BackendError; nil otherwise.
	Err error
}

type closeWriter interface{ CloseWrite() error }

// The two directions, indexes into pipe's per-direction fields.
const (
	up   = 0 // client to backend
	down = 1 // backend to client
)

type pipe struct {
	conns [2]net.Conn // client, backend
	// kernel is the path through the kernel when it can splice between
	// the conns (splice_linux.go), else nil.
	kernel *kernelPath
	// buffered is each direction's state on the buffer path (buffer.go).
	buffered [2]bufferCopy
	start    time.Time
	idle     time.Duration
	half     time.Duration

	// Times are nanoseconds since start. last is the last byte moved;
	// writing[d] is 1+ the time direction d's pending write began, or 0;
	// halfAt is 1+ the time the first direction ended, or 0.
	last    atomic.Int64
	writing [2]atomic.Int64
	halfAt  atomic.Int64

	n  [2]int64 // bytes written, each direction's own
	wg sync.WaitGroup

	// The watchdog (check): its timer, and recheck, set when a bound may
	// have moved since it last looked (poke). watchMu makes one check
	// run at a time; watchOff, under it, ends the checks once Run is
	// done.
	timer    *time.Timer
	recheck  atomic.Bool
	watchMu  sync.Mutex
	watchOff bool

	mu     sync.Mutex
	closed bool
	first  Reason // the side whose stream ended first, if one did
	left   int    // directions still running
	end    Reason
	err    error
}

// Run relays bytes between client and backend until the pipe ends (see
// the package doc), closes both connections, and says what it did. It
// clears any deadline either connection had. It copies backend to
// client itself, and returns only when the goroutine that copies client
// to backend has exited.
func Run(ctx context.Context, client, backend net.Conn, opts Options) Result {
	p := &pipe{
		conns: [2]net.Conn{client, backend},
		start: time.Now(),
		idle:  opts.Idle,
		half:  opts.HalfClose,
		left:  2,
	}
	if p.idle == 0 {
		p.idle = DefaultIdle
	}
	if p.half == 0 {
		p.half = DefaultHalfClose
	}
	client.SetDeadline(time.Time{})
	backend.SetDeadline(time.Time{})
	p.kernel = newKernelPath(p)
	p.timer = time.AfterFunc(time.Hour, p.check)
	p.check() // sets the timer to the first bound
	stopCtx := context.AfterFunc(ctx, func() { p.stop(Stopped) })
	p.wg.Add(2)
	go p.copy(up, opts.Preface)
	p.copy(down, opts.Reply)
	p.wg.Wait()
	stopCtx()
	p.endWatch()
	return Result{
		ClientToBackend: p.n[up],
		BackendToClient: p.n[down],
		Duration:        time.Since(p.start),
		End:             p.end,
		Err:             p.err,
	}
}

// now is the time since the pipe started, in nanoseconds.
func (p *pipe) now() int64 { return int64(time.Since(p.start)) }

// poke has the watchdog look again at once: a bound moved. It takes no
// lock (the pipe's may be held).
func (p *pipe) poke() {
	p.recheck.Store(true)
	p.timer.Reset(0)
}

// copy moves bytes in direction d until its source ends or fails or the
// pipe closes: through the kernel when it can, else through a buffer
// (buffer.go).
func (p *pipe) copy(d int, preface []byte) {
	defer p.wg.Done()
	if len(preface) > 0 && !p.write(d, p.conns[1-d], preface) {
		return
	}
	if p.kernel != nil && p.kernel.copy(d) {
		return
	}
	p.copyBuffered(d)
}

// write writes b to dst for direction d, counting and noting progress.
// It reports whether the direction may go on.
func (p *pipe) write(d int, dst net.Conn, b []byte) bool {
	p.writeStarts(d)
	nw, err := dst.Write(b)
	p.writeEnds(d, nw > 0)
	p.n[d] += int64(nw)
	if err == nil && nw < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		p.fail(side(d, false), err)
		return false
	}
	return true
}

// writeStarts notes that direction d has bytes in hand (activity) and is
// writing them from now on: the idle and stalled-write bounds run from
// here (watch).
func (p *pipe) writeStarts(d int) {
	t := p.now()
	p.last.Store(t)
	p.writing[d].Store(1 + t)
}

// writeEnds notes the end of direction d's write; moved says it wrote a
// byte, which is activity.
func (p *pipe) writeEnds(d int, moved bool) {
	t := p.now()
	p.writing[d].Store(0)
	if moved {
		p.last.Store(t)
	}
}

// side is the reason for a failure of direction d: of its source when
// reading, else of its destination.
func side(d int, reading bool) Reason {
	if (d == up) == reading {
		return ClientError
	}
	return BackendError
}

// ended handles the end of direction d's source stream: half-close dst,
// or end the pipe when that cannot be done or both directions are done.
func (p *pipe) ended(d int, dst net.Conn) {
	r := ClientClosed
	if d == down {
		r = BackendClosed
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.left--
	if p.first == "" {
		p.first = r
	}
	cw, ok := dst.(closeWriter)
	if p.left == 0 || !ok {
		p.closeLocked(p.first, nil)
		return
	}
	if err := cw.CloseWrite(); err != nil {
		p.closeLocked(side(d, false), err)
		return
	}
	p.halfAt.Store(1 + p.now())
	p.poke()
}

// fail ends the pipe for an I/O error, unless it has ended already (the
// error is then likely its own closing).
func (p *pipe) fail(r Reason, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closeLocked(r, err)
	}
}

// stop ends the pipe for r unless it has ended already.
func (p *pipe) stop(r Reason) {
	p.fail(r, nil)
}

func (p *pipe) closeLocked(r Reason, err error) {
	p.closed, p.end, p.err = true, r, err
	p.conns[0].Close()
	p.conns[1].Close()
}

func (p *pipe) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// check is the pipe's watchdog, run by its timer: it ends the pipe when
// a bound has passed, else sets the timer to the nearest one. When a
// poke came while it looked, it looks again: the timer may have been
// set from what was due before the poke.
func (p *pipe) check() {
	p.watchMu.Lock()
	defer p.watchMu.Unlock()
	for !p.watchOff {
		p.recheck.Store(false)
		r, wait := p.due()
		if r != "" {
			p.stop(r)
		}
		if p.isClosed() {
			return
		}
		if wait >= 0 {
			p.timer.Reset(wait)
		} else {
			p.timer.Stop()
		}
		if !p.recheck.Load() {
			return
		}
	}
}

// endWatch stops the watchdog once the pipe is done: a check the timer
// has begun meanwhile returns at once.
func (p *pipe) endWatch() {
	p.watchMu.Lock()
	p.watchOff = true
	p.watchMu.Unlock()
	p.timer.Stop()
}

// due says which bound has passed, if one has, and otherwise how long
// until the nearest one (negative for none).
func (p *pipe) due() (Reason, time.Duration) {
	now := p.now()
	next := int64(-1)
	check := func(since int64, bound time.Duration) bool {
		at := since + int64(bound)
		if at <= now {
			return true
		}
		if next < 0 || at-now < next {
			next = at - now
		}
		return false
	}
	if p.idle > 0 {
		if check(p.last.Load(), p.idle) {
			return Idle, 0
		}
		for d := range p.writing {
			if w := p.writing[d].Load(); w != 0 && check(w-1, p.idle) {
				return Idle, 0
			}
		}
	}
	if h := p.halfAt.Load(); h != 0 && p.half > 0 && check(h-1, p.half) {
		return HalfCloseTimeout, 0
	}
	return "", time.Duration(next)
}
