package kubeenv

import (
	"net"
	"strconv"
)

// dirPrefix names each Env's directory, <TMPDIR>/kubeenv-* (see
// testproc.OwnedTempDir).
const dirPrefix = "kubeenv-"

// loopback returns the host:port of a loopback port.
func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
