// This file renders the Pod template.

package provision

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"path"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
)

// Where things are inside a plane's Pods. The ingress document of a
// plane's tunnel names OriginPort and OriginCAPool, as the chart's
// GatewayClassConfig does for the shared proxies. The origin listener is
// on loopback TCP, not a unix socket: cloudflared answers every WebSocket
// to a unix: service 502 (cloudflare/cloudflared#560), and the socket's
// gain behind the real cloudflared is within the noise (BENCHMARKS.md).
// Its port is not the chart's 8080, which a plane serving in the cluster
// leaves to its Gateway's listeners (GatewayConfigSpec.PortHolder). The
// proxy generates its TLS origin certificate, and the CA that signed
// it, into certDir at start (-cert-dir), so no origin key leaves its Pod
// and the controller holds no CA key; cloudflared reads the CA there.
const (
	OriginPort   = v1alpha1.PlaneOriginPort
	OriginCAPool = certDir + "/origin-ca.crt"

	certDir        = "/etc/tunnelgate/origin"
	credentialsDir = "/etc/tunnelgate/internal"
	cacheDir       = "/var/cache/tunnelgate"
	tokenDir       = "/etc/cloudflared/token"

	proxyMetricsPort       = v1alpha1.PlaneMetricsPort
	cloudflaredMetricsPort = v1alpha1.PlaneCloudflaredMetricsPort
	originTLSPort          = v1alpha1.PlaneOriginTLSPort // where the plane tunnel's document sends cloudflared
	nonRoot                = 65532
)

// ProxyCommand is what the proxy container runs from the proxy image:
// the proxy alone, not the image's entrypoint (`tunnelgate proxy`), since
// without the controller linked in it holds tens of megabytes less
// resident. The chart's proxies run it too.
const ProxyCommand = "/tunnelgate-proxy"

func deployment(p Plane) *appsv1.Deployment {
	m := meta(p)
	var replicas *int32
	switch {
	case p.Params.Autoscaling != nil:
		// The autoscaler's: applying a count would fight it.
	case p.Params.Replicas != nil:
		replicas = p.Params.Replicas
	default:
		n := int32(v1alpha1.DefaultReplicas)
		replicas = &n
	}
	history := int32(5)
	surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(0)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: m,
		Spec: appsv1.DeploymentSpec{
			Replicas:             replicas,
			RevisionHistoryLimit: &history,
			Selector:             &metav1.LabelSelector{MatchLabels: selector(p)},
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: m.Labels, Annotations: podAnnotations(p, m.Annotations)},
				Spec:       podSpec(p, m.Name),
			},
		},
	}
}

// AnnotationRelayCA is on the Pods of a plane the shared proxies relay
// to: the SHA-256 of its relay CA, so new relay credentials roll the Pods.
const AnnotationRelayCA = "tunnelgate.dev/relay-ca-sha256"

// podAnnotations are the infrastructure annotations, the relay CA's hash
// when the plane has one, and the last rotation of its tunnel's
// credential, if any.
func podAnnotations(p Plane, infra map[string]string) map[string]string {
	if p.Relay == nil && p.TunnelRotatedAt == "" {
		return infra
	}
	out := maps.Clone(infra)
	if out == nil {
		out = map[string]string{}
	}
	if p.Relay != nil {
		sum := sha256.Sum256(p.Relay.CA)
		out[AnnotationRelayCA] = hex.EncodeToString(sum[:])
	}
	if p.TunnelRotatedAt != "" {
		out[v1alpha1.AnnotationRotatedAt] = p.TunnelRotatedAt
	}
	return out
}

// podSpec is the chart's proxy Pod: the proxy as a native sidecar, then
// cloudflared. A plane that serves in the cluster has no cloudflared: the
// proxy is its one container, serving the listener ports, which may be
// below 1024 (net.ipv4.ip_unprivileged_port_start, a sysctl Kubernetes
// counts as safe, lets the non-root proxy bind them with no capability).
func podSpec(p Plane, name string) corev1.PodSpec {
	no, uid := false, int64(nonRoot)
	grace := p.Install.TerminationGracePeriodSeconds
	spread := func(key string) corev1.TopologySpreadConstraint {
		return corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector: &metav1.LabelSelector{MatchLabels: selector(p)}}
	}
	spec := corev1.PodSpec{
		ServiceAccountName:            name,
		AutomountServiceAccountToken:  &no,
		TerminationGracePeriodSeconds: &grace,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			spread("kubernetes.io/hostname"), spread("topology.kubernetes.io/zone"),
		},
		InitContainers: []corev1.Container{proxyContainer(p)},
		Containers:     []corev1.Container{cloudflaredContainer(p)},
		Volumes:        volumes(p),
	}
	if !hasCloudflared(p) {
		proxy := proxyContainer(p)
		proxy.RestartPolicy = nil
		spec.InitContainers, spec.Containers = nil, []corev1.Container{proxy}
	}
	if p.Params.ServesInCluster() {
		spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}}
	}
	return spec
}

// hasCloudflared says whether the plane's Pods run cloudflared: they do
// with a tunnel of the Gateway's own. A plane that serves in the cluster
// has none, nor one the shared proxies relay to (the class's
// cloudflared runs beside them).
func hasCloudflared(p Plane) bool { return p.Params.Tunnel != nil }

func proxyContainer(p Plane) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	args := []string{
		"-controller=" + p.Install.ControllerURL,
		"-token-file=" + path.Join(credentialsDir, "config-token"),
		"-ca-file=" + path.Join(credentialsDir, "ca.crt"),
		"-config-cache=" + path.Join(cacheDir, "config.json"),
	}
	mounts := []corev1.VolumeMount{
		{Name: "internal", MountPath: credentialsDir, ReadOnly: true},
		{Name: "cache", MountPath: cacheDir},
	}
	ports := []corev1.ContainerPort{{Name: "metrics", ContainerPort: proxyMetricsPort}}
	switch {
	case p.Params.InClusterOnly():
		// No origin listener, whose default port (8080) a listener may
		// well use.
		args = append(args, "-listen=")
	case p.Params.Relayed():
		// The relay alone: TLS on the Pod's address, admitting only the
		// shared proxies' certificate, whose forwarding headers are then
		// trusted as cloudflared's would be.
		args = append(args, "-listen=",
			"-listen-tls=:"+strconv.Itoa(RelayPort),
			"-tls-cert="+path.Join(credentialsDir, KeyRelayCert),
			"-tls-key="+path.Join(credentialsDir, KeyRelayKey),
			"-tls-client-ca="+path.Join(credentialsDir, KeyRelayCA))
		ports = append(ports, corev1.ContainerPort{Name: "relay", ContainerPort: RelayPort})
	default:
		args = append(args,
			"-tunnel-protocol="+p.Install.TunnelProtocol,
			"-listen=127.0.0.1:"+strconv.Itoa(OriginPort),
			"-listen-tls=127.0.0.1:"+strconv.Itoa(originTLSPort),
			"-cert-dir="+certDir)
		mounts = append(mounts, corev1.VolumeMount{Name: "origin-certs", MountPath: certDir})
	}
	if p.Params.ServesInCluster() {
		// Ports PortHolder names are refused to listeners in translate.
		args = append(args, "-listen-listener-ports")
	}
	args = append(args,
		"-admin=:"+strconv.Itoa(proxyMetricsPort),
		"-pprof=loopback",
		"-log-level=info",
		"-log-format=text")
	args = append(args, p.Params.ProxyArgs...)
	res := resources(p.Install.ProxyResources, p.Params.Proxy)
	env := []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
	}
	if _, ok := res.Limits[corev1.ResourceMemory]; ok {
		// The Go runtime collects harder near the limit instead of being
		// OOM-killed.
		env = append(env, corev1.EnvVar{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
			ContainerName: "proxy", Resource: "limits.memory", Divisor: resource.MustParse("1")}}})
	}
	return corev1.Container{
		Name:            "proxy",
		Image:           image(p.Install.ProxyImage, p.Params.Proxy),
		ImagePullPolicy: corev1.PullIfNotPresent,
		RestartPolicy:   &always,
		Command:         []string{ProxyCommand},
		Args:            args,
		Env:             env,
		Ports:           ports,
		// Started, and cloudflared let start, once it holds a config.
		StartupProbe:    httpProbe("/readyz", "metrics", 1, 60),
		LivenessProbe:   httpProbe("/healthz", "metrics", 10, 3),
		ReadinessProbe:  httpProbe("/readyz", "metrics", 2, 2),
		Resources:       res,
		SecurityContext: containerSecurity(),
		VolumeMounts:    mounts,
	}
}

func cloudflaredContainer(p Plane) corev1.Container {
	return corev1.Container{
		Name:            "cloudflared",
		Image:           image(p.Install.CloudflaredImage, p.Params.Cloudflared),
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args: slices.Concat([]string{
			"tunnel",
			"--metrics=0.0.0.0:" + strconv.Itoa(cloudflaredMetricsPort),
			"--protocol=" + p.Install.TunnelProtocol,
			"--grace-period=" + p.Install.GracePeriod,
		}, p.Install.CloudflaredArgs, []string{
			"run",
			"--token-file=" + path.Join(tokenDir, "token"),
		}),
		Ports:           []corev1.ContainerPort{{Name: "cfd-metrics", ContainerPort: cloudflaredMetricsPort}},
		LivenessProbe:   httpProbe("/healthcheck", "cfd-metrics", 10, 3),
		ReadinessProbe:  httpProbe("/ready", "cfd-metrics", 2, 2),
		Resources:       resources(p.Install.CloudflaredResources, p.Params.Cloudflared),
		SecurityContext: containerSecurity(),
		VolumeMounts: []corev1.VolumeMount{
			{Name: "tunnel-token", MountPath: tokenDir, ReadOnly: true},
			{Name: "origin-certs", MountPath: certDir, ReadOnly: true},
		},
	}
}

func volumes(p Plane) []corev1.Volume {
	secret := func(name, secretName string, mode int32, items ...corev1.KeyToPath) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secretName, DefaultMode: &mode, Items: items}}}
	}
	item := func(key, path string) corev1.KeyToPath { return corev1.KeyToPath{Key: key, Path: path} }
	empty := func(name, limit string) corev1.Volume {
		size := resource.MustParse(limit)
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &size}}}
	}
	items := []corev1.KeyToPath{item(KeyConfigToken, "config-token"), item(KeyCA, "ca.crt")}
	if p.Params.Relayed() {
		// Not the relay's client key: that is the shared proxies'.
		items = append(items, item(KeyRelayCA, KeyRelayCA), item(KeyRelayCert, KeyRelayCert), item(KeyRelayKey, KeyRelayKey))
	}
	credentials := secret("internal", p.Secrets.Credentials, 0o440, items...)
	// The last config: a restarted proxy serves it at once.
	cache := empty("cache", "64Mi")
	if !hasCloudflared(p) {
		return []corev1.Volume{credentials, cache}
	}
	return []corev1.Volume{
		credentials,
		secret("tunnel-token", p.Secrets.TunnelToken, 0o440, item(p.Secrets.TunnelTokenKey, "token")),
		cache,
		empty("origin-certs", "1Mi"),
	}
}

func httpProbe(path, port string, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(port)}},
		PeriodSeconds:    period,
		FailureThreshold: failures,
	}
}

func containerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// image is the GatewayConfig's image for a container, else Install's.
func image(def string, c *v1alpha1.ContainerSettings) string {
	if c != nil && c.Image != "" {
		return c.Image
	}
	return def
}

// resources are Install's, with the GatewayConfig's requests and limits
// each replacing Install's whole when set.
func resources(def v1alpha1.ContainerResources, c *v1alpha1.ContainerSettings) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Requests: def.Requests.DeepCopy(), Limits: def.Limits.DeepCopy()}
	if c != nil && c.Resources != nil {
		if c.Resources.Requests != nil {
			r.Requests = c.Resources.Requests.DeepCopy()
		}
		if c.Resources.Limits != nil {
			r.Limits = c.Resources.Limits.DeepCopy()
		}
	}
	return r
}
