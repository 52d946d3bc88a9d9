package kubelet

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// podNetwork is the bridge the Pods hang off and their address allocator.
type podNetwork struct {
	bridge  string
	prefix  netip.Prefix
	gateway netip.Addr // the bridge's address, the Pods' default route

	mu   sync.Mutex
	next int // the next Pod address is prefix + 256 + next
}

func newPodNetwork(bridge string, prefix netip.Prefix) (*podNetwork, error) {
	prefix = prefix.Masked()
	if !prefix.Addr().Is4() || prefix.Bits() > 22 {
		return nil, fmt.Errorf("kubelet: PodCIDR %s: want an IPv4 prefix of /22 or wider", prefix)
	}
	n := &podNetwork{bridge: bridge, prefix: prefix, gateway: prefix.Addr().Next()}
	for _, args := range [][]string{
		{"link", "add", bridge, "type", "bridge"},
		{"addr", "add", netip.PrefixFrom(n.gateway, prefix.Bits()).String(), "dev", bridge},
		{"link", "set", bridge, "up"},
	} {
		if err := ip(args...); err != nil {
			n.close()
			return nil, err
		}
	}
	return n, nil
}

// close removes the bridge; the Pods' veth ends go with their namespaces.
func (n *podNetwork) close() { _ = ip("link", "del", n.bridge) }

// allocate returns a fresh Pod address and a name for its veth end on the
// bridge. Addresses are not reused: a test runs far fewer Pods than a /22
// holds.
func (n *podNetwork) allocate() (netip.Addr, string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	a := n.prefix.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v += 256 + uint32(n.next)
	addr := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	if !n.prefix.Contains(addr) || addr == netip.PrefixFrom(addr, n.prefix.Bits()).Masked().Addr() {
		return netip.Addr{}, "", fmt.Errorf("kubelet: PodCIDR %s is exhausted", n.prefix)
	}
	n.next++
	return addr, "tgv" + strconv.Itoa(n.next), nil
}

// sandbox is a Pod's network namespace, held open by a file descriptor.
//
// A namespace belongs to an OS thread, and a child process starts in its
// creator's, so work inside the sandbox (creating it, starting a
// container) runs on a goroutine locked to its thread, which enters the
// namespace and leaves it again before it unlocks. The thread must live
// on: a child's Pdeathsig fires when the thread that started it ends, and
// a locked goroutine that returns without unlocking ends its thread,
// killing whatever that thread started before (kubeenv's API server,
// say).
type sandbox struct {
	addr netip.Addr
	ns   *os.File
}

// newSandbox creates the namespace, with lo up and eth0 at addr routed via
// the bridge.
func (n *podNetwork) newSandbox() (*sandbox, error) {
	addr, veth, err := n.allocate()
	if err != nil {
		return nil, err
	}
	s := &sandbox{addr: addr}
	err = onThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("kubelet: new network namespace: %w", err)
		}
		if s.ns, err = os.Open("/proc/thread-self/ns/net"); err != nil {
			return err
		}
		// Created from inside, so eth0 lands here and the peer in the
		// namespace of the test process (its main thread's, named by pid).
		for _, args := range [][]string{
			{"link", "set", "lo", "up"},
			{"link", "add", "eth0", "type", "veth", "peer", "name", veth, "netns", strconv.Itoa(os.Getpid())},
			{"addr", "add", netip.PrefixFrom(addr, n.prefix.Bits()).String(), "dev", "eth0"},
			{"link", "set", "eth0", "up"},
			{"route", "add", "default", "via", n.gateway.String()},
		} {
			if err := ip(args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = ip("link", "set", veth, "master", n.bridge, "up")
	}
	// Both ends up is not yet a link that carries packets: the kernel
	// attaches a device's queue when it marks the device's operational
	// state, up to a second later (linkwatch), and drops what is sent
	// before. A Pod's first packets, the ARP request for its gateway
	// among them, must not go into that gap.
	if err == nil {
		err = waitOperUp(veth)
	}
	if err == nil {
		err = onThread(func() error {
			if err := unix.Setns(int(s.ns.Fd()), unix.CLONE_NEWNET); err != nil {
				return fmt.Errorf("kubelet: entering the pod's network namespace: %w", err)
			}
			return waitOperUp("eth0")
		})
	}
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// waitOperUp waits, for up to 5 s, until the device dev of the calling
// thread's network namespace is operationally up.
func waitOperUp(dev string) error {
	var out []byte
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		var err error
		if out, err = exec.Command("ip", "-o", "link", "show", "dev", dev).CombinedOutput(); err != nil {
			return fmt.Errorf("ip link show dev %s: %v: %s", dev, err, out)
		}
		if strings.Contains(string(out), " state UP ") {
			return nil
		}
	}
	return fmt.Errorf("kubelet: %s not up after 5 s: %s", dev, out)
}

// start starts cmd inside the sandbox.
func (s *sandbox) start(cmd *exec.Cmd) error {
	return onThread(func() error {
		if err := unix.Setns(int(s.ns.Fd()), unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("kubelet: entering the pod's network namespace: %w", err)
		}
		return cmd.Start()
	})
}

// close lets the namespace go, with its veth pair, once no process is left
// in it.
func (s *sandbox) close() {
	if s.ns != nil {
		s.ns.Close()
	}
}

// onThread runs f on a locked OS thread and then returns the thread to the
// test process's network namespace. If that fails, the thread stays locked
// and ends with the goroutine, rather than run other goroutines in the
// wrong namespace.
func onThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return
		}
		defer home.Close()
		err = f()
		if back := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); back != nil {
			errc <- errors.Join(err, fmt.Errorf("kubelet: returning to the test's network namespace: %w", back))
			return
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}

// ip runs the ip(8) command.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %v: %v: %s", args, err, out)
	}
	return nil
}
