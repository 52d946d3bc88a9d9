package realnode

import (
	"os"
	"regexp"
	"testing"
)

// TestVersionsMatchBuildScript keeps the cache directories realnode looks
// in the ones test/tools/realnode/build.sh writes: CoreDNS's version from
// test/tools/coredns/go.mod, the Debian packages' from the script.
func TestVersionsMatchBuildScript(t *testing.T) {
	mod, err := os.ReadFile("../tools/coredns/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	got := "nothing"
	if m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/coredns/coredns\s+(v\S+)`).FindSubmatch(mod); m != nil {
		got = string(m[1])
	}
	if got != CoreDNSVersion {
		t.Errorf("test/tools/coredns/go.mod requires CoreDNS %s; realnode expects %s", got, CoreDNSVersion)
	}
	script, err := os.ReadFile("../tools/realnode/build.sh")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"containerd_version": ContainerdVersion,
		"runc_version":       RuncVersion,
		"cni_version":        CNIPluginsVersion,
		"iptables_version":   IptablesVersion,
		"conntrack_version":  ConntrackVersion,
	} {
		got := "nothing"
		if m := regexp.MustCompile(`(?m)^` + name + `=(\S+)$`).FindSubmatch(script); m != nil {
			got = string(m[1])
		}
		if got != want {
			t.Errorf("build.sh sets %s=%s; realnode expects %s", name, got, want)
		}
	}
}
