package hostile

// Slow clients against the upstream connection cap. The proxy opens at
// most Pool.MaxConns connections to a backend endpoint and answers 503 at
// once beyond that. Today a request takes its upstream connection as soon
// as its head is read and keeps it while the body trickles in, so a
// client that sends request heads and then stalls takes every connection
// of the endpoint in milliseconds, and everyone else gets 503: a
// slowloris on the backend side. The proxy will not take an upstream
// connection for a request whose body has not started, and lets one
// client (the peer address, or Cf-Connecting-Ip on a trusted origin
// listener) hold at most MaxConns/4 of an endpoint's connections.
//
// Each attack runs while a victim makes ordinary GETs, which must all get
// 200. The backend reads each body whole before it answers, so a stalled
// body holds its connection. An attacker whose bodies have not started
// is the victim's own address (the proxy must not hold a connection for
// it at all); one that sent a byte of each body comes from another
// address and, on trusted paths, with another Cf-Connecting-Ip (the proxy
// must cap it; since the request buffer, a body of this length is read
// whole first and holds no connection at all). Attackers from many
// addresses are pacedclients_test.go's.

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane"
)

const (
	slowMaxConns  = 16      // Pool.MaxConns: connections per endpoint
	slowAttackers = 40      // requests the attacker leaves hanging
	slowDeclared  = 100_000 // the Content-Length they announce
	victimGETs    = 10
	victimCF      = "203.0.113.7"  // the victim's Cf-Connecting-Ip
	attackerCF    = "203.0.113.66" // the attacker's, once it is another client
)

// slowAttacks are the attacks, each run on the paths of its protocol.
var slowAttacks = []struct {
	name string
	h2   bool
	// started sends one byte of each body; the attacker is then another
	// client than the victim.
	started bool
}{
	{"heads without body", false, false},
	{"one byte of body", false, true},
	{"streams without data", true, false},
	{"one byte of data per stream", true, true},
}

func TestSlowClientsCannotTakeThePool(t *testing.T) {
	be := newBackend(t)
	e := newEnv(t, be.addr, withOptions(func(o *dataplane.Options) { o.Pool.MaxConns = slowMaxConns }))
	e.each(func(t *testing.T, p path) {
		for _, a := range slowAttacks {
			if a.h2 != (p.proto != "h1") {
				continue
			}
			t.Run(a.name, func(t *testing.T) {
				src, cf := "127.0.0.1", victimCF
				if a.started {
					src, cf = attackerIP, attackerCF
				}
				var extra []hf
				if p.trusted {
					extra = []hf{{"cf-connecting-ip", cf}}
				}
				stats := e.proxy(p).Stats()
				seen := stats.Requests.Load() + slowAttackers

				var conns []net.Conn
				t.Cleanup(func() {
					for _, c := range conns {
						c.Close()
					}
					be.waitIdle(t) // the next attack starts with every connection free
				})
				if a.h2 {
					c := p.dialFrom(t, src)
					conns = append(conns, c)
					h := h2dial(t, c)
					fields := p.request("POST", "/x", p.addr, append(extra, hf{"content-length", strconv.Itoa(slowDeclared)})...)
					for range slowAttackers {
						s := h.open(fields, false)
						if a.started {
							h.data(s, []byte("x"), false)
						}
					}
				} else {
					head := "POST /x HTTP/1.1\r\nHost: " + p.addr + "\r\nContent-Length: " + strconv.Itoa(slowDeclared) + "\r\n"
					for _, f := range extra {
						head += f.name + ": " + f.value + "\r\n"
					}
					head += "\r\n"
					if a.started {
						head += "x"
					}
					for range slowAttackers {
						c := p.dialFrom(t, src)
						conns = append(conns, c)
						c.SetWriteDeadline(time.Now().Add(wait))
						if _, err := c.Write([]byte(head)); err != nil {
							t.Fatalf("attacker: %v", err)
						}
					}
				}
				// Let the proxy take in every attacking request (it counts
				// them as they reach the handler) before the victim comes.
				for deadline := time.Now().Add(time.Second); stats.Requests.Load() < seen && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}

				var failed []string
				for range victimGETs {
					req, _ := http.NewRequest("GET", p.url("/x"), nil)
					if p.trusted {
						req.Header.Set("Cf-Connecting-Ip", victimCF)
					}
					res, err := p.client.Do(req)
					if err != nil {
						failed = append(failed, err.Error())
						continue
					}
					res.Body.Close()
					if res.StatusCode != 200 {
						failed = append(failed, strconv.Itoa(res.StatusCode))
					}
				}
				if len(failed) > 0 {
					t.Errorf("with %d requests left hanging by an attacker (MaxConns %d), %d of the victim's %d GETs failed: %v",
						slowAttackers, slowMaxConns, len(failed), victimGETs, fmt.Sprint(failed))
				}
			})
		}
	})
}
