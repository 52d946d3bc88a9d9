// This file holds the ports a dedicated plane's Pods hold themselves,
// which its Gateway's listeners cannot have.

package v1alpha1

import (
	"fmt"

	"github.com/tunnelgate/tunnelgate/api/origin"
)

// The ports a Dedicated plane's Pods listen on themselves (ctrl/provision
// renders them). A plane that serves in the cluster serves its Gateway's
// listeners on their own ports in the same Pods, so a listener cannot have
// one of these while the Pods hold it: translate refuses it (PortHolder).
const (
	// PlaneOriginPort is the plain origin listener's, on loopback, which
	// the plane tunnel's cloudflared reaches; not the chart's 8080, which
	// such a plane leaves to its Gateway's listeners.
	PlaneOriginPort = 8442
	// PlaneOriginTLSPort is the TLS origin listener's, on loopback.
	PlaneOriginTLSPort = DefaultOriginTLSPort
	// PlaneRelayPort is the relay listener's, on the Pods and their
	// Service, which the shared proxies reach.
	PlaneRelayPort = 8443
	// PlaneMetricsPort is the proxy's metrics and health port.
	PlaneMetricsPort = 9901
	// PlaneCloudflaredMetricsPort is cloudflared's metrics port.
	PlaneCloudflaredMetricsPort = 2000
)

// PortHolder says what in the Pods of a plane with this spec holds port,
// or "" when nothing does.
func (s *GatewayConfigSpec) PortHolder(port int32) string {
	switch {
	case port == PlaneMetricsPort:
		return "the proxy's metrics and health port"
	case s.Tunnel != nil && port == PlaneOriginPort:
		return "the proxy's origin listener, which cloudflared reaches"
	case s.Tunnel != nil && port == PlaneOriginTLSPort:
		return "the proxy's TLS origin listener, which cloudflared reaches"
	case s.Tunnel != nil && port == PlaneCloudflaredMetricsPort:
		return "cloudflared's metrics port"
	case s.Tunnel != nil && port >= origin.DefaultStreamPortBase && port < origin.DefaultStreamPortBase+origin.StreamPortCount:
		return fmt.Sprintf("among the proxy's origin ports for stream routes (%d to %d), which cloudflared reaches",
			origin.DefaultStreamPortBase, origin.DefaultStreamPortBase+origin.StreamPortCount-1)
	case s.Relayed() && port == PlaneRelayPort:
		return "the relay listener, which the shared proxies reach"
	}
	return ""
}
