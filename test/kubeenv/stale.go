package kubeenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Each Env's directory is <TMPDIR>/kubeenv-*, with the test process's pid
// in ownerFile.
const (
	dirPrefix = "kubeenv-"
	ownerFile = "owner.pid"
)

// removeStaleDirs deletes the directories of Envs whose test process died
// without Stop (a panic, a timeout, a kill). Its children died with it
// (parent-death signal); only the files remain.
func removeStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue // being created, or not ours
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		_ = os.RemoveAll(d)
	}
}
