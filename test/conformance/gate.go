package conformance

import (
	"fmt"
	"os"
	"slices"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/yaml"
)

// The gate: a run may do better than the committed report, never worse.
// Per profile, for core and extended tests alike:
//   - no test fails that did not fail in the committed report;
//   - no test is skipped that was not skipped there;
//   - no fewer tests pass;
//   - every feature declared there is still declared.
// A run that does better passes, and `make conformance` writes its report
// for committing, which raises the bar.

// readReport reads a ConformanceReport file.
func readReport(path string) (*confv1.ConformanceReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r confv1.ConformanceReport
	if err := yaml.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// regressions lists how got falls behind base. A run of another Gateway
// API version than base's is behind it whatever its results: its tests
// are not base's.
func regressions(base, got *confv1.ConformanceReport) []string {
	var out []string
	if base.GatewayAPIVersion != got.GatewayAPIVersion {
		out = append(out, fmt.Sprintf("the run is of Gateway API %s, the committed report of %s: make conformance, and commit its report", got.GatewayAPIVersion, base.GatewayAPIVersion))
	}
	for _, bp := range base.ProfileReports {
		i := slices.IndexFunc(got.ProfileReports, func(p confv1.ProfileReport) bool { return p.Name == bp.Name })
		if i < 0 {
			out = append(out, fmt.Sprintf("profile %s: not run", bp.Name))
			continue
		}
		gp := got.ProfileReports[i]
		out = append(out, statusRegressions(bp.Name+" core", bp.Core, gp.Core)...)
		if bp.Extended == nil {
			continue
		}
		if gp.Extended == nil {
			out = append(out, fmt.Sprintf("profile %s: no extended tests ran", bp.Name))
			continue
		}
		out = append(out, statusRegressions(bp.Name+" extended", bp.Extended.Status, gp.Extended.Status)...)
		for _, f := range bp.Extended.SupportedFeatures {
			if !slices.Contains(gp.Extended.SupportedFeatures, f) {
				out = append(out, fmt.Sprintf("%s extended: feature %s is no longer declared", bp.Name, f))
			}
		}
	}
	return out
}

func statusRegressions(where string, base, got confv1.Status) []string {
	var out []string
	for _, t := range got.FailedTests {
		if !slices.Contains(base.FailedTests, t) {
			out = append(out, fmt.Sprintf("%s: %s fails", where, t))
		}
	}
	for _, t := range got.SkippedTests {
		if !slices.Contains(base.SkippedTests, t) {
			out = append(out, fmt.Sprintf("%s: %s is skipped", where, t))
		}
	}
	if got.Passed < base.Passed {
		out = append(out, fmt.Sprintf("%s: %d tests pass, %d did", where, got.Passed, base.Passed))
	}
	return out
}
