package fuzz

import (
	"fmt"
	"math/rand"
	"regexp"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/matcher"
)

// TestDifferentialWide complements FuzzMatchDifferential, whose alphabets
// are kept tiny for collisions: here tables are large and wide (hundreds of
// exact hostnames, path trie nodes with dozens of children, edge labels
// longer than a cache line's inline bytes) so the compiled layout's
// overflow paths are compared with the reference too. The random source is
// seeded, so a failure reproduces.
func TestDifferentialWide(t *testing.T) {
	iters := 60
	if testing.Short() {
		iters = 10
	}
	for seed := int64(1); seed <= int64(iters); seed++ {
		rng := rand.New(rand.NewSource(seed))
		rules, reqs := wideCase(rng)
		tab, err := matcher.Compile(rules)
		if err != nil {
			t.Fatalf("seed %d: Compile: %v", seed, err)
		}
		for _, req := range reqs {
			got, ok := tab.Match(req)
			_, want, wantOK := refMatch(rules, req)
			if !ok {
				got = -1
			}
			if ok != wantOK || got != want {
				t.Fatalf("seed %d: compiled matcher picked %d, reference picked %d\nrequest: %s\ncompiled: %s\nreference: %s\n(%d rules; rerun with the seed to dump them)",
					seed, got, want, dumpRequest(req), explainRule(rules, got, req), explainRule(rules, want, req), len(rules))
			}
		}
	}
}

func explainRule(rules []matcher.Rule[int], i int, req *matcher.Request) string {
	if i < 0 {
		return "(none)"
	}
	return strings.TrimSpace(dumpRules(rules[i:i+1])) + "\n  " + explain(rules, i, req)
}

const wideSegChars = "abcdefghijklmnopqrstuvwxyz0123456789-._~ABCDEFGHIJ"

func wideSegment(rng *rand.Rand) string {
	n := 1 + rng.Intn(3)
	if rng.Intn(4) == 0 {
		n = 10 + rng.Intn(20) // longer than an inline edge label
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = wideSegChars[rng.Intn(len(wideSegChars))]
	}
	return string(b)
}

func widePath(rng *rand.Rand, prefixes []string) string {
	p := ""
	if len(prefixes) > 0 && rng.Intn(2) == 0 {
		p = strings.TrimRight(prefixes[rng.Intn(len(prefixes))], "/")
	}
	for range 1 + rng.Intn(3) {
		p += "/" + wideSegment(rng)
	}
	if rng.Intn(4) == 0 {
		p += "/"
	}
	return p
}

func wideLabel(rng *rand.Rand) string {
	const c = "abcdefghij0123"
	n := 1 + rng.Intn(3)
	b := make([]byte, n)
	for i := range b {
		b[i] = c[rng.Intn(len(c))]
	}
	return string(b)
}

func wideCase(rng *rand.Rand) ([]matcher.Rule[int], []*matcher.Request) {
	// Host pool: nested names so wildcards chain.
	var names []string
	for range 20 + rng.Intn(200) {
		name := "com"
		for range 1 + rng.Intn(4) {
			name = wideLabel(rng) + "." + name
		}
		names = append(names, name)
	}
	var hosts []string
	for _, n := range names {
		hosts = append(hosts, n)
		if i := strings.IndexByte(n, '.'); i >= 0 && rng.Intn(3) == 0 {
			hosts = append(hosts, "*"+n[i:])
		}
	}
	var rules []matcher.Rule[int]
	var paths []string
	for i := range 50 + rng.Intn(300) {
		var r matcher.Rule[int]
		if rng.Intn(4) != 0 {
			for range 1 + rng.Intn(2) {
				r.Hostnames = append(r.Hostnames, hosts[rng.Intn(len(hosts))])
			}
		}
		p := widePath(rng, paths)
		paths = append(paths, p)
		switch rng.Intn(6) {
		case 0, 1, 2:
			r.Path = matcher.Path{Kind: matcher.PathPrefix, Value: p}
		case 3, 4:
			r.Path = matcher.Path{Kind: matcher.PathExact, Value: p}
		default:
			tails := []string{".*", "/[a-z]+", "(/.*)?", "", "[0-9a-f]*"}
			r.Path = matcher.Path{Kind: matcher.PathRegex, Value: regexp.QuoteMeta(p) + tails[rng.Intn(len(tails))]}
		}
		if rng.Intn(5) == 0 {
			r.Method = []string{"GET", "POST"}[rng.Intn(2)]
		}
		if rng.Intn(6) == 0 {
			r.Headers = []matcher.ValueMatch{{Name: "X-A", Value: fmt.Sprint(rng.Intn(2))}}
		}
		if rng.Intn(6) == 0 {
			r.Query = []matcher.ValueMatch{{Name: "q", Value: "[01]", Regex: true}}
		}
		r.Key = matcher.Key{Created: diffTimes[rng.Intn(len(diffTimes))], Namespace: "ns", Name: fmt.Sprint(rng.Intn(5)), Rule: rng.Intn(3), Match: rng.Intn(2)}
		r.Ref = i
		rules = append(rules, r)
	}
	var reqs []*matcher.Request
	for range 40 {
		var host string
		switch rng.Intn(4) {
		case 0:
			host = names[rng.Intn(len(names))]
		case 1:
			host = wideLabel(rng) + "." + names[rng.Intn(len(names))]
		case 2:
			host = strings.ToUpper(names[rng.Intn(len(names))]) + ".:443"
		default:
			host = wideLabel(rng) + "." + wideLabel(rng) + ".com"
		}
		r := rules[rng.Intn(len(rules))]
		var p string
		switch rng.Intn(4) {
		case 0:
			p = r.Path.Value
		case 1:
			p = paths[rng.Intn(len(paths))] + "/" + wideSegment(rng)
		case 2:
			p = paths[rng.Intn(len(paths))]
			p = p[:rng.Intn(len(p)+1)]
		default:
			p = widePath(rng, paths)
		}
		var lines [][2]string
		if rng.Intn(3) == 0 {
			lines = append(lines, [2]string{"X-A", fmt.Sprint(rng.Intn(2))})
		}
		q := ""
		if rng.Intn(3) == 0 {
			q = fmt.Sprintf("q=%d", rng.Intn(3))
		}
		reqs = append(reqs, refNewRequest(host, p, []string{"GET", "POST"}[rng.Intn(2)], lines, q))
	}
	return rules, reqs
}
