// Command slowclients runs issue 39's slow-client attack against a proxy
// and reports what the backend behind it saw: uploads from several client
// addresses that announce a body, send its first bytes, then trickle a
// byte at a time, while a victim makes ordinary requests.
//
// It serves the backend itself (-backend): an HTTP/1.1 server that reads
// every request body whole before it answers "ok", and counts its open
// connections and the requests whose body it is still waiting for (each
// holds one of the proxy's connections to it). Point the proxy under test
// (tunnelgate, nginx) at that address and the attack at the proxy
// (-target); bench/slowclients/run.sh does both for tunnelgate and nginx.
//
//	go run ./bench/slowclients -target 127.0.0.1:8080 -backend 127.0.0.1:18080
//
// It prints one line per measure, key=value, e.g.
//
//	attack: target=127.0.0.1:8080 addrs=4 per_addr=260 length=100000 first=1 every=10s duration=35s
//	uploads: sent=1040 held=1040 answered=0 statuses={}
//	backend: conns_peak=0 conns_end=0 waiting_peak=0 waiting_end=0
//	victims: sent=340 ok=340 rate=100.0%
//
// held is the uploads still unanswered when the attack ends; waiting is
// the backend's requests waiting on a body, the connections the proxy
// gave to slow clients; conns counts every connection open to the
// backend, idle ones kept alive for the victim included.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.target, "target", "", "the proxy to attack, host:port (HTTP/1.1)")
	flag.StringVar(&o.backend, "backend", "127.0.0.1:18080", "where to serve the backend the proxy forwards to")
	flag.StringVar(&o.host, "host", "bench", "the Host of every request")
	flag.IntVar(&o.addrs, "addrs", 4, "attacking client addresses (127.0.0.10 and up)")
	flag.IntVar(&o.perAddr, "per-addr", 260, "uploads from each address")
	flag.IntVar(&o.length, "length", 100_000, "the Content-Length each upload announces (0: chunked)")
	flag.IntVar(&o.first, "first", 1, "body bytes each upload sends at once")
	flag.DurationVar(&o.every, "every", 10*time.Second, "then one more byte every this long")
	flag.DurationVar(&o.duration, "duration", 35*time.Second, "how long the attack lasts")
	flag.DurationVar(&o.settle, "settle", 2*time.Second, "how long after the uploads began the victim starts (the proxy takes them in meanwhile)")
	flag.Float64Var(&o.victimRate, "victims", 10, "victim requests per second, GET and a 1,000-byte POST in turn, from 127.0.0.1")
	flag.BoolVar(&o.cf, "cf", false, "send each attacking address as Cf-Connecting-Ip too, as cloudflared would (tunnelgate's origin listener takes it for the client)")
	flag.BoolVar(&o.serveOnly, "serve-only", false, "only serve the backend, until killed (to check the proxy's route)")
	flag.Parse()
	if o.target == "" && !o.serveOnly {
		fmt.Fprintln(os.Stderr, "slowclients: -target is required")
		os.Exit(2)
	}
	if o.first > o.length && o.length > 0 {
		fmt.Fprintln(os.Stderr, "slowclients: -first is more than -length")
		os.Exit(2)
	}
	be, err := serveBackend(o.backend)
	if err != nil {
		log.Fatalf("slowclients: backend: %v", err)
	}
	if o.serveOnly {
		select {}
	}
	run(o, be)
}

type options struct {
	target, backend, host string
	addrs, perAddr        int
	length, first         int
	every, duration       time.Duration
	settle                time.Duration
	victimRate            float64
	cf, serveOnly         bool
}

// ---- The backend ----

// backend counts what the proxy does to it.
type backend struct {
	conns, waiting         atomic.Int64
	connsPeak, waitingPeak atomic.Int64
}

func peak(p *atomic.Int64, v int64) {
	for {
		old := p.Load()
		if v <= old || p.CompareAndSwap(old, v) {
			return
		}
	}
}

func serveBackend(addr string) (*backend, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	b := &backend{}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			peak(&b.waitingPeak, b.waiting.Add(1))
			_, err := io.Copy(io.Discard, r.Body)
			b.waiting.Add(-1)
			if err != nil {
				return
			}
			io.WriteString(w, "ok")
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				peak(&b.connsPeak, b.conns.Add(1))
			case http.StateClosed, http.StateHijacked:
				b.conns.Add(-1)
			}
		},
		ReadHeaderTimeout: time.Minute,
	}
	go srv.Serve(ln)
	return b, nil
}

// ---- The attack ----

// upload is one attacking request.
type upload struct {
	c      net.Conn
	status atomic.Int32 // the answer's status once one came
}

func run(o options, be *backend) {
	fmt.Printf("attack: target=%s addrs=%d per_addr=%d length=%d first=%d every=%v duration=%v cf=%v\n",
		o.target, o.addrs, o.perAddr, o.length, o.first, o.every, o.duration, o.cf)
	end := time.Now().Add(o.duration)
	var ups []*upload
	for i := range o.addrs {
		ip := fmt.Sprintf("127.0.0.%d", 10+i)
		head := "POST /upload HTTP/1.1\r\nHost: " + o.host + "\r\n"
		if o.cf {
			head += "Cf-Connecting-Ip: 203.0.113." + strconv.Itoa(10+i) + "\r\n"
		}
		if o.length > 0 {
			head += "Content-Length: " + strconv.Itoa(o.length) + "\r\n\r\n"
		} else {
			head += "Transfer-Encoding: chunked\r\n\r\n"
		}
		for range o.perAddr {
			d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
			c, err := d.Dial("tcp", o.target)
			if err != nil {
				log.Fatalf("slowclients: dial from %s: %v", ip, err)
			}
			u := &upload{c: c}
			ups = append(ups, u)
			go u.read()
			c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			c.Write([]byte(head))
			u.send(o, o.first) // an upload refused at once may be closed: its status says so
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { trickle(o, ups, stop) })
	// The victim starts once every upload has begun, and the proxy has
	// had the time to take them in: it comes when they hold what they
	// hold.
	time.Sleep(o.settle)
	ok, sent := victim(o, end)
	snapshot := func() (held int, statuses map[int]int) {
		statuses = map[int]int{}
		for _, u := range ups {
			if s := int(u.status.Load()); s != 0 {
				statuses[s]++
			} else {
				held++
			}
		}
		return held, statuses
	}
	time.Sleep(time.Until(end))
	held, statuses := snapshot()
	waitingEnd, connsEnd := be.waiting.Load(), be.conns.Load()
	close(stop)
	wg.Wait()
	for _, u := range ups {
		u.c.Close()
	}
	fmt.Printf("uploads: sent=%d held=%d answered=%d statuses=%s\n", len(ups), held, len(ups)-held, formatStatuses(statuses))
	fmt.Printf("backend: conns_peak=%d conns_end=%d waiting_peak=%d waiting_end=%d\n",
		be.connsPeak.Load(), connsEnd, be.waitingPeak.Load(), waitingEnd)
	rate := 0.0
	if sent > 0 {
		rate = 100 * float64(ok) / float64(sent)
	}
	fmt.Printf("victims: sent=%d ok=%d rate=%.1f%%\n", sent, ok, rate)
}

// send writes n more bytes of the upload's body: raw, or as a chunk.
func (u *upload) send(o options, n int) {
	b := strings.Repeat("x", n)
	if o.length == 0 {
		b = strconv.FormatInt(int64(n), 16) + "\r\n" + b + "\r\n"
	}
	u.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	u.c.Write([]byte(b))
}

// read notes the upload's answer, if one comes.
func (u *upload) read() {
	res, err := http.ReadResponse(bufio.NewReader(u.c), nil)
	if err != nil {
		return
	}
	u.status.Store(int32(res.StatusCode))
}

// trickle sends one more byte into every upload every o.every, within
// the announced length, until stop.
func trickle(o options, ups []*upload, stop <-chan struct{}) {
	t := time.NewTicker(o.every)
	defer t.Stop()
	sent := o.first
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if o.length > 0 && sent >= o.length-1 {
			continue // never finish the body
		}
		sent++
		for _, u := range ups {
			if u.status.Load() == 0 {
				u.send(o, 1)
			}
		}
	}
}

// victim sends o.victimRate requests a second until end, one at a time,
// and counts those answered 200.
func victim(o options, end time.Time) (ok, sent int) {
	tr := &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	every := time.Duration(float64(time.Second) / o.victimRate)
	for i := 0; time.Now().Add(every).Before(end); i++ {
		next := time.Now().Add(every)
		var body io.Reader
		method := "GET"
		if i%2 == 1 {
			method, body = "POST", strings.NewReader(strings.Repeat("v", 1000))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, method, "http://"+o.target+"/victim", body)
		req.Host = o.host
		if o.cf {
			req.Header.Set("Cf-Connecting-Ip", "203.0.113.200")
		}
		sent++
		if res, err := c.Do(req); err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				ok++
			}
		}
		cancel()
		time.Sleep(time.Until(next))
	}
	return ok, sent
}

func formatStatuses(m map[int]int) string {
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d:%d", s, m[s]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}
