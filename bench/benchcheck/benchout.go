package main

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"strings"
)

// sample is one benchmark result line, i.e. one of the -count runs.
type sample struct {
	NsPerOp     float64
	AllocsPerOp float64
	HasAllocs   bool // false when the run was not made with -benchmem
	// Metrics holds every value of the line by its unit as go test prints
	// it: ns/op, B/op and allocs/op as well as the benchmark's own
	// b.ReportMetric units (cpu-ns/op, bytes/route, ...).
	Metrics map[string]float64
}

// value returns the sample's value for a unit, and whether the line had one.
func (s sample) value(unit string) (float64, bool) {
	if v, ok := s.Metrics[unit]; ok {
		return v, true
	}
	switch unit {
	case "ns/op": // every counted line has it
		return s.NsPerOp, true
	case "allocs/op":
		return s.AllocsPerOp, s.HasAllocs
	}
	return 0, false
}

// parseBenchOutput collects the result lines of `go test -bench` output by
// benchmark name, with the GOMAXPROCS suffix removed so that the names match
// the gates table on any machine. Everything else (PASS, ok, goos:, logs) is
// ignored. A line reads:
//
//	BenchmarkMatch/routes=10-2   	 9876543	       121.5 ns/op	       0 B/op	       0 allocs/op
func parseBenchOutput(r io.Reader) (map[string][]sample, error) {
	out := map[string][]sample{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		name, s, ok := parseBenchLine(sc.Text())
		if ok {
			out[name] = append(out[name], s)
		}
	}
	return out, sc.Err()
}

// parseBenchLine parses one result line; ok is false for any other line,
// and for a result line without ns/op.
func parseBenchLine(line string) (name string, s sample, ok bool) {
	f := strings.Fields(line)
	// name, iterations, then (value, unit) pairs.
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
		return "", sample{}, false
	}
	if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
		return "", sample{}, false
	}
	hasNs := false
	s.Metrics = make(map[string]float64, (len(f)-2)/2)
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return "", sample{}, false
		}
		s.Metrics[f[i+1]] = v
		switch f[i+1] {
		case "ns/op":
			s.NsPerOp, hasNs = v, true
		case "allocs/op":
			s.AllocsPerOp, s.HasAllocs = v, true
		}
	}
	if !hasNs {
		return "", sample{}, false
	}
	return procsSuffix.ReplaceAllString(f[0], ""), s, true
}

// values returns the unit's value in each of samples that has one, and how
// many samples have none.
func values(samples []sample, unit string) (vs []float64, missing int) {
	for _, s := range samples {
		if v, ok := s.value(unit); ok {
			vs = append(vs, v)
		} else {
			missing++
		}
	}
	return vs, missing
}

// median returns the median of vs; it must not be empty. The median, not
// the mean, so that one run disturbed by the machine does not decide the
// gate.
func median(vs []float64) float64 {
	vs = slices.Clone(vs)
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}
