//go:build linux

// This file counts the system calls the proxy makes per request.

package dataplane

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testnet"
)

// The proxy's read and write system calls per request, on a kept-alive
// client connection sending one GET after another to a backend that
// answers 100 bytes, 64 KiB, or 1 MiB, in one write. A 100-byte answer
// takes four, as nginx's: the client's request (one read: the server
// serves inside one long read of the client's socket, and waits without
// a read that would find nothing, inread.go), the request to the backend
// (a write, made as the first step of reading the answer, so no read
// finds nothing there either: rawio.go), the answer's read, and the
// write to the client. It took six before either, and five between the
// two. The peek that checks a pooled connection is quiet is a recvfrom,
// which these counters leave out (nginx makes a getsockopt there). The
// budget (2.1 reads) holds both sides to their one read. A 64 KiB answer
// takes five here: the client's request, the request to the backend (one
// write), the answer (the head's read and the rest of the body's, or a
// third read when it arrives in more pieces), and one writev of head and
// body to the client. Reading the body 8 KiB at a time and writing the
// head on its own, as the proxy did, takes 9 to 22 depending on how the
// answer arrives; a 1 MiB answer took over 250, and takes 16 reads and
// 16 writes of 64 KiB now, with room left for the socket buffers filling
// up.
//
// How they are counted: Linux counts the read and write calls (read,
// readv, write, writev, and those that found nothing to do) of a whole
// process in /proc/self/io (syscr, syscw). So the proxy runs in this
// process, exactly as the other tests run it (the origin listener's
// server over a TCP socket, rawIO and all), and the client and the
// backend run in another: this test binary again, started as
// TestSyscallPeer. Nothing is added to the proxy for counting, and no
// wrapper changes the path under test. What else this process does while
// it counts (the test's own two pipe calls per run, a runtime wake-up) is
// counted too, so the figures are an upper bound.
func TestProxySyscallsPerRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second process")
	}
	if _, err := readSyscallCounts(); err != nil {
		t.Skip("no /proc/self/io:", err)
	}
	peer := startSyscallPeer(t)
	proxy := serveOwn(t, tunnelgateHandler(t, peer.backend, false))
	peer.send("proxy " + proxy)
	for _, tc := range []struct {
		size       int
		reads, wrs float64 // budgets per request
	}{
		{100, 2.1, 2.5},
		{64 << 10, 4.0, 2.5},
		{1 << 20, 24, 24},
	} {
		const n = 200
		peer.run(tc.size, 50) // warm up: connections made, buffers grown
		before, _ := readSyscallCounts()
		peer.run(tc.size, n)
		after, _ := readSyscallCounts()
		r := float64(after.reads-before.reads) / n
		w := float64(after.writes-before.writes) / n
		t.Logf("%d-byte answer: %.2f reads and %.2f writes per request", tc.size, r, w)
		if r > tc.reads || w > tc.wrs {
			t.Errorf("%d-byte answer: %.2f reads and %.2f writes per request, budget %.1f and %.1f", tc.size, r, w, tc.reads, tc.wrs)
		}
	}
}

type syscallCounts struct{ reads, writes int64 }

func readSyscallCounts() (syscallCounts, error) {
	var c syscallCounts
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return c, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "syscr":
			c.reads = n
		case "syscw":
			c.writes = n
		}
	}
	if c.reads == 0 {
		return c, fmt.Errorf("no syscr in %q", b)
	}
	return c, nil
}

// syscallPeer is the other process: a backend, and a client of the
// proxy, driven by lines on its standard input.
type syscallPeer struct {
	t       *testing.T
	in      io.Writer
	out     *bufio.Scanner
	backend string
}

func startSyscallPeer(t *testing.T) *syscallPeer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSyscallPeer$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TUNNELGATE_SYSCALL_PEER=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
	})
	p := &syscallPeer{t: t, in: in, out: bufio.NewScanner(out)}
	p.backend = p.expect("backend ")
	return p
}

func (p *syscallPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// expect returns the rest of the peer's next line starting with prefix,
// skipping anything else it prints (the testing package's output).
func (p *syscallPeer) expect(prefix string) string {
	p.t.Helper()
	for p.out.Scan() {
		if rest, ok := strings.CutPrefix(p.out.Text(), "peer: "); ok {
			if v, ok := strings.CutPrefix(rest, prefix); ok {
				return v
			}
			p.t.Fatalf("peer: %s", rest)
		}
	}
	p.t.Fatalf("the peer ended: %v", p.out.Err())
	return ""
}

// run has the peer send n GETs for a size-byte answer, one after the
// other on its connection to the proxy.
func (p *syscallPeer) run(size, n int) {
	p.t.Helper()
	p.send(fmt.Sprintf("run %d %d", size, n))
	p.expect("done")
}

// TestSyscallPeer is the other process of TestProxySyscallsPerRequest
// (it does nothing unless started as it): a backend answering GET
// /SIZE with SIZE bytes, head and body in one write, and a client that
// sends the proxy what it is told to on standard input.
func TestSyscallPeer(t *testing.T) {
	if os.Getenv("TUNNELGATE_SYSCALL_PEER") == "" {
		t.Skip("run by TestProxySyscallsPerRequest")
	}
	fail := func(err error) {
		fmt.Printf("peer: error %v\n", err)
		os.Exit(1)
	}
	answers := map[string][]byte{}
	for _, size := range []int{100, 64 << 10, 1 << 20} {
		answers["/"+strconv.Itoa(size)] = sizedAnswer(size)
	}
	be := testnet.RawServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil || skipHead(br) != nil {
				return
			}
			target := strings.Fields(line)[1]
			if _, err := c.Write(answers[target]); err != nil {
				return
			}
		}
	})
	fmt.Printf("peer: backend %s\n", be)
	in := bufio.NewScanner(os.Stdin)
	var c net.Conn
	var br *bufio.Reader
	body := make([]byte, 1<<20)
	for in.Scan() {
		f := strings.Fields(in.Text())
		switch f[0] {
		case "proxy":
			var err error
			if c, err = net.Dial("tcp", f[1]); err != nil {
				fail(err)
			}
			br = bufio.NewReaderSize(c, 64<<10)
		case "run":
			size, n := f[1], 0
			n, _ = strconv.Atoi(f[2])
			req := []byte("GET /" + size + " HTTP/1.1\r\nHost: app.example.com\r\nUser-Agent: peer\r\nAccept: */*\r\n\r\n")
			for range n {
				if _, err := c.Write(req); err != nil {
					fail(err)
				}
				got, err := readResponse(br, body)
				if err != nil || strconv.Itoa(got) != size {
					fail(fmt.Errorf("answer of %d bytes, want %s: %v", got, size, err))
				}
			}
			fmt.Println("peer: done")
		}
	}
}
