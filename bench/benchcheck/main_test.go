package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const mainTable = `## Gates

| gate | package | benchmark | baseline | max ratio | max allocs/op |
| --- | --- | --- | --- | --- | --- |
| matcher-scale | ./matcher | BenchmarkMatch/routes=10000 | BenchmarkMatch/routes=10 | 2.0 | 0 |
| matcher-alloc-10 | ./matcher | BenchmarkMatch/routes=10 | - | - | 0 |
| slow | ./matcher | BenchmarkSlow | - | - | 0 |
| other | ./other | BenchmarkX/a | BenchmarkY | 1.5 | - |
`

// fakeGoTest records the calls and answers with canned output per package.
type fakeGoTest struct {
	out   map[string]string
	fail  map[string]bool
	calls [][]string
	dirs  []string
}

func (f *fakeGoTest) run(dir string, args []string) ([]byte, error) {
	f.calls = append(f.calls, args)
	f.dirs = append(f.dirs, dir)
	pkg := args[len(args)-1]
	if f.fail[pkg] {
		return []byte("# " + pkg + "\nbuild failed\n"), errors.New("exit status 1")
	}
	return []byte(f.out[pkg]), nil
}

// rounds is the go test calls of n rounds, each making calls in order.
func rounds(n int, calls ...[]string) [][]string {
	var all [][]string
	for range n {
		all = append(all, calls...)
	}
	return all
}

func writeTable(t *testing.T, table string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunCommandLines(t *testing.T) {
	path := writeTable(t, mainTable)
	fake := &fakeGoTest{out: map[string]string{
		"./matcher": cannedOutput,
		"./other":   "BenchmarkX/a-2 \t 10\t 30 ns/op\nBenchmarkY-2 \t 10\t 20 ns/op\n",
	}}
	var stdout, stderr bytes.Buffer
	code := run([]string{"-file", path, "-count", "3", "-benchtime", "50ms", "-pin=false"}, &stdout, &stderr, fake.run)

	// One go test per package in each of the 3 rounds, one run of each
	// benchmark, only the top-level benchmarks the gates need: the rounds
	// interleave the packages' runs.
	want := rounds(3,
		[]string{"go", "test", "-run", "^$", "-bench", "^(BenchmarkMatch|BenchmarkSlow)$", "-benchmem", "-count", "1", "-benchtime", "50ms", "-cpu", "1", "./matcher"},
		[]string{"go", "test", "-run", "^$", "-bench", "^(BenchmarkX|BenchmarkY)$", "-benchmem", "-count", "1", "-benchtime", "50ms", "-cpu", "1", "./other"},
	)
	if !slices.EqualFunc(fake.calls, want, slices.Equal) {
		t.Errorf("go test calls:\n got %q\nwant %q", fake.calls, want)
	}
	if fake.dirs[0] != filepath.Dir(path) {
		t.Errorf("go test ran in %q, want the table's directory %q", fake.dirs[0], filepath.Dir(path))
	}
	// BenchmarkSlow allocates, so its gate fails and so does the run.
	if code != 1 {
		t.Errorf("exit code %d, want 1\n%s", code, stdout.String())
	}
	out := stdout.String()
	for _, s := range []string{"matcher-scale", "PASS", "FAIL gate slow", "1 of 4 benchmark gates failed"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "FAIL gate matcher-scale") || strings.Contains(out, "FAIL gate other") {
		t.Errorf("passing gates reported as failing:\n%s", out)
	}
}

// TestRunMetricGates runs a file with both tables: go test is asked for the
// metric gates' benchmarks and baselines too, and all gates are reported
// in one table.
func TestRunMetricGates(t *testing.T) {
	const table = `## Gates

| gate | package | benchmark | baseline | max ratio | max allocs/op |
| --- | --- | --- | --- | --- | --- |
| matcher-scale | ./matcher | BenchmarkMatch/routes=10000 | BenchmarkMatch/routes=10 | 2.0 | 0 |

Gates on metrics the benchmarks report:

| gate | package | benchmark | baseline | metric | max |
| --- | --- | --- | --- | --- | --- |
| proxy-cpu | ./dataplane | BenchmarkProxy/impl=tunnelgate | BenchmarkProxy/impl=floor | cpu-ns/op | 1.0 |
| scrape-size | ./dataplane | BenchmarkScrape/routes=1000 | - | bytes/route | 420 |
| floor-vs-nocpu | ./dataplane | BenchmarkProxy/impl=floor | BenchmarkNoCPU | ns/op | 50 |
| slow-syscalls | ./matcher | BenchmarkSlow | - | syscalls/op | 6.5 |
`
	path := writeTable(t, table)
	fake := &fakeGoTest{out: map[string]string{"./matcher": cannedOutput, "./dataplane": metricOutput}}
	var stdout, stderr bytes.Buffer
	code := run([]string{"-file", path, "-count", "3", "-pin=false"}, &stdout, &stderr, fake.run)

	want := rounds(3,
		[]string{"go", "test", "-run", "^$", "-bench", "^(BenchmarkMatch|BenchmarkSlow)$", "-benchmem", "-count", "1", "-benchtime", "200ms", "-cpu", "1", "./matcher"},
		[]string{"go", "test", "-run", "^$", "-bench", "^(BenchmarkProxy|BenchmarkScrape|BenchmarkNoCPU)$", "-benchmem", "-count", "1", "-benchtime", "200ms", "-cpu", "1", "./dataplane"},
	)
	if !slices.EqualFunc(fake.calls, want, slices.Equal) {
		t.Errorf("go test calls:\n got %q\nwant %q", fake.calls, want)
	}
	// BenchmarkSlow's third run of each round's output reports no
	// syscalls/op: that gate fails.
	if code != 1 {
		t.Errorf("exit code %d, want 1\n%s", code, stdout.String())
	}
	out := stdout.String()
	for _, s := range []string{
		"GATE            VALUE            BUDGET           ALLOCS     RESULT",
		"matcher-scale   1.45x            2.50x            0 (max 0)  PASS",
		"proxy-cpu       1.20x            1.25x            -          PASS",
		"scrape-size     391 bytes/route  420 bytes/route  -          PASS",
		"floor-vs-nocpu  40.00x           62.50x           -          PASS",
		"slow-syscalls   ?                6.5 syscalls/op  -          FAIL",
		`FAIL gate slow-syscalls (line 14): BenchmarkSlow printed no syscalls/op in 3 of 9 runs; the benchmark must report it with b.ReportMetric(v, "syscalls/op")`,
		"1 of 5 benchmark gates failed",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

func TestRunAllPass(t *testing.T) {
	path := writeTable(t, strings.Join(strings.Split(mainTable, "\n")[:6], "\n")+"\n")
	fake := &fakeGoTest{out: map[string]string{"./matcher": cannedOutput}}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-file", path, "-pin=false"}, &stdout, &stderr, fake.run); code != 0 {
		t.Fatalf("exit code %d, want 0\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "all 2 benchmark gates passed") {
		t.Errorf("output:\n%s", stdout.String())
	}
	if got := fake.calls[0]; len(fake.calls) != 5 || got[slices.Index(got, "-count")+1] != "1" || got[slices.Index(got, "-benchtime")+1] != "200ms" {
		t.Errorf("defaults not used: %d calls, the first %q; want 5 rounds of one run at 200ms", len(fake.calls), got)
	}
}

func TestRunGoTestFails(t *testing.T) {
	path := writeTable(t, mainTable)
	fake := &fakeGoTest{
		out:  map[string]string{"./other": "BenchmarkX/a-2 \t 10\t 30 ns/op\nBenchmarkY-2 \t 10\t 20 ns/op\n"},
		fail: map[string]bool{"./matcher": true},
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-file", path}, &stdout, &stderr, fake.run); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "build failed") {
		t.Errorf("go test output not shown on failure:\n%s", stderr.String())
	}
	if !strings.Contains(stdout.String(), "FAIL gate matcher-scale (line 5): go test ./matcher failed: exit status 1") {
		t.Errorf("output:\n%s", stdout.String())
	}
	// A package that failed is not run again in the later rounds.
	n := 0
	for _, c := range fake.calls {
		if c[len(c)-1] == "./matcher" {
			n++
		}
	}
	if n != 1 || len(fake.calls) != 6 {
		t.Errorf("%d calls, %d of them ./matcher; want 6 and 1", len(fake.calls), n)
	}
}

func TestRunBadInput(t *testing.T) {
	var stdout, stderr bytes.Buffer
	fake := &fakeGoTest{}
	if code := run([]string{"-file", filepath.Join(t.TempDir(), "missing.md")}, &stdout, &stderr, fake.run); code != 1 {
		t.Errorf("missing file: exit code %d, want 1", code)
	}
	path := writeTable(t, "## Gates\n| gate | package |\n")
	stderr.Reset()
	if code := run([]string{"-file", path}, &stdout, &stderr, fake.run); code != 1 {
		t.Errorf("bad table: exit code %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "gates table header") {
		t.Errorf("stderr: %s", stderr.String())
	}
	if code := run([]string{"-margin", "0.5"}, &stdout, &stderr, fake.run); code != 2 {
		t.Errorf("bad margin: exit code %d, want 2", code)
	}
	if len(fake.calls) != 0 {
		t.Errorf("go test ran on bad input: %q", fake.calls)
	}
}

func TestPinPrefix(t *testing.T) {
	status := "Name:\tbenchcheck\nCpus_allowed:\tf\nCpus_allowed_list:\t%s\nMems_allowed:\t1\n"
	for _, tc := range []struct {
		list    string
		taskset bool
		want    []string
	}{
		{"0-3", true, []string{"taskset", "-c", "3"}},
		{"0,2,4-7", true, []string{"taskset", "-c", "7"}},
		{"5", true, []string{"taskset", "-c", "5"}},
		{"0-3", false, nil},
		{"garbage", true, nil},
	} {
		got := pinPrefix(strings.Replace(status, "%s", tc.list, 1), tc.taskset)
		if !slices.Equal(got, tc.want) {
			t.Errorf("list %q, taskset %v: got %q, want %q", tc.list, tc.taskset, got, tc.want)
		}
	}
	if got := pinPrefix("Name:\tx\n", true); got != nil {
		t.Errorf("no Cpus_allowed_list: got %q, want nil", got)
	}
}

// TestRunPins checks the wiring on this machine: pinned with taskset where
// that is possible, else unpinned with a warning. TestPinPrefix covers the
// decision itself.
func TestRunPins(t *testing.T) {
	path := writeTable(t, strings.Join(strings.Split(mainTable, "\n")[:6], "\n")+"\n")
	fake := &fakeGoTest{out: map[string]string{"./matcher": cannedOutput}}
	var stdout, stderr bytes.Buffer
	run([]string{"-file", path}, &stdout, &stderr, fake.run)
	got := fake.calls[0]
	if want := pinPrefix(readFile("/proc/self/status"), hasTaskset()); want != nil {
		if !slices.Equal(got[:3], want) || got[3] != "go" {
			t.Errorf("call = %q, want it to start with %q go test", got, want)
		}
		return
	}
	if got[0] != "go" || !strings.Contains(stderr.String(), "cannot pin") {
		t.Errorf("call = %q, stderr %q: want an unpinned go test and a warning", got, stderr.String())
	}
}
