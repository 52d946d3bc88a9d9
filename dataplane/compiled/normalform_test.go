package compiled

import (
	"errors"
	"slices"
	"strconv"
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

// ValidateRule's error says where each problem is as fields, so that a
// status can say it without taking a message apart.
func TestValidateRuleSaysWhere(t *testing.T) {
	every := &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}
	route := &proxycfg.Route{Kind: proxycfg.KindHTTP, Namespace: "ns", Name: "r", Rules: []proxycfg.Rule{
		{Matches: []proxycfg.Match{{Path: every}}},
		{
			Matches: []proxycfg.Match{{Path: every}, {Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/a"}}},
			Filters: []proxycfg.Filter{{Type: proxycfg.FilterRequestRedirect, RequestRedirect: &proxycfg.Redirect{StatusCode: 302,
				Path: &proxycfg.PathModifier{Type: proxycfg.ReplacePrefixPath, ReplacePrefixMatch: "/b"}}}},
			Backends: []proxycfg.BackendRef{{Cluster: "c", Weight: 1, Filters: []proxycfg.Filter{{Type: proxycfg.FilterCORS, CORS: &proxycfg.CORS{MaxAge: 5}}}}},
		},
		{Matches: []proxycfg.Match{{Path: every}, {Path: &proxycfg.PathMatch{Type: proxycfg.PathRegex, Value: "/("}}}},
	}}
	if err := ValidateRule(route, 0); err != nil {
		t.Fatalf("rule 0: %v", err)
	}
	type problem struct {
		match int
		field string
	}
	for _, tc := range []struct {
		rule int
		want []problem
	}{
		{1, []problem{{-1, "backends[0].filters[0]"}}},
		{2, []problem{{1, ""}}},
	} {
		err := ValidateRule(route, tc.rule)
		re, ok := errors.AsType[*RuleError](err)
		if !ok {
			t.Fatalf("rule %d: %T %v is not a *RuleError", tc.rule, err, err)
		}
		var got []problem
		for _, p := range re.Problems {
			got = append(got, problem{p.Match, p.Field})
			if p.Msg == "" || strings.Contains(p.Msg, "ns/r") {
				t.Errorf("rule %d: message %q", tc.rule, p.Msg)
			}
		}
		if re.Route != "ns/r" || re.Rule != tc.rule || !slices.Equal(got, tc.want) {
			t.Errorf("rule %d: %s rule %d problems %v, want ns/r rule %[1]d %v", tc.rule, re.Route, re.Rule, got, tc.want)
		}
		if !strings.HasPrefix(re.Error(), "route ns/r rule "+strconv.Itoa(tc.rule)+": ") || strings.Contains(re.Detail(), "ns/r") {
			t.Errorf("rule %d: Error %q, Detail %q", tc.rule, re.Error(), re.Detail())
		}
	}
}
