package provision

import "github.com/tunnelgate/tunnelgate/api/v1alpha1"

// PortHolder says what in a plane's Pods holds port, or "" when nothing
// does. A plane that serves in the cluster serves its Gateway's listeners
// on their own ports in the same Pods, so a listener cannot have a port
// the proxy or cloudflared already listen on: translate refuses it.
func PortHolder(spec *v1alpha1.GatewayConfigSpec, port int32) string {
	switch {
	case port == proxyMetricsPort:
		return "the proxy's metrics and health port"
	case spec.Tunnel != nil && port == OriginPort:
		return "the proxy's origin listener, which cloudflared reaches"
	case spec.Tunnel != nil && port == originTLSPort:
		return "the proxy's TLS origin listener, which cloudflared reaches"
	case spec.Tunnel != nil && port == cloudflaredMetricsPort:
		return "cloudflared's metrics port"
	case spec.Relayed() && port == RelayPort:
		return "the relay listener, which the shared proxies reach"
	}
	return ""
}
