package realnode

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeFile writes a file under the node's directory, making its parents.
func (n *Node) writeFile(rel, content string) (string, error) {
	p := filepath.Join(n.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	return p, os.WriteFile(p, []byte(content), 0o644)
}

// writeKubeconfig writes a kubeconfig for cfg (a client certificate) at rel.
func (n *Node) writeKubeconfig(rel string, cfg *rest.Config) (string, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["realnode"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["realnode"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["realnode"] = &clientcmdapi.Context{Cluster: "realnode", AuthInfo: "realnode"}
	kc.CurrentContext = "realnode"
	p := filepath.Join(n.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	return p, clientcmd.WriteToFile(*kc, p)
}

// containerdConfig is containerd 1.6's configuration: its own root, state
// and socket under the node's directory; CRI with runc through the v2
// shim and cgroupfs (no systemd here); restrict_oom_score_adj, because
// nothing here may lower an oom_score_adj (no CAP_SYS_RESOURCE) and
// without it every sandbox fails ("can't get final child's PID from
// pipe: EOF"); the probe as the sandbox image (no registry to pull
// pause from); network namespaces mounted under the state directory; the
// CNI plugins from the unpacked Debian package.
func (n *Node) containerdConfig() string {
	d := filepath.Join(n.Dir, "containerd")
	q := strconv.Quote
	return strings.Join([]string{
		`version = 2`,
		`root = ` + q(filepath.Join(d, "root")),
		`state = ` + q(filepath.Join(d, "state")),
		`oom_score = 0`,
		`[grpc]`,
		`  address = ` + q(n.containerdSocket),
		`[ttrpc]`,
		`  address = ` + q(n.containerdSocket+".ttrpc"),
		`[plugins."io.containerd.internal.v1.opt"]`,
		`  path = ` + q(filepath.Join(d, "opt")),
		`[plugins."io.containerd.grpc.v1.cri"]`,
		`  sandbox_image = ` + q(ProbeImage),
		`  restrict_oom_score_adj = true`,
		`  netns_mounts_under_state_dir = true`,
		`  disable_apparmor = true`,
		`  stream_server_address = "127.0.0.1"`,
		`  [plugins."io.containerd.grpc.v1.cri".containerd]`,
		`    snapshotter = "overlayfs"`,
		`    default_runtime_name = "runc"`,
		`    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]`,
		`      runtime_type = "io.containerd.runc.v2"`,
		`      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]`,
		`        SystemdCgroup = false`,
		`        BinaryName = ` + q(n.bin.runc()),
		`  [plugins."io.containerd.grpc.v1.cri".cni]`,
		`    bin_dir = ` + q(n.bin.cniDir()),
		`    conf_dir = ` + q(filepath.Join(n.Dir, "cni", "net.d")),
		``,
	}, "\n")
}

// cniConfig is the Pod network: a bridge with the node's side as the
// Pods' gateway, host-local addresses from PodCIDR (its state in the
// node's directory), portmap for hostPorts. It enforces no NetworkPolicy.
func (n *Node) cniConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "realnode",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %q
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, Bridge, PodCIDR.String(), filepath.Join(n.Dir, "cni", "ipam"))
}

// kubeletConfig follows what this machine allows (notes/real-runtime.md):
// cgroup v1 accepted (failCgroupV1: false) with the cgroupfs driver under
// a cgroup of the node's own (cgroupRoot); no swap check;
// protectKernelDefaults, so the kubelet only checks the kernel settings it
// wants, which the node's mount namespace shows it (the machine's stay
// as they are); no lowering of its own oom_score_adj; logs, volume
// plugins and everything else under the node's directory; the API
// server's CA for client certificates (pods/log), every authenticated
// request allowed; the cluster DNS at DNSIP; image garbage collection and
// evictions out of the way of a shared machine's disk.
func (n *Node) kubeletConfig(caFile string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: true
cgroupRoot: /%s
failSwapOn: false
protectKernelDefaults: true
oomScoreAdj: 0
containerRuntimeEndpoint: unix://%s
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %s}
authorization:
  mode: AlwaysAllow
clusterDomain: cluster.local
clusterDNS: [%s]
resolvConf: ""
podLogsDir: %s
volumePluginDir: %s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
nodeStatusUpdateFrequency: 2s
syncFrequency: 10s
serializeImagePulls: false
registerNode: true
`, n.cgroup, n.containerdSocket, NodeIP, caFile, DNSIP,
		filepath.Join(n.Dir, "kubelet", "pod-logs"), filepath.Join(n.Dir, "kubelet", "volume-plugins"))
}

// kubeProxyConfig is kube-proxy in iptables mode, in the test's network
// namespace: Pods' traffic from PodCIDR is not masqueraded; nothing global
// is changed: conntrack limits and timeouts are left as they are (0), no
// route_localnet for NodePorts on localhost.
func (n *Node) kubeProxyConfig(kubeconfig string) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
clusterCIDR: %s
bindAddress: 0.0.0.0
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
iptables:
  localhostNodePorts: false
  syncPeriod: 10s
  minSyncPeriod: 0s
`, kubeconfig, NodeName, PodCIDR.String())
}
