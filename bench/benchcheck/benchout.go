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

// parseBenchLine parses one result line; ok is false for any other line.
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
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return "", sample{}, false
		}
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

// median returns the median ns/op of samples; they must not be empty. The
// median, not the mean, so that one run disturbed by the machine does not
// decide the gate.
func median(samples []sample) float64 {
	ns := make([]float64, len(samples))
	for i, s := range samples {
		ns[i] = s.NsPerOp
	}
	slices.Sort(ns)
	n := len(ns)
	if n%2 == 1 {
		return ns[n/2]
	}
	return (ns[n/2-1] + ns[n/2]) / 2
}
