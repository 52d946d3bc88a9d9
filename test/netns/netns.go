// Package netns runs a test binary inside a network namespace of its own,
// where a whole private range is local.
//
// EndpointSlices may not hold loopback addresses, so a test whose traffic
// goes to backends behind EndpointSlices needs backends on ordinary
// addresses, and a test must not touch the machine's network. Inside a
// new network namespace both hold: Range (10.244.0.0/16) is routed to the
// namespace's own loopback device, so a backend binds any address in it,
// the API server accepts it in an EndpointSlice, and nothing leaves the
// namespace (it has no other device). The API server, etcd and every
// server a test starts run inside the namespace too, on its loopback.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { netns.Run(func() int { return m.Run() }) }
package netns

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"syscall"
)

// Range is local inside the namespace.
var Range = netip.MustParsePrefix("10.244.0.0/16")

// envInside marks the re-executed test binary.
const envInside = "TUNNELGATE_TEST_NETNS"

// Run re-executes the test binary in a new network namespace and exits
// with its status; inside, it sets the namespace up and exits with run's
// status. It needs CAP_SYS_ADMIN (root), and fails the run clearly
// without it.
func Run(run func() int) {
	if os.Getenv(envInside) != "" {
		if err := setup(); err != nil {
			fmt.Fprintf(os.Stderr, "netns: setting up the test's network namespace: %v\n", err)
			os.Exit(1)
		}
		os.Exit(run())
	}
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Env = append(os.Environ(), envInside+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		os.Exit(0)
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	default:
		fmt.Fprintf(os.Stderr, "netns: cannot start the tests in a new network namespace (root is needed): %v\n", err)
		os.Exit(1)
	}
}

// Addr returns the n-th address of Range (n from 1), for a backend.
func Addr(n int) netip.Addr {
	a := Range.Addr().As4()
	a[2], a[3] = byte(n>>8), byte(n)
	return netip.AddrFrom4(a)
}

func setup() error {
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"route", "add", "local", Range.String(), "dev", "lo"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %v: %v: %s", args, err, out)
		}
	}
	return nil
}
