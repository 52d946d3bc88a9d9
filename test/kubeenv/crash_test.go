package kubeenv

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// TestChildrenDieWithTestProcess runs this test binary again as a test that
// starts an Env and panics without Stop, then checks that etcd and the
// apiserver died with it and that the next Start removes its directory.
func TestChildrenDieWithTestProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux only")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashingHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KUBEENV_CRASH_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	var dir string
	var log strings.Builder
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if rest, ok := strings.CutPrefix(sc.Text(), "child pid "); ok {
			pid, _ := strconv.Atoi(rest)
			pids = append(pids, pid)
		}
		if rest, ok := strings.CutPrefix(sc.Text(), "dir "); ok {
			dir = rest
		}
	}
	if err := cmd.Wait(); err == nil {
		t.Fatalf("helper did not crash; output:\n%s", log.String())
	}
	if len(pids) != 2 || dir == "" {
		t.Fatalf("helper reported pids %v dir %q; output:\n%s", pids, dir, log.String())
	}
	for _, pid := range pids {
		if !testproc.WaitDead(pid, 10*time.Second) {
			t.Fatalf("child %d outlived the crashed test process", pid)
		}
	}
	testproc.RemoveStaleDirs(dirPrefix)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("stale directory %s not removed: %v", dir, err)
	}
}

// TestCrashingHelper is the crashing half of the test above; it does
// nothing in a normal run.
func TestCrashingHelper(t *testing.T) {
	if os.Getenv("KUBEENV_CRASH_HELPER") == "" {
		return
	}
	e, err := Start(t.Context(), Options{NoCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range e.procs {
		fmt.Printf("child pid %d\n", p.cmd.Process.Pid)
	}
	fmt.Printf("dir %s\n", e.Dir)
	panic("crash on purpose, without Stop")
}
