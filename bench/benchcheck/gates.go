package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// gatesHeading is the markdown heading the gates table must follow.
const gatesHeading = "## Gates"

// gateColumns is the exact header row of the gates table. The tool refuses
// any other header so that a renamed or reordered column cannot silently
// shift values into the wrong field.
var gateColumns = []string{"gate", "package", "benchmark", "baseline", "max ratio", "max allocs/op"}

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

// parseGates reads the table under the "## Gates" heading. name is the file
// name used in error messages. Any malformed row is an error: a gate that
// cannot be read must not turn into a gate that always passes.
func parseGates(r io.Reader, name string) ([]gate, error) {
	sc := bufio.NewScanner(r)
	var (
		lineNo    int
		inSection bool // after the heading, before the next heading
		inTable   bool // inside the table's rows
		sawHeader bool
		sawSep    bool
		gates     []gate
	)
	seen := map[string]int{}
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
			if inTable {
				break // the first table ends at its first non-row line
			}
			continue // prose before the table
		}
		inTable = true
		cells, err := splitRow(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, lineNo, err)
		}
		switch {
		case !sawHeader:
			if !slices.Equal(cells, gateColumns) {
				return nil, fmt.Errorf("%s:%d: gates table header is %s, want %s",
					name, lineNo, joinRow(cells), joinRow(gateColumns))
			}
			sawHeader = true
		case !sawSep:
			if !isSeparator(cells) {
				return nil, fmt.Errorf("%s:%d: want the |---|---| row under the gates table header, got %s",
					name, lineNo, line)
			}
			sawSep = true
		default:
			g, err := parseGateRow(cells, lineNo)
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
		return nil, fmt.Errorf("%s: no %q heading; the gates table must follow it", name, gatesHeading)
	}
	if len(gates) == 0 {
		return nil, fmt.Errorf("%s: no gate rows in the table under %q; add at least one row %s",
			name, gatesHeading, joinRow(gateColumns))
	}
	return gates, nil
}

// parseGateRow turns the six cells of a data row into a gate.
func parseGateRow(cells []string, lineNo int) (gate, error) {
	if len(cells) != len(gateColumns) {
		return gate{}, fmt.Errorf("gate row has %d cells, want %d: %s", len(cells), len(gateColumns), joinRow(gateColumns))
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
