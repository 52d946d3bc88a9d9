package main

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docs/metrics.md is the one catalogue of the metrics both processes
// serve. The command tests scrape a running controller and proxy after
// traffic and hand the text here: every tunnelgate_ metric served must be
// in the catalogue with its type and labels, and every metric catalogued
// for that process must be served.

// catalogued is one row of a catalogue table.
type catalogued struct {
	typ    string
	labels []string
}

// catalogue reads the table under the heading "## <section>" of
// docs/metrics.md: | `name` | type | labels | meaning |.
func catalogue(t *testing.T, section string) map[string]catalogued {
	t.Helper()
	f, err := os.Open("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `(tunnelgate_[a-z_]+)` \\| ([a-z]+) \\| ([^|]*) \\|")
	out := map[string]catalogued{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## "+section
			continue
		}
		m := row.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		var labels []string
		for _, l := range strings.Split(m[3], ",") {
			if l = strings.Trim(strings.TrimSpace(l), "`"); l != "" && l != "-" {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		out[m[1]] = catalogued{typ: m[2], labels: labels}
	}
	if len(out) == 0 {
		t.Fatalf("docs/metrics.md has no metrics under %q", section)
	}
	return out
}

// served reads Prometheus text: each tunnelgate_ family's type, and the
// label names its samples carry.
func served(text string) map[string]catalogued {
	out := map[string]catalogued{}
	sample := regexp.MustCompile(`^([a-z_]+?)(_bucket|_sum|_count)?(\{[^}]*\})? `)
	label := regexp.MustCompile(`([a-zA-Z_]+)="`)
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" && strings.HasPrefix(f[2], "tunnelgate_") {
			out[f[2]] = catalogued{typ: f[3]}
			continue
		}
		m := sample.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		c, ok := out[m[1]]
		if !ok {
			continue
		}
		for _, l := range label.FindAllStringSubmatch(m[3], -1) {
			if l[1] != "le" && !slices.Contains(c.labels, l[1]) {
				c.labels = append(c.labels, l[1])
			}
		}
		slices.Sort(c.labels)
		out[m[1]] = c
	}
	return out
}

// checkCatalogue compares a scrape of one process with its section.
func checkCatalogue(t *testing.T, section, scrape string) {
	t.Helper()
	want, got := catalogue(t, section), served(scrape)
	for name, g := range got {
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("%s serves %s (%s, labels %v), which docs/metrics.md does not list under %q", section, name, g.typ, g.labels, section)
		case w.typ != g.typ || !slices.Equal(w.labels, g.labels):
			t.Errorf("%s: served as %s with labels %v, catalogued as %s with %v", name, g.typ, g.labels, w.typ, w.labels)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("docs/metrics.md lists %s under %q, and the %s does not serve it", name, section, strings.ToLower(section))
		}
	}
}

// The parsers themselves, on a small scrape and a small catalogue.
func TestServedParsesPrometheusText(t *testing.T) {
	got := served(`# HELP tunnelgate_a_total A.
# TYPE tunnelgate_a_total counter
tunnelgate_a_total{class="2xx",result="ok"} 3
tunnelgate_a_total{class="5xx",result="ok"} 0
# TYPE tunnelgate_h_seconds histogram
tunnelgate_h_seconds_bucket{route="r",le="0.1"} 1
tunnelgate_h_seconds_sum{route="r"} 0.05
tunnelgate_h_seconds_count{route="r"} 1
# TYPE go_goroutines gauge
go_goroutines 7
`)
	want := map[string]catalogued{
		"tunnelgate_a_total":   {typ: "counter", labels: []string{"class", "result"}},
		"tunnelgate_h_seconds": {typ: "histogram", labels: []string{"route"}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for n, w := range want {
		if g := got[n]; g.typ != w.typ || !slices.Equal(g.labels, w.labels) {
			t.Errorf("%s: %+v, want %+v", n, g, w)
		}
	}
}
