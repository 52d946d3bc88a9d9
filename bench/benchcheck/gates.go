package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// gatesHeading is the markdown heading the gates tables must follow.
const gatesHeading = "## Gates"

// gateColumns is the exact header row of the ratio table, whose rows bound
// a ns/op ratio and/or allocs/op. metricColumns is that of the metric
// table, whose rows bound a metric go test printed (a b.ReportMetric unit
// or a standard one): the ratio of its medians, or its median. The header
// decides how a table's rows are read, and the tool refuses any other header
// so that a renamed or reordered column cannot silently shift values into
// the wrong field, nor a misspelled table drop its gates.
var (
	gateColumns   = []string{"gate", "package", "benchmark", "baseline", "max ratio", "max allocs/op"}
	metricColumns = []string{"gate", "package", "benchmark", "baseline", "metric", "max"}
)

// gateTable is one kind of table in the gates section: its header and how
// to read one of its rows.
type gateTable struct {
	columns []string
	parse   func(cells []string, lineNo int) (gate, error)
}

var gateTables = []gateTable{
	{gateColumns, parseGateRow},
	{metricColumns, parseMetricRow},
}

// procsSuffix matches the "-N" GOMAXPROCS suffix `go test -bench` appends to
// benchmark names. A gate's own benchmark names may not end that way, or the
// suffix could not be told apart from the name.
var procsSuffix = regexp.MustCompile(`-[0-9]+$`)

// gate is one row of either gates table.
type gate struct {
	Name      string // unique gate name, for messages
	Package   string // package pattern passed to go test, e.g. "./matcher"
	Benchmark string // full benchmark name, sub-benchmarks included
	Baseline  string // benchmark the ratio is taken against; "" when no ratio is gated
	// Metric is the unit a row of the metric table gates, as go test
	// prints it (cpu-ns/op, bytes/route); "" for a row of the ratio
	// table, whose ratio is of ns/op.
	Metric    string
	MaxRatio  float64 // bound on the ratio, before the margin; 0 when no ratio is gated
	MaxValue  float64 // bound on the median of Metric; used when valueGated
	MaxAllocs int64   // -1 when allocations are not gated
	Line      int     // line in the markdown file, for messages
}

// ratioGated says whether the gate bounds median(Benchmark)/median(Baseline)
// of its metric.
func (g gate) ratioGated() bool { return g.Baseline != "" }

// valueGated says whether the gate bounds the median of its metric itself:
// a row of the metric table without a baseline.
func (g gate) valueGated() bool { return g.Metric != "" && g.Baseline == "" }

// metric is the unit the gate's ratio or bound is of.
func (g gate) metric() string {
	if g.Metric == "" {
		return "ns/op"
	}
	return g.Metric
}

// allocsGated says whether the gate bounds allocs/op.
func (g gate) allocsGated() bool { return g.MaxAllocs >= 0 }

// parseGates reads the tables under the "## Gates" heading: a ratio table,
// a metric table, or both, in any order, with prose around them. name is
// the file name used in error messages. Any malformed row is an error: a
// gate that cannot be read must not turn into a gate that always passes.
func parseGates(r io.Reader, name string) ([]gate, error) {
	sc := bufio.NewScanner(r)
	var (
		lineNo    int
		inSection bool       // after the heading, before the next heading
		table     *gateTable // the table being read; nil between tables
		headerAt  int        // line of table's header
		sawSep    bool
		gates     []gate
	)
	seen := map[string]int{}
	// endTable checks that the table ending here had its separator row.
	endTable := func() error {
		if table != nil && !sawSep {
			return fmt.Errorf("%s:%d: gates table header has no |---|---| row under it", name, headerAt)
		}
		table = nil
		return nil
	}
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if !inSection {
			if line == gatesHeading {
				inSection = true
			}
			continue
		}
		if strings.HasPrefix(line, "#") {
			break // next heading ends the section
		}
		if !strings.HasPrefix(line, "|") {
			// Prose; the first line that is not a row ends a table.
			if err := endTable(); err != nil {
				return nil, err
			}
			continue
		}
		cells, err := splitRow(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, lineNo, err)
		}
		switch {
		case table == nil:
			for i := range gateTables {
				if slices.Equal(cells, gateTables[i].columns) {
					table = &gateTables[i]
				}
			}
			if table == nil {
				return nil, fmt.Errorf("%s:%d: gates table header is %s, want %s (ns/op ratio, allocs/op) or %s (a metric go test prints)",
					name, lineNo, joinRow(cells), joinRow(gateColumns), joinRow(metricColumns))
			}
			headerAt, sawSep = lineNo, false
		case !sawSep:
			if !isSeparator(cells) {
				return nil, fmt.Errorf("%s:%d: want the |---|---| row under the gates table header, got %s",
					name, lineNo, line)
			}
			sawSep = true
		default:
			g, err := table.parse(cells, lineNo)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, lineNo, err)
			}
			if prev, dup := seen[g.Name]; dup {
				return nil, fmt.Errorf("%s:%d: gate %q already defined on line %d; gate names must be unique",
					name, lineNo, g.Name, prev)
			}
			seen[g.Name] = lineNo
			gates = append(gates, g)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if !inSection {
		return nil, fmt.Errorf("%s: no %q heading; the gates tables must follow it", name, gatesHeading)
	}
	if err := endTable(); err != nil {
		return nil, err
	}
	if len(gates) == 0 {
		return nil, fmt.Errorf("%s: no gate rows in the tables under %q; add at least one row %s or %s",
			name, gatesHeading, joinRow(gateColumns), joinRow(metricColumns))
	}
	return gates, nil
}

// parseCommon reads the cells both tables begin with: gate, package,
// benchmark, baseline; columns is the table's header, for the cell count.
func parseCommon(cells, columns []string, lineNo int) (gate, error) {
	if len(cells) != len(columns) {
		return gate{}, fmt.Errorf("gate row has %d cells, want %d: %s", len(cells), len(columns), joinRow(columns))
	}
	g := gate{
		Name:      cells[0],
		Package:   cells[1],
		Benchmark: cells[2],
		MaxAllocs: -1,
		Line:      lineNo,
	}
	if g.Name == "" || g.Name == "-" {
		return gate{}, fmt.Errorf("gate row has no gate name")
	}
	if g.Package == "" || g.Package == "-" || strings.ContainsAny(g.Package, " \t") {
		return gate{}, fmt.Errorf("gate %s: package %q is not a package path like ./matcher", g.Name, g.Package)
	}
	if err := checkBenchName(g.Benchmark); err != nil {
		return gate{}, fmt.Errorf("gate %s: benchmark: %w", g.Name, err)
	}
	if base := cells[3]; base != "-" {
		if err := checkBenchName(base); err != nil {
			return gate{}, fmt.Errorf("gate %s: baseline: %w", g.Name, err)
		}
		g.Baseline = base
	}
	return g, nil
}

// parseGateRow turns the six cells of a ratio table row into a gate.
func parseGateRow(cells []string, lineNo int) (gate, error) {
	g, err := parseCommon(cells, gateColumns, lineNo)
	if err != nil {
		return gate{}, err
	}
	if ratio := cells[4]; ratio != "-" {
		v, err := strconv.ParseFloat(ratio, 64)
		if err != nil || !(v > 0) || v > 1e9 {
			return gate{}, fmt.Errorf("gate %s: max ratio %q is not a positive number (or - for none)", g.Name, ratio)
		}
		g.MaxRatio = v
	}
	if (g.Baseline == "") != (g.MaxRatio == 0) {
		return gate{}, fmt.Errorf("gate %s: baseline and max ratio go together; set both or make both -", g.Name)
	}
	if allocs := cells[5]; allocs != "-" {
		v, err := strconv.ParseInt(allocs, 10, 64)
		if err != nil || v < 0 {
			return gate{}, fmt.Errorf("gate %s: max allocs/op %q is not a whole number >= 0 (or - for none)", g.Name, allocs)
		}
		g.MaxAllocs = v
	}
	if !g.ratioGated() && !g.allocsGated() {
		return gate{}, fmt.Errorf("gate %s gates nothing: set a baseline and max ratio, or max allocs/op", g.Name)
	}
	return g, nil
}

// parseMetricRow turns the six cells of a metric table row into a gate:
// with a baseline, max bounds the ratio of the metric's medians; with
// baseline -, it bounds the metric's median.
func parseMetricRow(cells []string, lineNo int) (gate, error) {
	g, err := parseCommon(cells, metricColumns, lineNo)
	if err != nil {
		return gate{}, err
	}
	if err := checkUnit(cells[4]); err != nil {
		return gate{}, fmt.Errorf("gate %s: metric: %w", g.Name, err)
	}
	g.Metric = cells[4]
	max := cells[5]
	v, err := strconv.ParseFloat(max, 64)
	if g.Baseline != "" {
		if err != nil || !(v > 0) || v > 1e9 {
			return gate{}, fmt.Errorf("gate %s: max %q is not a positive number; with a baseline it bounds the ratio of the two medians of %s",
				g.Name, max, g.Metric)
		}
		g.MaxRatio = v
	} else {
		if err != nil || !(v >= 0) || math.IsInf(v, 1) {
			return gate{}, fmt.Errorf("gate %s: max %q is not a number >= 0; with baseline - it bounds the median of %s",
				g.Name, max, g.Metric)
		}
		g.MaxValue = v
	}
	return g, nil
}

// checkUnit rejects a metric column go test could never print after a
// value: it prints a unit as one field, and b.ReportMetric refuses units
// with spaces.
func checkUnit(s string) error {
	if s == "" || s == "-" {
		return fmt.Errorf("no unit; write it as go test prints it after a value, e.g. cpu-ns/op or bytes/route")
	}
	if strings.ContainsAny(s, " \t") {
		return fmt.Errorf("%q contains a space; a unit is one word, e.g. cpu-ns/op", s)
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return fmt.Errorf("%q is a number, not a unit; are the metric and max columns swapped?", s)
	}
	return nil
}

// checkBenchName rejects names go test could never print as written.
func checkBenchName(s string) error {
	if !strings.HasPrefix(s, "Benchmark") {
		return fmt.Errorf("%q does not start with Benchmark", s)
	}
	if strings.ContainsAny(s, " \t") {
		return fmt.Errorf("%q contains a space; go test prints spaces in names as _", s)
	}
	if procsSuffix.MatchString(s) {
		return fmt.Errorf("%q ends in -<number>, which cannot be told apart from the GOMAXPROCS suffix", s)
	}
	return nil
}

// splitRow splits "| a | b |" into trimmed cells. Cells wrapped in backticks
// are unwrapped, so `./matcher` and ./matcher mean the same.
func splitRow(line string) ([]string, error) {
	if !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil, fmt.Errorf("table row %q does not end with |", line)
	}
	parts := strings.Split(line[1:len(line)-1], "|")
	cells := make([]string, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if len(p) >= 2 && p[0] == '`' && p[len(p)-1] == '`' {
			p = p[1 : len(p)-1]
		}
		cells[i] = p
	}
	return cells, nil
}

// isSeparator reports whether cells form a markdown header separator row.
func isSeparator(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, ":-") != "" || !strings.Contains(c, "-") {
			return false
		}
	}
	return len(cells) > 0
}

func joinRow(cells []string) string {
	return "| " + strings.Join(cells, " | ") + " |"
}
