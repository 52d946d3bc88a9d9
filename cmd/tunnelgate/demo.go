// This file implements the demo: which rule of an embedded route set wins
// each sample request.

package main

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tunnelgate/tunnelgate/matcher"
)

// The demo stands in for standalone mode until that exists: it shows the
// router's Gateway API precedence on a fixed route set, without a cluster.

// demoNotice is the first line of the demo, so nobody mistakes it for a
// server.
const demoNotice = "standalone mode is not built yet; this demo compiles an embedded route set with the router and shows which rule wins each sample request"

// routeRef names the HTTPRoute rule a match resolves to; it is the Ref the
// demo table returns.
type routeRef struct {
	Namespace, Name string
	Rule            int
}

func (r routeRef) String() string {
	return fmt.Sprintf("%s/%s rule %d", r.Namespace, r.Name, r.Rule)
}

// demoRule builds one rule whose Key and Ref agree on the route's identity.
// month and day date the route's creation in 2026, which breaks ties.
func demoRule(ns, name string, rule int, month time.Month, day int, hosts []string, path matcher.Path) matcher.Rule[routeRef] {
	return matcher.Rule[routeRef]{
		Hostnames: hosts,
		Path:      path,
		Key:       matcher.Key{Created: time.Date(2026, month, day, 0, 0, 0, 0, time.UTC), Namespace: ns, Name: name, Rule: rule},
		Ref:       routeRef{Namespace: ns, Name: name, Rule: rule},
	}
}

// demoRules is the embedded route set: one rule per HTTPRoute match.
func demoRules() []matcher.Rule[routeRef] {
	prefix := func(v string) matcher.Path { return matcher.Path{Kind: matcher.PathPrefix, Value: v} }
	exact := func(v string) matcher.Path { return matcher.Path{Kind: matcher.PathExact, Value: v} }
	regex := func(v string) matcher.Path { return matcher.Path{Kind: matcher.PathRegex, Value: v} }
	shop := []string{"shop.example.com"}
	api := []string{"api.example.com"}
	docs := []string{"docs.example.com"}

	// Every host, every path: the lowest precedence there is.
	catchAll := demoRule("default", "catch-all", 0, time.January, 1, nil, prefix("/"))
	cart := demoRule("shop", "storefront", 0, time.January, 5, shop, exact("/cart"))
	static := demoRule("shop", "storefront", 1, time.January, 5, shop, prefix("/static"))
	// Any subdomain of example.com, but not example.com itself.
	wildcard := demoRule("default", "wildcard", 0, time.January, 2, []string{"*.example.com"}, prefix("/"))
	users := demoRule("api", "users", 0, time.February, 1, api, regex(`/v[0-9]+/users/[0-9]+`))
	writes := demoRule("api", "orders", 0, time.February, 3, api, prefix("/v1"))
	writes.Method = http.MethodPost
	canary := demoRule("api", "orders", 1, time.February, 3, api, prefix("/v1"))
	canary.Headers = []matcher.ValueMatch{{Name: "X-Canary", Value: "true"}}
	debug := demoRule("api", "orders", 2, time.February, 3, api, prefix("/v1"))
	debug.Query = []matcher.ValueMatch{{Name: "debug", Value: "1"}}
	// Two routes that tie on every request criterion: the older one wins,
	// although "next" sorts before "stable" by name.
	next := demoRule("docs", "next", 0, time.March, 1, docs, prefix("/"))
	stable := demoRule("docs", "stable", 0, time.January, 10, docs, prefix("/"))

	return []matcher.Rule[routeRef]{catchAll, cart, static, wildcard, users, writes, canary, debug, next, stable}
}

// demoRequest is one sample request.
type demoRequest struct {
	Method, Host, Path, RawQuery string
	Header                       http.Header
}

// demoRequests are the samples, each chosen to show one precedence rule.
func demoRequests() []demoRequest {
	canary := http.Header{"X-Canary": {"true"}}
	return []demoRequest{
		{Method: "GET", Host: "shop.example.com", Path: "/cart"},                          // Exact path
		{Method: "GET", Host: "shop.example.com", Path: "/static/app.css"},                // PathPrefix
		{Method: "GET", Host: "shop.example.com", Path: "/static/../cart"},                // dot segments removed first
		{Method: "GET", Host: "shop.example.com", Path: "/cart/items"},                    // Exact misses: falls to the wildcard host
		{Method: "GET", Host: "blog.example.com", Path: "/posts/1"},                       // wildcard host
		{Method: "GET", Host: "example.com", Path: "/"},                                   // the wildcard does not cover the apex
		{Method: "GET", Host: "api.example.com", Path: "/v2/users/42"},                    // regex path
		{Method: "POST", Host: "api.example.com", Path: "/v1/orders", Header: canary},     // method outranks headers
		{Method: "GET", Host: "api.example.com", Path: "/v1/orders", Header: canary},      // header match
		{Method: "GET", Host: "api.example.com", Path: "/v1/orders", RawQuery: "debug=1"}, // query match
		{Method: "GET", Host: "api.example.com", Path: "/v1/orders"},                      // no api rule matches: wildcard
		{Method: "GET", Host: "docs.example.com", Path: "/guide"},                         // tie broken by creation time
	}
}

// demo prints the notice, compiles demoRules and prints the winner of each
// demoRequest.
func demo(w io.Writer) error {
	fmt.Fprintln(w, demoNotice)
	fmt.Fprintln(w)
	return printMatches(w, demoRules(), demoRequests())
}

// printMatches compiles rules and prints one aligned line per request:
// method, host, path?query, headers, and the winning rule or "404 (no rule)".
func printMatches(w io.Writer, rules []matcher.Rule[routeRef], reqs []demoRequest) error {
	table, err := matcher.Compile(rules)
	if err != nil {
		return fmt.Errorf("compile the demo routes: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "%d rules compiled:\n\n", len(rules))
	for _, r := range rules {
		fmt.Fprintf(tw, "  %s\t%s\t%s %s\t%s\tcreated %s\n", r.Ref, hostText(r.Hostnames), r.Path.Kind, r.Path.Value,
			conditionText(r), r.Key.Created.Format(time.DateOnly))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d sample requests:\n\n", len(reqs))
	for _, d := range reqs {
		target := d.Path
		if d.RawQuery != "" {
			target += "?" + d.RawQuery
		}
		winner := "404 (no rule)"
		ref, ok := table.Match(&matcher.Request{
			Host:     d.Host,
			Path:     matcher.NormalizePath(d.Path),
			Method:   d.Method,
			Header:   d.Header,
			RawQuery: d.RawQuery,
		})
		if ok {
			winner = ref.String()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t-> %s\n", d.Method, d.Host, target, headerText(d.Header), winner)
	}
	return tw.Flush()
}

// hostText shows a rule's hostnames.
func hostText(hosts []string) string {
	if len(hosts) == 0 {
		return "(any host)"
	}
	return strings.Join(hosts, ",")
}

// conditionText shows a rule's method, header and query conditions.
func conditionText(r matcher.Rule[routeRef]) string {
	var parts []string
	if r.Method != "" {
		parts = append(parts, "method "+r.Method)
	}
	for _, h := range r.Headers {
		parts = append(parts, "header "+h.Name+"="+h.Value)
	}
	for _, q := range r.Query {
		parts = append(parts, "query "+q.Name+"="+q.Value)
	}
	return strings.Join(parts, ", ")
}

// headerText shows a sample's headers, since some samples differ only there.
func headerText(h http.Header) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[name] {
			parts = append(parts, name+": "+v)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
