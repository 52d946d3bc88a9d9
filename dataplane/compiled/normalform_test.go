package compiled

import (
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// The wire config is in normal form (proxycfg's package doc): a setting
// left out is refused, naming the field, and never given a default here.
func TestRuleInNormalFormOnly(t *testing.T) {
	every := &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}
	complete := func() proxycfg.Rule {
		return proxycfg.Rule{
			Matches:  []proxycfg.Match{{Path: every}},
			Backends: []proxycfg.BackendRef{{Cluster: "c", Weight: 1}},
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*proxycfg.Rule)
		want string
	}{
		{"no matches", func(r *proxycfg.Rule) { r.Matches = nil }, `matches: none; a rule for every request says so`},
		{"match without path", func(r *proxycfg.Rule) { r.Matches[0].Path = nil }, "match 0: path is required"},
		{"path without type", func(r *proxycfg.Rule) { r.Matches[0].Path = &proxycfg.PathMatch{Value: "/"} }, `path type "" is not PathPrefix`},
		{"path prefix without value", func(r *proxycfg.Rule) { r.Matches[0].Path = &proxycfg.PathMatch{Type: proxycfg.PathPrefix} }, `PathPrefix path "" must start with "/"`},
		{"header match without type", func(r *proxycfg.Rule) {
			r.Matches[0].Headers = []proxycfg.ValueMatch{{Name: "X-A", Value: "1"}}
		}, `"X-A": type "" is not Exact or RegularExpression`},
		{"query match without type", func(r *proxycfg.Rule) {
			r.Matches[0].Query = []proxycfg.ValueMatch{{Name: "q", Value: "1"}}
		}, `"q": type "" is not Exact or RegularExpression`},
		{"redirect without status", func(r *proxycfg.Rule) {
			r.Filters = []proxycfg.Filter{{Type: proxycfg.FilterRequestRedirect, RequestRedirect: &proxycfg.Redirect{}}}
		}, "statusCode 0"},
		{"mirror fraction without denominator", func(r *proxycfg.Rule) {
			r.Filters = []proxycfg.Filter{{Type: proxycfg.FilterRequestMirror, RequestMirror: &proxycfg.Mirror{Cluster: "c", Fraction: &proxycfg.Fraction{Numerator: 1}}}}
		}, "fraction 1/0"},
		{"cors without maxAge", func(r *proxycfg.Rule) {
			r.Filters = []proxycfg.Filter{{Type: proxycfg.FilterCORS, CORS: &proxycfg.CORS{AllowOrigins: []string{"*"}}}}
		}, "maxAge 0"},
		{"session without type", func(r *proxycfg.Rule) {
			r.SessionPersistence = &proxycfg.SessionPersistence{Name: "s", Lifetime: proxycfg.LifetimeSession}
		}, `type "" is not "Cookie" or "Header"`},
		{"session without lifetime", func(r *proxycfg.Rule) {
			r.SessionPersistence = &proxycfg.SessionPersistence{Name: "s", Type: proxycfg.SessionCookie}
		}, `lifetime "" is not "Session" or "Permanent"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := complete()
			route := &proxycfg.Route{Kind: proxycfg.KindHTTP, Namespace: "ns", Name: "r", Rules: []proxycfg.Rule{r}}
			if err := ValidateRule(route, 0); err != nil {
				t.Fatalf("the complete rule is refused: %v", err)
			}
			r = complete()
			tc.edit(&r)
			route.Rules = []proxycfg.Rule{r}
			err := ValidateRule(route, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
