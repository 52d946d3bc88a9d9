package hostile

// Memory held by idle connections. The proxy's own HTTP/1.1 server keeps
// each connection's head buffer, header map and request strings from one
// request to the next, for speed. A header section may be up to 256 KiB,
// so a client that sends one big request per connection and then idles
// leaves all of that allocated: about 550 KiB a connection, half a GiB
// for a thousand connections nobody is using. What a connection keeps
// while idle must not depend on the size of the requests it has served:
// a thousand such connections may grow the live heap by less than 64 MiB.
//
// Everything runs in this process, so the client side must not hold big
// buffers itself: one shared request, answers read through a small buffer
// that is dropped, and only the net.Conn kept.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	idleConns   = 1000
	bigField    = 250 << 10 // one header field, under the 256 KiB head limit
	heapBudget  = 64 << 20  // growth of the live heap allowed for all of them
	connWorkers = 16        // connections being set up at once
)

func TestIdleConnectionMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 1,000 connections and sends 250 MB through the proxy")
	}
	// Descriptors in this process: each idle connection is two (client and
	// proxy side), each request being served two or four more.
	needFiles(t, 2*idleConns+8*connWorkers+256)

	be := newBackend(t)
	e := newEnv(t, be.addr)
	var p path
	for _, q := range e.paths {
		if q.name == "origin/h1" {
			p = q
		}
	}
	req := []byte("GET /x HTTP/1.1\r\nHost: " + p.addr + "\r\nX-Big: " + strings.Repeat("a", bigField) + "\r\n\r\n")

	held := make([]net.Conn, idleConns)
	t.Cleanup(func() {
		for _, c := range held {
			if c != nil {
				c.Close()
			}
		}
	})
	// One connection first, so the upstream pool and the proxy's lazily
	// built state are part of the baseline.
	if c, err := bigRequest(p.addr, req); err != nil {
		t.Fatal(err)
	} else {
		held[0] = c
	}
	before := liveHeap()

	start := time.Now()
	next := make(chan int, idleConns)
	for i := 1; i < idleConns; i++ {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for range connWorkers {
		wg.Go(func() {
			for i := range next {
				c, err := bigRequest(p.addr, req)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					continue
				}
				held[i] = c
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d connections failed, first: %v", len(errs), idleConns, errs[0])
	}
	growth := liveHeap() - before
	t.Logf("%d idle connections after a %d KiB header each: live heap grew %.1f MiB (%d KiB a connection); set up in %v",
		idleConns, bigField>>10, float64(growth)/(1<<20), growth/idleConns>>10, time.Since(start).Round(time.Millisecond))
	if growth >= heapBudget {
		t.Errorf("the live heap grew by %.1f MiB, want less than %d MiB", float64(growth)/(1<<20), heapBudget>>20)
	}
}

// bigRequest sends req on a new connection to addr, reads a 200 answer
// through a small buffer, and returns the connection, left open.
func bigRequest(addr string, req []byte) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(2 * wait))
	if _, err := c.Write(req); err != nil {
		c.Close()
		return nil, fmt.Errorf("writing the request: %w", err)
	}
	res, err := http.ReadResponse(bufio.NewReaderSize(c, 512), nil)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 {
		c.Close()
		return nil, fmt.Errorf("answer: %d, %v", res.StatusCode, err)
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// liveHeap is the heap in use after a full collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// needFiles makes sure this process may open n descriptors, raising its
// soft limit up to the hard one if needed (Go already does at start-up),
// and skips the test if it cannot.
func needFiles(t *testing.T, n uint64) {
	t.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("RLIMIT_NOFILE: %v", err)
	}
	if rl.Cur < n && rl.Max >= n {
		rl.Cur = n
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			t.Skipf("raising RLIMIT_NOFILE to %d: %v", n, err)
		}
	}
	if rl.Cur < n {
		t.Skipf("RLIMIT_NOFILE is %d (hard %d), this test needs %d: raise ulimit -n", rl.Cur, rl.Max, n)
	}
}
