// Package provision renders the Kubernetes objects of a Gateway's
// dedicated data plane: pure functions from a Gateway, its GatewayConfig
// and what the controller was installed with, to typed objects, so the
// shape of a plane is read and tested here (golden files) and the
// controller only applies what Objects returns.
//
// # What a plane is
//
// A Gateway whose GatewayConfig asks for dataPlane Dedicated gets, in its
// own namespace, all named Name(gateway, class) (GEP-1762's
// "<gateway>-<class>", shortened with a hash beyond 63 characters):
//
//   - a Deployment of proxy Pods in the shape the chart gives the shared
//     proxies: the tunnelgate proxy (ProxyCommand, the proxy's own binary
//     in the image) as a native sidecar (an init container with
//     restartPolicy Always, started before cloudflared once it holds a
//     config, stopped after it) and the cloudflared container; non-root,
//     read-only, no capabilities, RuntimeDefault seccomp; one new Pod at a
//     time, none taken away before its successor is Ready. A plane with no
//     tunnel of its own has no cloudflared: the proxy serves the listener
//     ports (serving in the cluster) or the relay from the shared proxies
//     (classTunnel: TLS on RelayPort, admitting only the relay's client
//     certificate). A plane serving in the cluster beside a tunnel
//     (serveInCluster) serves the listener ports too, on every port but
//     those its Pods hold (GatewayConfigSpec.PortHolder);
//   - a ServiceAccount with no API token (the proxies never call the
//     Kubernetes API);
//   - a Service for the proxies' and cloudflared's metrics, the relay
//     port, and, serving in the cluster, the listener ports;
//   - a PodDisruptionBudget (one Pod down at a time);
//   - a HorizontalPodAutoscaler when the GatewayConfig asks for
//     autoscaling (the Deployment then leaves replicas to it);
//   - a NetworkPolicy when Install has one: nothing reaches the Pods but
//     metrics scrapes from its peers, as the chart's proxies.
//
// Every object is owned by the Gateway (a controller ownerReference, so
// deleting the Gateway deletes them) and carries the Gateway's
// spec.infrastructure labels and annotations, and labels naming the
// Gateway (gateway.networking.k8s.io/gateway-name) and its class; the Pod
// template carries them too. Labels of ours win over infrastructure labels
// of the same key: the selector must not be the user's to break.
//
// # Inputs
//
// Install is what every plane shares, from the controller's -planes file
// (ParseInstall): the images, the config API's URL, the tunnel protocol,
// grace period and cloudflared's extra flags, default resources. Secrets
// (SecretsOf) names the Secrets a plane's Pods mount: its own config API
// credential (token and the API's CA; CredentialsSecret renders it, from
// a token the controller makes; with classTunnel, the relay's credentials
// too, Plane.Relay) and its tunnel token. The proxy makes its TLS origin
// certificate itself, in the Pod.
// The GatewayConfig's fields override Install's: images, resources
// (requests and limits each replaced whole), replicas or autoscaling, and
// ProxyArgs appended after the defaults (the proxy takes the last value
// of a flag), each checked against v1alpha1.AllowedProxyFlags here too,
// since a GatewayConfig read from files has not been through the CRD.
package provision
