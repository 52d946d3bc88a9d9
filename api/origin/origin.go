// Package origin holds the defaults of the proxies' origin listeners, the
// ones cloudflared sends a tunnel's requests to: their ports, the name
// the TLS listener's certificate is valid for, and where cloudflared finds
// the CA that signed it.
//
// The controller writes them into the tunnel's ingress document, the CRD
// (api/v1alpha1, OriginSettings) names them as its defaults, and the proxy
// serves them. They live here, in a package that imports nothing, so that
// the proxy's own binary (cmd/tunnelgate-proxy) uses the same values
// without linking Kubernetes' API machinery.
package origin

// Defaults of the origin listeners (api/v1alpha1.OriginSettings).
const (
	// DefaultPort is the plain HTTP origin listener's port.
	DefaultPort = 8080
	// DefaultTLSPort is the TLS origin listener's port (h2, for gRPC).
	DefaultTLSPort = 8443
	// DefaultServerName is the name cloudflared expects in the TLS origin
	// listener's certificate.
	DefaultServerName = "origin.tunnelgate.internal"
	// DefaultCAPool is the path, inside the cloudflared container, of the
	// CA that signed that certificate.
	DefaultCAPool = "/etc/tunnelgate/origin-ca/ca.crt"
	// DefaultStreamPortBase is the first of the ports a proxy's origin
	// side opens for stream routes (TCPRoutes and TLSRoutes through a
	// tunnel), one port per route (proxycfg.Route.OriginPort), among
	// StreamPortCount ports from the base.
	DefaultStreamPortBase = 20000
	// StreamPortCount is how many ports from the base stream routes are
	// given: at most this many stream routes per proxy.
	StreamPortCount = 10000
)
