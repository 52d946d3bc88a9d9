// Command benchcheck enforces the benchmark gates written in BENCHMARKS.md.
//
// The gates are the rows of the markdown tables under the "## Gates"
// heading. The header of a table says what its rows gate; there are two
// kinds, and prose may separate them. The ratio table gates time and
// allocations:
//
//	| gate | package | benchmark | baseline | max ratio | max allocs/op |
//	| --- | --- | --- | --- | --- | --- |
//	| matcher-scale | ./matcher | BenchmarkMatch/routes=10000 | BenchmarkMatch/routes=10 | 2.0 | 0 |
//
// A row bounds how much slower a benchmark may be than a baseline from the
// same run (median ns/op over -count runs), and/or how many allocations it
// may make per operation. A ratio of two benchmarks measured together is
// used instead of absolute times so that gates mean the same on a laptop and
// on a CI machine. Write "-" in baseline and max ratio to gate only
// allocations, or in max allocs/op to gate only the ratio.
//
// The metric table gates one metric that go test prints after a value: a
// unit a benchmark reports itself with b.ReportMetric (cpu-ns/op,
// syscalls/op, bytes/route) or a standard one (ns/op, B/op, allocs/op):
//
//	| gate | package | benchmark | baseline | metric | max |
//	| --- | --- | --- | --- | --- | --- |
//	| proxy-cpu-vs-floor | ./dataplane | BenchmarkProxy/impl=tunnelgate | BenchmarkProxy/impl=floor | cpu-ns/op | 1.2 |
//	| scrape-size | ./metrics | BenchmarkScrape/routes=1000 | - | bytes/route | 420 |
//
// With a baseline, max bounds the ratio of the two medians of the metric,
// like max ratio does for ns/op: for example the CPU time per request
// against a baseline's. With baseline "-", max bounds the median of the
// metric itself: use it for counts and sizes that do not depend on timing,
// never for times.
//
// Gate names are unique across both tables. Any other table header in the
// section, or any malformed row, is an error naming the file and line: a
// gate that cannot be read never passes.
//
// benchcheck runs go test once per package in each of -count rounds, from
// the directory holding the file (the module root), asking only for the
// top-level benchmarks the gates need (benchmarks and baselines). A gate
// fails when:
//
//   - a ratio > max ratio (or max) × -margin (the margin absorbs timing
//     noise);
//   - any single run reports more allocs/op than max allocs/op (no margin:
//     allocation counts are deterministic);
//   - the median of a metric gated without a baseline is above max (no
//     margin: counts and sizes are not timing noise; the median, so that
//     one odd run does not decide);
//   - a run of the benchmark or baseline printed no value for the gated
//     metric (the benchmark must report it with b.ReportMetric);
//   - a benchmark or baseline printed no result, or go test failed.
//
// It prints a table of all gates and exits 1 if any failed. VALUE is a
// ratio ("1.12x") or a median with its unit ("391 bytes/route"); BUDGET is
// the largest that passes, the margin included for a ratio.
//
// Timing noise is fought three ways. Runs of a benchmark and its baseline
// interleave: each round runs every package's benchmarks once (go test
// -count 1), so a slow spell of the machine, which can last a minute on a
// small VM, slows both sides of a gate in the same rounds; go test's own
// -count would run each benchmark's runs back to back, and a spell could
// then fall on one side only. The median is compared. And the run has one
// CPU to itself: -cpu 1 (GOMAXPROCS=1) and, unless -pin=false, taskset on
// the last CPU this process may use. Unpinned, a benchmark that migrates
// between CPUs on a small VM loses its caches and can read 50% slower from
// one run to the next.
//
// Usage:
//
//	go run ./bench/benchcheck -file BENCHMARKS.md [-count 5] [-benchtime 200ms] [-margin 1.25] [-pin=false]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, goTest))
}

// runner runs a command line (argv[0] is the program) in dir and returns
// its combined output. Tests replace it with canned output.
type runner func(dir string, argv []string) ([]byte, error)

// goTest is the real runner.
func goTest(dir string, argv []string) ([]byte, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return buf.Bytes(), err
}

// run is main without the process: it returns the exit code.
func run(args []string, stdout, stderr io.Writer, goTest runner) int {
	fs := flag.NewFlagSet("benchcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("file", "BENCHMARKS.md", "markdown file with the `## Gates` tables")
	count := fs.Int("count", 5, "rounds, each running every benchmark once; the median of the runs is compared")
	benchtime := fs.String("benchtime", "200ms", "go test -benchtime for each run")
	margin := fs.Float64("margin", 1.25, "noise allowance: a ratio fails above its max × margin")
	verbose := fs.Bool("v", false, "print the raw go test output")
	pin := fs.Bool("pin", true, "run on one CPU with taskset, when available: a benchmark that migrates between CPUs loses its caches and its timing")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "benchcheck: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *count < 1 || !(*margin >= 1) {
		fmt.Fprintln(stderr, "benchcheck: -count must be >= 1 and -margin >= 1")
		return 2
	}

	f, err := os.Open(*file)
	if err != nil {
		fmt.Fprintf(stderr, "benchcheck: %v\n", err)
		return 1
	}
	gates, err := parseGates(f, *file)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "benchcheck: %v\n", err)
		return 1
	}
	dir := filepath.Dir(*file)
	var prefix []string
	if *pin {
		prefix = pinPrefix(readFile("/proc/self/status"), hasTaskset())
		if prefix == nil {
			fmt.Fprintln(stderr, "benchcheck: cannot pin to one CPU (no taskset or no Cpus_allowed_list); timings will be noisier")
		}
	}

	results := map[string]map[string][]sample{}
	runErr := map[string]error{}
	for round := 1; round <= *count; round++ {
		for _, pkg := range packages(gates) {
			if runErr[pkg] != nil {
				continue // failed in an earlier round: its gates fail anyway
			}
			argv := append(append(slices.Clone(prefix), "go", "test"), testArgs(pkg, gates, *benchtime)...)
			fmt.Fprintf(stderr, "benchcheck: round %d of %d: %s\n", round, *count, strings.Join(quoteArgs(argv), " "))
			out, err := goTest(dir, argv)
			if *verbose || err != nil {
				stderr.Write(out)
			}
			if err != nil {
				runErr[pkg] = fmt.Errorf("%w (output above)", err)
				delete(results, pkg)
				continue
			}
			samples, err := parseBenchOutput(bytes.NewReader(out))
			if err != nil {
				runErr[pkg] = fmt.Errorf("read output: %w", err)
				delete(results, pkg)
				continue
			}
			if results[pkg] == nil {
				results[pkg] = map[string][]sample{}
			}
			for name, ss := range samples {
				results[pkg][name] = append(results[pkg][name], ss...)
			}
		}
	}

	if failed := report(stdout, evaluate(gates, results, runErr, *margin)); failed > 0 {
		fmt.Fprintf(stdout, "\n%d of %d benchmark gates failed.\n", failed, len(gates))
		return 1
	}
	fmt.Fprintf(stdout, "\nall %d benchmark gates passed.\n", len(gates))
	return 0
}

// packages lists the gates' packages once each, in table order.
func packages(gates []gate) []string {
	var pkgs []string
	for _, g := range gates {
		if !slices.Contains(pkgs, g.Package) {
			pkgs = append(pkgs, g.Package)
		}
	}
	return pkgs
}

// testArgs builds the go test arguments of one round for one package: one
// run of each benchmark (-count 1). -bench gets an anchored alternation of
// the top-level benchmarks the package's gates of either table name (both
// benchmark and baseline), so that benchmarks no gate needs are not run.
// -cpu 1 runs them with GOMAXPROCS=1, so no other goroutine of the runtime
// competes with the one being measured.
func testArgs(pkg string, gates []gate, benchtime string) []string {
	var tops []string
	add := func(name string) {
		top, _, _ := strings.Cut(name, "/")
		top = regexp.QuoteMeta(top)
		if !slices.Contains(tops, top) {
			tops = append(tops, top)
		}
	}
	for _, g := range gates {
		if g.Package != pkg {
			continue
		}
		add(g.Benchmark)
		if g.ratioGated() {
			add(g.Baseline)
		}
	}
	return []string{
		"-run", "^$",
		"-bench", "^(" + strings.Join(tops, "|") + ")$",
		"-benchmem",
		"-count", "1",
		"-benchtime", benchtime,
		"-cpu", "1",
		pkg,
	}
}

// pinPrefix returns the command prefix that runs a program on the last CPU
// this process may use ("taskset -c 3"), given the text of
// /proc/self/status, or nil when that is unknown or taskset is missing.
// Reading the allowed list, not counting CPUs, respects container cpusets.
func pinPrefix(status string, haveTaskset bool) []string {
	if !haveTaskset {
		return nil
	}
	for line := range strings.Lines(status) {
		list, ok := strings.CutPrefix(line, "Cpus_allowed_list:")
		if !ok {
			continue
		}
		// e.g. "0-3", "0,2,4-7": the last number is the last CPU.
		list = strings.TrimSpace(list)
		last := list[strings.LastIndexAny(list, ",-")+1:]
		if _, err := strconv.Atoi(last); err != nil {
			return nil
		}
		return []string{"taskset", "-c", last}
	}
	return nil
}

func hasTaskset() bool {
	_, err := exec.LookPath("taskset")
	return err == nil
}

// readFile returns a file's text, or "" when it cannot be read.
func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// quoteArgs quotes arguments a shell would mangle, so the printed command
// can be pasted to reproduce a run.
func quoteArgs(args []string) []string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$|()*?[] ") {
			a = "'" + a + "'"
		}
		q[i] = a
	}
	return q
}
