package realnode

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// cgroupPrefix names the cgroup each node gets in every hierarchy (the
// kubelet's cgroupRoot), followed by the test process's pid and a count:
// the kubelet puts kubepods under it, runc every container. The machine's
// own cgroups are not touched; these are removed by Stop, or by the next
// Start once their test process is gone.
const cgroupPrefix = "tgrealnode-"

// cgroupMounts lists the mount points of the machine's cgroup hierarchies
// (v1 controllers, named ones and the v2 unified one of a hybrid setup).
func cgroupMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ... - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, x := range fields {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if t := fields[sep+1]; t == "cgroup" || t == "cgroup2" {
			mounts = append(mounts, fields[4])
		}
	}
	if len(mounts) == 0 {
		return nil, errors.New("realnode: no cgroup hierarchy is mounted")
	}
	return mounts, sc.Err()
}

// makeCgroupRoot creates name in every hierarchy; for cpuset, with the
// parent's CPUs and memory nodes, without which no process may join.
func makeCgroupRoot(name string) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	for _, m := range mounts {
		dir := filepath.Join(m, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("realnode: creating the node's cgroup: %w", err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			b, err := os.ReadFile(filepath.Join(m, f))
			if err != nil {
				continue // not the cpuset hierarchy
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				return fmt.Errorf("realnode: %s of the node's cgroup: %w", f, err)
			}
		}
	}
	return nil
}

// removeCgroupRoot kills whatever is left in name's cgroups and removes
// them, deepest first, in every hierarchy. Killed processes leave their
// cgroups a moment later, so it retries for up to timeout.
func removeCgroupRoot(name string, timeout time.Duration) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		var left []string
		for _, m := range mounts {
			root := filepath.Join(m, name)
			var dirs []string
			_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			sort.Sort(sort.Reverse(sort.StringSlice(dirs))) // children before parents
			for _, d := range dirs {
				for _, pid := range cgroupPIDs(d) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				if err := syscall.Rmdir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
					left = append(left, d)
				}
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("realnode: cgroups left after %v: %s", timeout, strings.Join(left, ", "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cgroupPIDs are the processes in one cgroup (not its children).
func cgroupPIDs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

// removeStaleCgroupRoots removes the node cgroups of test processes that
// died without cleaning up (a timeout's panic, a kill).
func removeStaleCgroupRoots() {
	mounts, err := cgroupMounts()
	if err != nil {
		return
	}
	stale := map[string]bool{}
	for _, m := range mounts {
		entries, _ := os.ReadDir(m)
		for _, e := range entries {
			rest, ok := strings.CutPrefix(e.Name(), cgroupPrefix)
			if !ok || !e.IsDir() {
				continue
			}
			pidText, _, _ := strings.Cut(rest, "-")
			pid, err := strconv.Atoi(pidText)
			if err != nil || pid == os.Getpid() || testproc.ProcessAlive(pid) {
				continue
			}
			stale[e.Name()] = true
		}
	}
	for name := range stale {
		_ = removeCgroupRoot(name, 5*time.Second)
	}
}

// findCgroup returns the first directory named leaf under the node's
// cgroup root in the pids hierarchy (or any hierarchy holding one).
func findCgroup(name, leaf string) (string, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return "", err
	}
	sort.SliceStable(mounts, func(i, j int) bool { return strings.HasSuffix(mounts[i], "/pids") })
	for _, m := range mounts {
		var found string
		_ = filepath.WalkDir(filepath.Join(m, name), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == leaf {
				found = p
				return fs.SkipAll
			}
			return nil
		})
		if found != "" {
			return found, nil
		}
	}
	return "", fmt.Errorf("realnode: no cgroup %s under %s", leaf, name)
}
