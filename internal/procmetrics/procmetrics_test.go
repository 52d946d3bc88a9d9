package procmetrics

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegisterServesStandardNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, mf := range mfs {
		got[mf.GetName()] = true
	}
	want := []string{"go_goroutines", "go_threads", "go_gc_duration_seconds", "go_memstats_heap_alloc_bytes"}
	if runtime.GOOS == "linux" {
		want = append(want, "process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds", "process_start_time_seconds")
	}
	for _, n := range want {
		if !got[n] {
			t.Errorf("%s not gathered", n)
		}
	}
	for n := range got {
		if !strings.HasPrefix(n, "go_") && !strings.HasPrefix(n, "process_") {
			t.Errorf("unexpected family %s", n)
		}
	}
	if err := Register(reg); err == nil {
		t.Error("a second Register on the same registry succeeded")
	}
}
