package kubeenv

import (
	"os"
	"regexp"
	"testing"
)

// TestVersionsMatchToolsModule keeps the cache directory kubeenv looks in
// the one test/tools/build.sh writes, which it derives from go.mod.
func TestVersionsMatchToolsModule(t *testing.T) {
	b, err := os.ReadFile("../tools/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for mod, want := range map[string]string{
		"k8s.io/kubernetes":         KubernetesVersion,
		"go.etcd.io/etcd/server/v3": EtcdVersion,
	} {
		got := "nothing"
		if m := regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(mod) + `\s+(v\S+)`).FindSubmatch(b); m != nil {
			got = string(m[1])
		}
		if got != want {
			t.Errorf("test/tools/go.mod requires %s %s; kubeenv expects %s", mod, got, want)
		}
	}
}
