package kubeenv

import (
	"fmt"
	"os"
	"path/filepath"
)

// Versions of the binaries, which name their cache directory. They must
// match test/tools/go.mod, which builds them (a test checks).
const (
	KubernetesVersion = "v1.37.1"
	EtcdVersion       = "v3.7.2"
)

// Names of the binaries in the cache directory.
const (
	binAPIServer         = "kube-apiserver"
	binControllerManager = "kube-controller-manager"
	binEtcd              = "etcd"
)

// BinDir returns the directory `make testenv` builds the binaries into:
// $TUNNELGATE_TESTENV_CACHE (default ~/.cache/tunnelgate/testenv) plus a
// directory per pair of versions.
func BinDir() (string, error) {
	cache := os.Getenv("TUNNELGATE_TESTENV_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("kubeenv: no home directory for the binary cache (set TUNNELGATE_TESTENV_CACHE): %w", err)
		}
		cache = filepath.Join(home, ".cache", "tunnelgate", "testenv")
	}
	return filepath.Join(cache, "k8s-"+KubernetesVersion+"-etcd-"+EtcdVersion), nil
}

// findBinaries checks that dir holds every binary and says how to get them
// when it does not.
func findBinaries(dir string) error {
	for _, b := range []string{binEtcd, binAPIServer, binControllerManager} {
		fi, err := os.Stat(filepath.Join(dir, b))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("kubeenv: %s is not in %s: run `make testenv` in the repository root to build the test binaries (10 to 15 minutes once per machine, then cached)", b, dir)
		}
	}
	return nil
}
