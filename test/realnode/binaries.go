package realnode

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tunnelgate/tunnelgate/test/kubeenv"
)

// Versions of what `make realnode` (test/tools/realnode/build.sh) builds
// and fetches, which name its cache directories. They must match that
// script and test/tools/coredns/go.mod (a test checks).
const (
	CoreDNSVersion    = "v1.15.0"
	ContainerdVersion = "1.6.20"
	RuncVersion       = "1.1.5"
	CNIPluginsVersion = "1.1.1"
	IptablesVersion   = "1.8.9"
	ConntrackVersion  = "1.4.7"
)

// cacheDirs returns the directory of the Go binaries (kube-scheduler,
// kubelet, kube-proxy, coredns) and that of the unpacked Debian packages.
func cacheDirs() (goDir, debDir string, err error) {
	cache := os.Getenv("TUNNELGATE_REALNODE_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", "", fmt.Errorf("realnode: no home directory for the cache (set TUNNELGATE_REALNODE_CACHE): %w", err)
		}
		cache = filepath.Join(home, ".cache", "tunnelgate", "realnode")
	}
	goDir = filepath.Join(cache, "k8s-"+kubeenv.KubernetesVersion+"-coredns-"+CoreDNSVersion)
	debDir = filepath.Join(cache, "debian-containerd-"+ContainerdVersion+"-runc-"+RuncVersion+"-cni-"+CNIPluginsVersion+
		"-iptables-"+IptablesVersion+"-conntrack-"+ConntrackVersion)
	return goDir, debDir, nil
}

// binaries are the paths of everything the node runs.
type binaries struct {
	goDir, debDir string
	// PATH for the node's processes: the iptables and conntrack wrappers,
	// containerd's shim and runc, then the machine's.
	path string
}

func (b binaries) scheduler() string  { return filepath.Join(b.goDir, "kube-scheduler") }
func (b binaries) kubelet() string    { return filepath.Join(b.goDir, "kubelet") }
func (b binaries) kubeProxy() string  { return filepath.Join(b.goDir, "kube-proxy") }
func (b binaries) coreDNS() string    { return filepath.Join(b.goDir, "coredns") }
func (b binaries) containerd() string { return filepath.Join(b.debDir, "usr", "bin", "containerd") }
func (b binaries) ctr() string        { return filepath.Join(b.debDir, "usr", "bin", "ctr") }
func (b binaries) runc() string       { return filepath.Join(b.debDir, "usr", "sbin", "runc") }
func (b binaries) cniDir() string     { return filepath.Join(b.debDir, "usr", "lib", "cni") }
func (b binaries) iptablesSave() string {
	return filepath.Join(b.debDir, "bin", "iptables-save")
}

// findBinaries checks the cache and says how to fill it when it is not.
func findBinaries() (binaries, error) {
	goDir, debDir, err := cacheDirs()
	if err != nil {
		return binaries{}, err
	}
	b := binaries{goDir: goDir, debDir: debDir}
	for _, p := range []string{b.scheduler(), b.kubelet(), b.kubeProxy(), b.coreDNS(), b.containerd(), b.ctr(), b.runc(),
		filepath.Join(b.debDir, "usr", "bin", "containerd-shim-runc-v2"), filepath.Join(b.cniDir(), "bridge"),
		filepath.Join(b.debDir, "bin", "iptables")} {
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return binaries{}, fmt.Errorf("realnode: %s is missing: run `make realnode` in the repository root (once per machine: builds kube-scheduler, kubelet, kube-proxy and CoreDNS, and unpacks Debian's containerd, runc, CNI plugins and iptables)", p)
		}
	}
	b.path = filepath.Join(debDir, "bin") + ":" + filepath.Join(debDir, "usr", "bin") + ":" +
		filepath.Join(debDir, "usr", "sbin") + ":" + os.Getenv("PATH")
	return b, nil
}
