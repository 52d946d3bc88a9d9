package hostile

// Slow clients from many addresses against a backend's connections (issue
// 39). The per-client cap (slowclients_test.go) keeps one client from
// taking more than a quarter of an endpoint's connections, so four
// addresses took them all: uploads trickling a byte at a time, or HTTP/2
// clients that never open their flow-control window to the answer, each
// held a backend connection for as long as they liked, and every other
// client got 503. The class is gone when no backend connection waits on a
// client:
//
//   - a request body within the request buffer is read whole before a
//     connection is taken: a trickling upload holds memory, and the
//     backend never sees it until it is whole;
//   - a longer one streams on a connection in the endpoint's upload share
//     (half of MaxConns, a quarter of that per client): uploads beyond it
//     get 503 at once, counted as the client's (upload_share), and the
//     other half of the pool is left to everyone else;
//   - a short answer is read whole and its connection given back before
//     the client is sent it: a client that reads nothing holds memory.
//
// Every attack comes from pacedAddrs addresses (with as many
// Cf-Connecting-Ip values on trusted paths) while a victim from 127.0.0.1
// makes GETs and small POSTs, which must all get 200.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/test/testnet"
)

const (
	pacedMaxConns = 16 // Pool.MaxConns: the upload share is 8, 2 per client
	pacedShare    = pacedMaxConns / 2
	pacedBuffer   = 64 << 10 // Options.RequestBuffer
	pacedAddrs    = 4        // attacking addresses
	pacedPerAddr  = 6        // requests each leaves hanging
	pacedAttacks  = pacedAddrs * pacedPerAddr
	victimPOSTs   = 5
	// trickleEvery is how often each attacker sends one more byte.
	trickleEvery = 200 * time.Millisecond
	// settle is how long an attack is given to reach the backend, where
	// it must not.
	settle = 300 * time.Millisecond
)

// pacedAttack is one shape of upload.
type pacedAttack struct {
	name string
	// length is the Content-Length announced; 0 sends none (chunked on
	// HTTP/1.1, no content-length on HTTP/2).
	length int
	// first is how many bytes of body go at once; then one at a time.
	first int
}

// Within the bound: the old limit for reading a body whole was 16 KiB of
// announced length, so these were streamed from their first byte.
var withinBound = []pacedAttack{
	{"announced 48 KiB, one byte at a time", 48 << 10, 1},
	{"unknown length, one byte at a time", 0, 1},
}

// Over the bound: the bound's worth at once, then a byte at a time.
var overBound = []pacedAttack{
	{"announced 256 KiB, 64 KiB then a byte at a time", 256 << 10, pacedBuffer + 1},
	{"unknown length, 64 KiB then a byte at a time", 0, pacedBuffer + 1},
}

// pacedEnv is an env whose endpoint takes pacedMaxConns connections and
// whose proxies read request bodies up to pacedBuffer whole.
func pacedEnv(t *testing.T, addr string) *env {
	return newEnv(t, addr, withOptions(func(o *dataplane.Options) {
		o.Pool.MaxConns = pacedMaxConns
		o.RequestBuffer = pacedBuffer
	}))
}

// attackerAddr is the i-th attacking address, and its Cf-Connecting-Ip.
func attackerAddr(i int) (ip, cf string) {
	return fmt.Sprintf("127.0.0.%d", 101+i), fmt.Sprintf("203.0.113.%d", 101+i)
}

// uploads are the attacking requests of one subtest: pacedAttacks of them
// on p, pacedPerAddr from each address, each with a's first bytes sent.
type uploads struct {
	a     pacedAttack
	conns []net.Conn  // HTTP/1.1: one per upload
	h2    []*h2conn   // HTTP/2: one per address
	reqs  []*h2stream // HTTP/2: the uploads, pacedPerAddr per connection in turn
	mu    sync.Mutex  // serialises writes to conns
	stop  chan struct{}
	done  sync.WaitGroup
}

// startUploads opens the uploads, then trickles a byte into each every
// trickleEvery until the test ends.
func startUploads(t *testing.T, p path, a pacedAttack) *uploads {
	u := &uploads{a: a, stop: make(chan struct{})}
	t.Cleanup(u.close)
	for i := range pacedAddrs {
		ip, cf := attackerAddr(i)
		var extra []hf
		if p.trusted {
			extra = []hf{{"cf-connecting-ip", cf}}
		}
		if p.proto == "h1" {
			head := "POST /upload HTTP/1.1\r\nHost: " + p.addr + "\r\n"
			if a.length > 0 {
				head += "Content-Length: " + strconv.Itoa(a.length) + "\r\n"
			} else {
				head += "Transfer-Encoding: chunked\r\n"
			}
			for _, f := range extra {
				head += f.name + ": " + f.value + "\r\n"
			}
			head += "\r\n"
			for range pacedPerAddr {
				c := p.dialFrom(t, ip)
				u.conns = append(u.conns, c)
				c.SetWriteDeadline(time.Now().Add(wait))
				if _, err := c.Write([]byte(head)); err != nil {
					t.Fatalf("attacker: %v", err)
				}
				u.sendH1(c, a.first) // a refused upload may find its connection closed
			}
			continue
		}
		h := h2dial(t, p.dialFrom(t, ip))
		u.h2 = append(u.h2, h)
		if a.length > 0 {
			extra = append(extra, hf{"content-length", strconv.Itoa(a.length)})
		}
		fields := p.request("POST", "/upload", p.addr, extra...)
		for range pacedPerAddr {
			s := h.open(fields, false)
			u.reqs = append(u.reqs, s)
			u.sendH2(h, s, a.first)
		}
	}
	u.done.Add(1)
	go u.trickle()
	return u
}

// sendH1 sends n bytes of body on c: raw, or as one chunk. Errors are
// the proxy's answer (a refused upload's connection is closed).
func (u *uploads) sendH1(c net.Conn, n int) {
	b := strings.Repeat("x", n)
	if u.a.length == 0 {
		b = strconv.FormatInt(int64(n), 16) + "\r\n" + b + "\r\n"
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	c.SetWriteDeadline(time.Now().Add(wait))
	c.Write([]byte(b))
}

// sendH2 sends n bytes of body on s, in frames of at most 16 KiB (the
// default SETTINGS_MAX_FRAME_SIZE).
func (u *uploads) sendH2(h *h2conn, s *h2stream, n int) {
	b := make([]byte, n)
	for len(b) > 0 {
		k := min(len(b), 16<<10)
		frame := b[:k]
		h.write(func() error { return h.fr.WriteData(s.id, false, frame) })
		b = b[k:]
	}
}

// trickle sends one byte into every upload every trickleEvery.
func (u *uploads) trickle() {
	defer u.done.Done()
	tick := time.NewTicker(trickleEvery)
	defer tick.Stop()
	for {
		select {
		case <-u.stop:
			return
		case <-tick.C:
		}
		for _, c := range u.conns {
			u.sendH1(c, 1)
		}
		for i, s := range u.reqs {
			u.sendH2(u.h2[i/pacedPerAddr], s, 1)
		}
	}
}

// close stops the trickle and closes every connection.
func (u *uploads) close() {
	select {
	case <-u.stop:
		return
	default:
	}
	close(u.stop)
	u.done.Wait()
	for _, c := range u.conns {
		c.Close()
	}
	for _, h := range u.h2 {
		h.nc.Close()
	}
}

// statuses are the answers the uploads got within a short wait (0: none
// yet), for uploads the proxy has answered already.
func (u *uploads) statuses() []int {
	out := make([]int, len(u.conns)+len(u.reqs))
	var wg sync.WaitGroup
	for i, c := range u.conns {
		wg.Go(func() {
			c.SetReadDeadline(time.Now().Add(settle))
			if res, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				out[i] = res.StatusCode
			}
		})
	}
	wg.Wait()
	timeout := time.NewTimer(settle)
	defer timeout.Stop()
	up := false // the time is up: only those already answered count
	for i, s := range u.reqs {
		if !up {
			select {
			case <-s.done:
			case <-timeout.C:
				up = true
			}
		}
		select {
		case <-s.done:
			out[len(u.conns)+i] = s.status
		default:
		}
	}
	return out
}

// victim makes victimGETs GETs and victimPOSTs small POSTs on p, one
// after another, and says what did not get 200.
func victim(p path) []string {
	var failed []string
	do := func(method, body string) {
		req, _ := http.NewRequest(method, p.url("/victim"), strings.NewReader(body))
		if body == "" {
			req.Body = nil
		}
		if p.trusted {
			req.Header.Set("Cf-Connecting-Ip", victimCF)
		}
		res, err := p.client.Do(req)
		if err != nil {
			failed = append(failed, method+": "+err.Error())
			return
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			failed = append(failed, method+": "+strconv.Itoa(res.StatusCode))
		}
	}
	for range victimGETs {
		do("GET", "")
	}
	for range victimPOSTs {
		do("POST", strings.Repeat("v", 1000))
	}
	return failed
}

// waitRequests waits, at most wait, until p's proxy has taken in n more
// requests than it had at seen.
func (e *env) waitRequests(p path, seen int64) {
	stats := e.proxy(p).Stats()
	for deadline := time.Now().Add(wait); stats.Requests.Load() < seen && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}

// clientErrors is tunnelgate_client_errors_total for reason on admin.
func clientErrors(t testing.TB, admin, reason string) float64 {
	return scrapeMetrics(t, admin)[`tunnelgate_client_errors_total{reason="`+reason+`"}`]
}

// Uploads within the request buffer never reach the backend while they
// trickle: no connection is opened for them, and the victim is served.
func TestPacedUploadsWithinTheBufferTakeNoConnection(t *testing.T) {
	t.Parallel()
	be := newBackend(t)
	e := pacedEnv(t, be.addr)
	e.each(func(t *testing.T, p path) {
		for _, a := range withinBound {
			t.Run(a.name, func(t *testing.T) {
				t.Cleanup(func() { be.waitIdle(t) })
				accepted, before := be.accepted.Load(), len(be.requests())
				seen := e.proxy(p).Stats().Requests.Load() + pacedAttacks
				startUploads(t, p, a)
				e.waitRequests(p, seen)
				time.Sleep(settle) // time for a proxy that streams to connect
				if n := be.accepted.Load() - accepted; n != 0 {
					t.Errorf("the backend accepted %d connections for %d uploads still arriving, want none", n, pacedAttacks)
				}
				if got := be.since(before); len(got) > 0 {
					t.Errorf("the backend got %d requests still arriving (%s), want none until they are whole", len(got), got[0].line)
				}
				if failed := victim(p); len(failed) > 0 {
					t.Errorf("with %d uploads trickling from %d addresses (MaxConns %d), %d of the victim's %d requests failed: %v",
						pacedAttacks, pacedAddrs, pacedMaxConns, len(failed), victimGETs+victimPOSTs, failed)
				}
				if n := be.busy.Load(); n != 0 {
					t.Errorf("the backend is waiting on %d bodies, want none", n)
				}
			})
		}
	})
}

// Uploads longer than the request buffer stream, and hold at most the
// upload share of the endpoint's connections: the attackers beyond it get
// 503 (upload_share) at once, and the victim is served from the rest.
func TestPacedUploadsOverTheBufferHoldOnlyTheUploadShare(t *testing.T) {
	t.Parallel()
	be := newBackend(t)
	e := pacedEnv(t, be.addr)
	e.each(func(t *testing.T, p path) {
		for _, a := range overBound {
			t.Run(a.name, func(t *testing.T) {
				t.Cleanup(func() { be.waitIdle(t) })
				admin := e.adminOf(p)
				refused := clientErrors(t, admin, "upload_share")
				u := startUploads(t, p, a)
				want := float64(pacedAttacks - pacedShare)
				for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					if clientErrors(t, admin, "upload_share")-refused >= want && be.busy.Load() == pacedShare {
						break
					}
				}
				if n := clientErrors(t, admin, "upload_share") - refused; n < want {
					t.Errorf("%v uploads refused with reason upload_share, want %v: %d uploads from %d addresses, a share of %d",
						n, want, pacedAttacks, pacedAddrs, pacedShare)
				}
				if n := be.busy.Load(); n > pacedShare {
					t.Errorf("the backend is waiting on %d bodies, more than the upload share of %d", n, pacedShare)
				}
				if failed := victim(p); len(failed) > 0 {
					t.Errorf("with %d uploads streaming from %d addresses (MaxConns %d), %d of the victim's %d requests failed: %v",
						pacedAttacks, pacedAddrs, pacedMaxConns, len(failed), victimGETs+victimPOSTs, failed)
				}
				if n := be.busy.Load(); n > pacedShare {
					t.Errorf("after the victim: the backend is waiting on %d bodies, more than the upload share of %d", n, pacedShare)
				}
				var got503, other []int
				for _, s := range u.statuses() {
					switch s {
					case 0:
					case http.StatusServiceUnavailable:
						got503 = append(got503, s)
					default:
						other = append(other, s)
					}
				}
				if len(got503) < int(want) || len(other) > 0 {
					t.Errorf("the uploads got %d answers 503 (want %v) and others %v (want none)", len(got503), want, other)
				}
			})
		}
	})
}

// zeroWindowBody is the answer a zero-window client asks for: larger than
// what net/http's HTTP/2 server holds for a stream (4 KiB), within what
// the proxy reads whole from a backend.
const zeroWindowBody = 32 << 10

// HTTP/2 clients that never open their flow-control window (their
// SETTINGS_INITIAL_WINDOW_SIZE is 0) ask for answers the server cannot
// send them: the backend's connections are given back all the same, and
// the victim is served.
func TestZeroWindowClientsHoldNoConnection(t *testing.T) {
	t.Parallel()
	be := newSizedBackend(t, zeroWindowBody)
	e := pacedEnv(t, be.addr)
	e.each(func(t *testing.T, p path) {
		answered := be.answered.Load()
		var extra []hf
		var conns []*h2conn
		var reqs []*h2stream
		for i := range pacedAddrs {
			ip, cf := attackerAddr(i)
			if p.trusted {
				extra = []hf{{"cf-connecting-ip", cf}}
			}
			h := h2dial(t, p.dialFrom(t, ip), http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
			conns = append(conns, h)
			for range pacedPerAddr {
				reqs = append(reqs, h.open(p.request("GET", "/big", p.addr, extra...), true))
			}
		}
		t.Cleanup(func() {
			for _, h := range conns {
				h.nc.Close()
			}
		})
		// Every request gets its answer's head (its body cannot come):
		// 200, or 503 for those beyond their client's connections while
		// the others were being answered.
		heads := func() (n int) {
			for i, s := range reqs {
				h := conns[i/pacedPerAddr]
				h.mu.Lock()
				if s.status != 0 || s.err != nil {
					n++
				}
				h.mu.Unlock()
			}
			return n
		}
		for deadline := time.Now().Add(wait); heads() < pacedAttacks && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if n := heads(); n < pacedAttacks {
			t.Fatalf("%d of the %d requests got an answer", n, pacedAttacks)
		}
		if n := be.answered.Load() - answered; n < pacedAddrs {
			t.Fatalf("the backend answered %d of the %d requests", n, pacedAttacks)
		}
		// The answers are whole at the proxy: every connection goes back.
		var active float64
		for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if active = activeConns(t, e.adminOf(p)); active == 0 {
				break
			}
		}
		if active != 0 {
			t.Errorf("%v backend connections busy with %d answers the clients do not read, want none", active, pacedAttacks)
		}
		if failed := victim(p); len(failed) > 0 {
			t.Errorf("with %d answers unread by zero-window clients from %d addresses (MaxConns %d), %d of the victim's %d requests failed: %v",
				pacedAttacks, pacedAddrs, pacedMaxConns, len(failed), victimGETs+victimPOSTs, failed)
		}
	}, onH2)
}

// activeConns is tunnelgate_upstream_connections{state="active"} for the
// backend cluster on admin: connections busy or being dialled.
func activeConns(t testing.TB, admin string) float64 {
	return scrapeMetrics(t, admin)[`tunnelgate_upstream_connections{cluster="backend",state="active"}`]
}

// sizedBackend answers GET /big with a body of its size, and anything
// else with "ok", reading request bodies whole first.
type sizedBackend struct {
	addr     string
	answered atomic.Int64 // answers to /big written whole
}

func newSizedBackend(t testing.TB, size int) *sizedBackend {
	b := &sizedBackend{}
	big := "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(size) + "\r\n\r\n" + strings.Repeat("b", size)
	b.addr = testnet.RawServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			c.SetReadDeadline(time.Now().Add(backendIdle))
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if _, err := io.Copy(io.Discard, req.Body); err != nil {
				return
			}
			answer := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
			if req.URL.Path == "/big" {
				answer = big
			}
			c.SetWriteDeadline(time.Now().Add(wait))
			if _, err := io.WriteString(c, answer); err != nil {
				return
			}
			if req.URL.Path == "/big" {
				b.answered.Add(1)
			}
		}
	})
	return b
}
