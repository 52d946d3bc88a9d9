package conformance

import (
	"slices"
	"strings"
	"testing"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
)

func report(passed uint32, failed, skipped, features []string) *confv1.ConformanceReport {
	st := confv1.Status{Statistics: confv1.Statistics{Passed: passed, Failed: uint32(len(failed)), Skipped: uint32(len(skipped))},
		FailedTests: failed, SkippedTests: skipped}
	return &confv1.ConformanceReport{ProfileReports: []confv1.ProfileReport{{
		Name: "GATEWAY-HTTP", Core: st,
		Extended: &confv1.ExtendedStatus{Status: st, SupportedFeatures: features},
	}}}
}

// The gate passes a run that does as well or better, and names every way
// a run does worse.
func TestRegressions(t *testing.T) {
	base := report(10, []string{"A"}, []string{"S"}, []string{"F1", "F2"})
	for _, c := range []struct {
		name string
		got  *confv1.ConformanceReport
		want []string
	}{
		{"same", report(10, []string{"A"}, []string{"S"}, []string{"F1", "F2"}), nil},
		{"better", report(12, nil, nil, []string{"F1", "F2", "F3"}), nil},
		{"a new failure", report(10, []string{"A", "B"}, []string{"S"}, []string{"F1", "F2"}),
			[]string{"GATEWAY-HTTP core: B fails", "GATEWAY-HTTP extended: B fails"}},
		{"a new skip", report(10, []string{"A"}, []string{"S", "T"}, []string{"F1", "F2"}),
			[]string{"GATEWAY-HTTP core: T is skipped", "GATEWAY-HTTP extended: T is skipped"}},
		{"fewer passes", report(9, []string{"A"}, []string{"S"}, []string{"F1", "F2"}),
			[]string{"GATEWAY-HTTP core: 9 tests pass, 10 did", "GATEWAY-HTTP extended: 9 tests pass, 10 did"}},
		{"a feature dropped", report(10, []string{"A"}, []string{"S"}, []string{"F1"}),
			[]string{"GATEWAY-HTTP extended: feature F2 is no longer declared"}},
		{"a profile missing", &confv1.ConformanceReport{}, []string{"profile GATEWAY-HTTP: not run"}},
		{"another Gateway API version", func() *confv1.ConformanceReport {
			r := report(10, []string{"A"}, []string{"S"}, []string{"F1", "F2"})
			r.GatewayAPIVersion = "v1.8.0"
			return r
		}(), []string{"the run is of Gateway API v1.8.0, the committed report of : make conformance, and commit its report"}},
	} {
		got := regressions(base, c.got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got  %s\n want %s", c.name, strings.Join(got, "; "), strings.Join(c.want, "; "))
		}
	}
}
