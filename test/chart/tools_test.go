package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// Versions of the tools, which name their cache directory; they must match
// test/tools/chart (TestToolVersionsMatchBuildScript).
const (
	helmVersion               = "v4.3.1"
	prometheusOperatorVersion = "v0.85.0"
	cosignVersion             = "v3.1.3" // test/tools/chart/cosign.sh
)

// The file names of the Prometheus Operator CRDs in toolsDir, which the
// renders' ServiceMonitor and PrometheusRule are validated against.
const (
	serviceMonitorCRD = "monitoring.coreos.com_servicemonitors.yaml"
	prometheusRuleCRD = "monitoring.coreos.com_prometheusrules.yaml"
)

// toolsDir is where test/tools/chart/build.sh puts helm and the CRDs.
func toolsDir(t testing.TB) string {
	t.Helper()
	cache := os.Getenv("TUNNELGATE_TOOLS_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatalf("no home directory for the tools cache (set TUNNELGATE_TOOLS_CACHE): %v", err)
		}
		cache = filepath.Join(home, ".cache", "tunnelgate", "tools")
	}
	dir := filepath.Join(cache, fmt.Sprintf("helm-%s-prometheus-operator-%s", helmVersion, prometheusOperatorVersion))
	for _, f := range []string{"helm", serviceMonitorCRD, prometheusRuleCRD} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("%s is not in %s: run `make chart-tools` in the repository root (about 4 minutes once per machine, then cached)", f, dir)
		}
	}
	return dir
}

func helmPath(t testing.TB) string { return filepath.Join(toolsDir(t), "helm") }

// cosignPath is where test/tools/chart/cosign.sh puts cosign, in the same
// cache as helm.
func cosignPath(t testing.TB) string {
	t.Helper()
	p := filepath.Join(filepath.Dir(toolsDir(t)), "cosign-"+cosignVersion, "cosign")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("cosign %s is not in %s: run `make chart-tools` in the repository root (about 2 minutes once per machine, then cached)", cosignVersion, filepath.Dir(p))
	}
	return p
}

// The constants above name the directory build.sh writes: a version bump
// in one place and not the other would make every test fail with "run
// make chart-tools", which would not help.
func TestToolVersionsMatchBuildScript(t *testing.T) {
	gomod, err := os.ReadFile("../tools/chart/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s*helm\.sh/helm/v4 ` + regexp.QuoteMeta(helmVersion) + `\b`).Match(gomod) {
		t.Errorf("test/tools/chart/go.mod does not require helm.sh/helm/v4 %s (helmVersion here)", helmVersion)
	}
	script, err := os.ReadFile("../tools/chart/build.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^prometheus_operator_version=` + regexp.QuoteMeta(prometheusOperatorVersion) + `$`).Match(script) {
		t.Errorf("test/tools/chart/build.sh does not set prometheus_operator_version=%s (prometheusOperatorVersion here)", prometheusOperatorVersion)
	}
	script, err = os.ReadFile("../tools/chart/cosign.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^cosign_version=` + regexp.QuoteMeta(cosignVersion) + `$`).Match(script) {
		t.Errorf("test/tools/chart/cosign.sh does not set cosign_version=%s (cosignVersion here)", cosignVersion)
	}
}
