package matcher

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// This file generates a realistic rule set and request mix for benchmarks
// and allocation tests: many tenants' hosts and wildcards, REST-style
// prefixes and exact paths, about 5% regex paths, and some method, header
// and query matches. The same seed gives the same set.

var (
	words     = []string{"api", "app", "web", "shop", "auth", "admin", "static", "media", "docs", "status", "billing", "search", "users", "orders", "cart", "login", "assets", "img", "v1", "v2", "v3", "graphql", "healthz", "metrics", "events", "reports", "files", "upload", "download", "settings"}
	benchHdrs = []string{"X-Version", "X-Tenant", "X-Canary", "Accept"}
	methods   = []string{"GET", "POST", "PUT", "DELETE"}
)

type ruleSet struct {
	rules    []Rule[int]
	requests []Request
}

// generate returns routes HTTPRoutes' worth of rules (1 to 4 matches each)
// and nreq requests, most of which should match something. A bigger set
// means more hosts and zones, not more rules per host: about 3 routes per
// hostname, 50 hostnames per DNS zone, one catch-all route per 1000.
func generate(routes, nreq int, seed uint64) ruleSet {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	hostCount := max(2, routes/3)
	zoneCount := max(1, hostCount/50)
	zone := func() string { return fmt.Sprintf("zone%d.com", rng.IntN(zoneCount)) }
	host := func() string {
		i := rng.IntN(hostCount)
		return fmt.Sprintf("%s%d.zone%d.com", words[i%len(words)], i, i%zoneCount)
	}
	segments := func(n int) string {
		p := ""
		for range n {
			p += "/" + pick(words)
		}
		return p
	}

	var set ruleSet
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for route := range routes {
		var hostnames []string
		switch x := rng.IntN(100); {
		case route%1000 == 3: // catch-all routes
		case x < 5:
			hostnames = []string{"*." + zone()}
		case x < 10: // deeper wildcards under a tenant
			hostnames = []string{fmt.Sprintf("*.t%d.%s", rng.IntN(10), zone())}
		case x < 20:
			hostnames = []string{host(), host()}
		default:
			hostnames = []string{host()}
		}
		key := Key{
			Created:   base.Add(time.Duration(rng.IntN(1e6)) * time.Second),
			Namespace: fmt.Sprintf("team-%d", rng.IntN(40)),
			Name:      fmt.Sprintf("route-%d", route),
		}
		for m := range 1 + rng.IntN(4) {
			rule := Rule[int]{Hostnames: hostnames, Key: key, Ref: len(set.rules)}
			rule.Key.Rule, rule.Key.Match = m/2, m%2
			switch x := rng.IntN(100); {
			case x < 5:
				rule.Path = Path{PathRegex, segments(1) + `/[a-z0-9-]+/` + pick(words) + `(/.*)?`}
			case x < 45:
				rule.Path = Path{PathExact, segments(1 + rng.IntN(3))}
			case x < 95:
				rule.Path = Path{PathPrefix, segments(1 + rng.IntN(3))}
			default:
				rule.Path = Path{PathPrefix, "/"}
			}
			if rng.IntN(10) == 0 {
				rule.Method = pick(methods)
			}
			if rng.IntN(12) == 0 {
				rule.Headers = []ValueMatch{{Name: pick(benchHdrs), Value: pick(words)}}
			}
			if rng.IntN(20) == 0 {
				rule.Query = []ValueMatch{{Name: pick(words), Value: pick(words)}}
			}
			set.rules = append(set.rules, rule)
		}
	}

	// Requests: mostly aimed at a rule (a path under its value), some at
	// wildcard tenants, some at hosts nobody serves.
	for range nreq {
		rule := set.rules[rng.IntN(len(set.rules))]
		req := Request{Method: pick(methods), Header: http.Header{}}
		switch {
		case len(rule.Hostnames) == 0 || rng.IntN(20) == 0:
			req.Host = fmt.Sprintf("unknown%d.%s", rng.IntN(1000), zone())
		case rule.Hostnames[0][0] == '*':
			req.Host = fmt.Sprintf("x%d%s", rng.IntN(100), rule.Hostnames[0][1:])
		default:
			req.Host = rule.Hostnames[0]
		}
		switch rule.Path.Kind {
		case PathExact:
			req.Path = rule.Path.Value
		case PathPrefix:
			req.Path = rule.Path.Value + segments(rng.IntN(3))
		case PathRegex:
			req.Path = segments(1) + "/item-42/" + pick(words)
		}
		if rule.Method != "" && rng.IntN(4) > 0 {
			req.Method = rule.Method
		}
		for _, h := range rule.Headers {
			req.Header.Set(h.Name, h.Value)
		}
		req.Header.Set("User-Agent", "bench")
		if len(rule.Query) > 0 {
			req.RawQuery = "page=2&" + rule.Query[0].Name + "=" + rule.Query[0].Value
		}
		req.Path = NormalizePath(req.Path)
		set.requests = append(set.requests, req)
	}
	// A proxy matches a freshly parsed request, never one sharing strings
	// with the rules. Give the requests their own copy of their strings, in
	// one block in request order (as a parser's buffers would be), so that
	// request data costs the same at every table size and in every run.
	var arena strings.Builder
	for _, req := range set.requests {
		arena.WriteString(req.Host + req.Path + req.RawQuery)
	}
	own := arena.String()
	for i := range set.requests {
		req := &set.requests[i]
		req.Host, own = own[:len(req.Host)], own[len(req.Host):]
		req.Path, own = own[:len(req.Path)], own[len(req.Path):]
		req.RawQuery, own = own[:len(req.RawQuery)], own[len(req.RawQuery):]
	}
	return set
}

// proxyShaped returns the rules of routes HTTPRoutes as the proxy files
// them into one listener's table (dataplane/configwatch's benchmark
// document): one hostname per route, a rule matching /api with a header
// and a rule matching every path. variant changes the header's value, to
// make a route's new version.
func proxyShaped(routes int, variant string) []Rule[int] {
	rules := make([]Rule[int], 0, 2*routes)
	for r := range routes {
		rules = append(rules, proxyRoute(r, variant)...)
	}
	return rules
}

// proxyRoute is route r of proxyShaped, its Refs 2r and 2r+1.
func proxyRoute(r int, variant string) []Rule[int] {
	key := Key{Created: time.Unix(int64(r), 0), Namespace: fmt.Sprintf("team-%d", r%100), Name: fmt.Sprintf("app-%d", r)}
	hostnames := []string{fmt.Sprintf("app-%d.g%d.example.com", r, r%50)}
	api := Rule[int]{Hostnames: hostnames, Path: Path{PathPrefix, "/api"}, Key: key, Ref: 2 * r,
		Headers: []ValueMatch{{Name: "x-canary", Value: "1" + variant}}}
	every := Rule[int]{Hostnames: hostnames, Path: EveryPath, Key: key, Ref: 2*r + 1}
	every.Key.Rule = 1
	return []Rule[int]{api, every}
}

// prepareAll prepares rules as a proxy does, with one Preparer.
func prepareAll[T any](rules []Rule[T]) ([]*Prepared[T], error) {
	var p Preparer[T]
	out := make([]*Prepared[T], len(rules))
	for i := range rules {
		pr, err := p.Prepare(&rules[i])
		if err != nil {
			return nil, err
		}
		out[i] = pr
	}
	return out, nil
}
