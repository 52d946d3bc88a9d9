package kubeenv

import (
	"net"
	"strconv"
)

// freePort asks the kernel for an unused loopback port. Between closing it
// here and the child binding it another process may take it; Start notices
// the child's "address already in use" and retries with new ports.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// loopback returns the host:port of a loopback port.
func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
