// Package testmetrics holds a scrape of a tunnelgate process to
// docs/metrics.md, the one catalogue of the metrics both processes serve.
// The command tests scrape a running controller and proxy after traffic
// and hand the text to CheckCatalogue: every tunnelgate_, go_ and
// process_ metric served must be in the catalogue with its type and
// labels (the process's own section, or the section both share), and
// every metric catalogued for that process must be served. Series reads
// a scrape with the Prometheus text parser, as the series and values
// tests look for.
//
// Everything here is test code; only tests import the package.
package testmetrics

import (
	"bufio"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// runtimeSection is the section of the go_* and process_* families both
// processes serve.
const runtimeSection = "Runtime and process"

// mustServe are families dashboards, alerts and operators lean on: a
// scrape without them fails even if the catalogue lost them too.
var mustServe = []string{"go_goroutines", "go_gc_duration_seconds", "process_resident_memory_bytes", "process_cpu_seconds_total"}

// isCatalogued reports whether name is a family the catalogue covers.
func isCatalogued(name string) bool {
	return strings.HasPrefix(name, "tunnelgate_") || strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_")
}

// Entry is one row of a catalogue table.
type Entry struct {
	Type    string   // counter, gauge, histogram or summary
	Labels  []string // sorted
	Meaning string   // as written, Markdown
	// Subsection is the "### " heading the row is under within its
	// section, "" for none: the families a process serves only when a
	// flag asks (the proxy's -metrics-detail=route) are listed apart.
	Subsection string
}

// Catalogue reads the table under the heading "## <section>" of
// docs/metrics.md: | `name` | type | labels | meaning |. Tests that serve
// metrics from a table of their own hold it against this.
func Catalogue(t testing.TB, section string) map[string]Entry {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `((?:tunnelgate|go|process)_[a-z_]+)` \\| ([a-z]+) \\| ([^|]*) \\| (.*) \\|$")
	out := map[string]Entry{}
	in, sub := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in, sub = line == "## "+section, ""
			continue
		}
		if h, ok := strings.CutPrefix(line, "### "); ok {
			sub = h
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
		out[m[1]] = Entry{Type: m[2], Labels: labels, Meaning: m[4], Subsection: sub}
	}
	if len(out) == 0 {
		t.Fatalf("docs/metrics.md has no metrics under %q", section)
	}
	return out
}

// served reads Prometheus text: each catalogued family's type, and the
// label names its samples carry (less le and quantile, which histograms
// and summaries add).
func served(text string) map[string]Entry {
	out := map[string]Entry{}
	sample := regexp.MustCompile(`^([a-z_]+?)(_bucket|_sum|_count)?(\{[^}]*\})? `)
	label := regexp.MustCompile(`([a-zA-Z_]+)="`)
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" && isCatalogued(f[2]) {
			out[f[2]] = Entry{Type: f[3]}
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
			if l[1] != "le" && l[1] != "quantile" && !slices.Contains(c.Labels, l[1]) {
				c.Labels = append(c.Labels, l[1])
			}
		}
		slices.Sort(c.Labels)
		out[m[1]] = c
	}
	return out
}

// CheckCatalogue compares scrape, the Prometheus text of one process's
// /metrics, with the catalogue's section for that process ("Proxy",
// "Controller") and the runtime section both share. The rows under a
// "### " heading of the section are the families served only when a flag
// asks: those under the headings in served must be served, the others
// must not. (The runtime section's headings only group its rows.)
func CheckCatalogue(t testing.TB, section, scrape string, subsections ...string) {
	t.Helper()
	want, got := Catalogue(t, section), served(scrape)
	for name, e := range want {
		if e.Subsection != "" && !slices.Contains(subsections, e.Subsection) {
			if _, ok := got[name]; ok {
				t.Errorf("%s serves %s, which docs/metrics.md lists under %q only", section, name, e.Subsection)
				delete(got, name)
			}
			delete(want, name)
		}
	}
	maps.Copy(want, Catalogue(t, runtimeSection))
	for _, name := range mustServe {
		if _, ok := got[name]; !ok && (runtime.GOOS == "linux" || !strings.HasPrefix(name, "process_")) {
			t.Errorf("the %s does not serve %s", strings.ToLower(section), name)
		}
	}
	for name, g := range got {
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("%s serves %s (%s, labels %v), which docs/metrics.md lists neither under %q nor under %q", section, name, g.Type, g.Labels, section, runtimeSection)
		case w.Type != g.Type || !slices.Equal(w.Labels, g.Labels):
			t.Errorf("%s: served as %s with labels %v, catalogued as %s with %v", name, g.Type, g.Labels, w.Type, w.Labels)
		}
	}
	for name := range want {
		// Only Linux has every process_ family.
		if _, ok := got[name]; !ok && (runtime.GOOS == "linux" || !strings.HasPrefix(name, "process_")) {
			t.Errorf("docs/metrics.md lists %s under %q, and the %s does not serve it", name, section, strings.ToLower(section))
		}
	}
}

// moduleRoot is the directory of go.mod above the working directory,
// which go test sets to the package's.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run from the module")
		}
		dir = parent
	}
}
