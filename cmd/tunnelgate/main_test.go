package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/matcher"
)

// demoWinners runs the demo and returns the winner printed for each sample,
// keyed by the sample as printed: "METHOD host path?query [headers]".
func demoWinners(t *testing.T) (map[string]string, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := demo(&buf); err != nil {
		t.Fatalf("demo: %v", err)
	}
	out := buf.String()
	winners := map[string]string{}
	_, samples, ok := strings.Cut(out, "sample requests:")
	if !ok {
		t.Fatalf("no sample section in demo output:\n%s", out)
	}
	for _, line := range strings.Split(samples, "\n") {
		req, winner, ok := strings.Cut(line, "->")
		if !ok {
			continue
		}
		winners[strings.Join(strings.Fields(req), " ")] = strings.TrimSpace(winner)
	}
	return winners, out
}

func TestDemoWinners(t *testing.T) {
	winners, out := demoWinners(t)
	if first, _, _ := strings.Cut(out, "\n"); first != demoNotice {
		t.Errorf("first line = %q, want the standalone notice", first)
	}
	if len(winners) != len(demoRequests()) {
		t.Errorf("got %d sample lines, want %d:\n%s", len(winners), len(demoRequests()), out)
	}
	tests := []struct{ sample, winner, why string }{
		{"GET shop.example.com /cart", "shop/storefront rule 0", "Exact path on an exact host"},
		{"GET shop.example.com /static/app.css", "shop/storefront rule 1", "PathPrefix"},
		{"GET shop.example.com /static/../cart", "shop/storefront rule 0", "the path is normalised before matching"},
		{"GET shop.example.com /cart/items", "default/wildcard rule 0", "Exact does not match a longer path; the wildcard host is next"},
		{"GET blog.example.com /posts/1", "default/wildcard rule 0", "wildcard host"},
		{"GET example.com /", "default/catch-all rule 0", "a wildcard never matches the apex"},
		{"GET api.example.com /v2/users/42", "api/users rule 0", "regex path beats prefixes"},
		{"POST api.example.com /v1/orders [X-Canary: true]", "api/orders rule 0", "a method outranks header conditions"},
		{"GET api.example.com /v1/orders [X-Canary: true]", "api/orders rule 1", "header match"},
		{"GET api.example.com /v1/orders?debug=1", "api/orders rule 2", "query match"},
		{"GET api.example.com /v1/orders", "default/wildcard rule 0", "no rule on the exact host matches"},
		{"GET docs.example.com /guide", "docs/stable rule 0", "equal precedence: the older route wins over the name order"},
	}
	for _, tt := range tests {
		got, ok := winners[tt.sample]
		if !ok {
			t.Errorf("no demo line for %q", tt.sample)
			continue
		}
		if got != tt.winner {
			t.Errorf("%s: winner %q, want %q (%s)", tt.sample, got, tt.winner, tt.why)
		}
	}
}

func TestPrintMatchesNoRule(t *testing.T) {
	rules := []matcher.Rule[routeRef]{
		demoRule("a", "only", 0, 1, 1, []string{"a.example.com"}, matcher.Path{Kind: matcher.PathExact, Value: "/x"}),
	}
	reqs := []demoRequest{
		{Method: "GET", Host: "a.example.com", Path: "/x"},
		{Method: "GET", Host: "b.example.com", Path: "/x"},
	}
	var buf bytes.Buffer
	if err := printMatches(&buf, rules, reqs); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	flat := strings.Join(strings.Fields(out), " ")
	if !strings.Contains(flat, "GET a.example.com /x -> a/only rule 0") {
		t.Errorf("matching request not shown with its winner:\n%s", out)
	}
	if !strings.Contains(flat, "GET b.example.com /x -> 404 (no rule)") {
		t.Errorf("unmatched request not shown as 404:\n%s", out)
	}
}

func TestPrintMatchesBadRule(t *testing.T) {
	rules := []matcher.Rule[routeRef]{
		demoRule("a", "bad", 0, 1, 1, nil, matcher.Path{Kind: matcher.PathRegex, Value: "/("}),
	}
	var buf bytes.Buffer
	err := printMatches(&buf, rules, nil)
	if err == nil || !strings.Contains(err.Error(), "compile the demo routes") {
		t.Fatalf("error = %v, want a compile error", err)
	}
}

func TestRun(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		stdout   string // substring expected on stdout
		stderr   string // substring expected on stderr
		emptyOut bool   // nothing may go to stdout
		emptyErr bool   // nothing may go to stderr
	}{
		{args: []string{"frobnicate"}, code: 2, stderr: `unknown command "frobnicate"`, emptyOut: true},
		{args: nil, code: 2, stderr: "Usage:", emptyOut: true},
		{args: []string{"help"}, code: 0, stdout: "Commands:", emptyErr: true},
		{args: []string{"version"}, code: 0, stdout: "dev\n", emptyErr: true},
		{args: []string{"version", "extra"}, code: 2, stderr: `unexpected argument "extra"`, emptyOut: true},
		{args: []string{"version", "-nope"}, code: 2, stderr: "flag provided but not defined", emptyOut: true},
		{args: []string{"demo", "-h"}, code: 0, stderr: "Usage: tunnelgate demo", emptyOut: true},
		{args: []string{"demo"}, code: 0, stdout: demoNotice, emptyErr: true},
		// The proxy command is cmd/internal/proxycmd's, under this binary's name.
		{args: []string{"proxy", "-h"}, code: 0, stderr: "Usage: tunnelgate proxy [flags]", emptyOut: true},
		{args: []string{"proxy", "stray"}, code: 2, stderr: `tunnelgate proxy: unexpected argument "stray"`, emptyOut: true},
		{args: []string{"proxy"}, code: 2, stderr: "tunnelgate proxy: -config is required", emptyOut: true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(append([]string{"args"}, tt.args...), " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstderr: %s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout %q lacks %q", stdout.String(), tt.stdout)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.stderr)
			}
			if tt.emptyOut && stdout.Len() > 0 {
				t.Errorf("unexpected stdout: %q", stdout.String())
			}
			if tt.emptyErr && stderr.Len() > 0 {
				t.Errorf("unexpected stderr: %q", stderr.String())
			}
		})
	}
}

// Each command that has an admin listener takes -pprof, and refuses a
// mode it does not know before starting anything.
func TestPprofFlagRefusesUnknownModes(t *testing.T) {
	for _, args := range [][]string{
		{"proxy", "-pprof", "everyone", "-config", "../../examples/proxy/config.json"},
		{"controller", "-pprof", "everyone", "-config-token-file", "/nonexistent"},
		{"standalone", "-pprof", "everyone", "-f", "../../examples/quickstart"},
	} {
		var stdout, stderr bytes.Buffer
		want := `invalid value "everyone" for flag -pprof: want loopback, all or off`
		if code := run(args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", args, code, stderr.String(), want)
		}
	}
}
