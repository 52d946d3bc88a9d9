package chart

import (
	"errors"
	"fmt"
	"sync"

	"debug/elf"
	"github.com/tunnelgate/tunnelgate/test/testproc"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// imageUID is the non-root user the image runs as and the chart's pods ask
// for (cloudflared's image uses the same).
const imageUID = 65532

// The image is the binary alone on a distroless base, so it must be static
// and run as the image's user. This builds it with the Dockerfile's own
// build command and checks both, without a container engine.
func TestDockerfileBuildsAStaticNonRootBinary(t *testing.T) {
	dockerfile := readDockerfile(t)
	user := regexp.MustCompile(`(?m)^USER (\d+):(\d+)$`).FindSubmatch(dockerfile)
	if user == nil || string(user[1]) != strconv.Itoa(imageUID) || string(user[2]) != strconv.Itoa(imageUID) {
		t.Fatalf("the Dockerfile's USER is not %d:%d, the user the chart's pods run as", imageUID, imageUID)
	}
	if !regexp.MustCompile(`(?m)^FROM gcr\.io/distroless/static[-\w]*:nonroot$`).Match(dockerfile) {
		t.Error("the runtime stage is not distroless static:nonroot")
	}

	out := tunnelgateBinary(t)
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary asks for a dynamic loader: it is not static")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}

	// Run it as the image's user, as the pods do.
	run := exec.Command(out, "version")
	if os.Getuid() == 0 {
		run.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: imageUID, Gid: imageUID}}
	}
	b, err := run.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "chart-test") {
		t.Errorf("tunnelgate version as uid %d: %v: %s", imageUID, err, b)
	}
}

func readDockerfile(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var binary struct {
	once sync.Once
	path string
	err  error
}

// tunnelgateBinary builds cmd/tunnelgate once per test run with the
// Dockerfile's own build command, so the binary is the one the image holds,
// into a directory any user may read.
func tunnelgateBinary(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() {
		build := regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=0 go build .*)$`).FindSubmatch(readDockerfile(t))
		if build == nil {
			binary.err = errors.New("the Dockerfile has no `RUN CGO_ENABLED=0 go build` line")
			return
		}
		dir, err := testproc.OwnedTempDir("tunnelgate-chart-bin-")
		if err != nil {
			binary.err = err
			return
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			binary.err = err
			return
		}
		out := filepath.Join(dir, "tunnelgate")
		line := strings.ReplaceAll(string(build[1]), "${VERSION}", "chart-test")
		line = strings.Replace(line, "-o /out/tunnelgate", "-o "+out, 1)
		if !strings.Contains(line, "-o "+out) {
			binary.err = fmt.Errorf("the Dockerfile's build line does not write -o /out/tunnelgate: %s", build[1])
			return
		}
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = "../.."
		if b, err := cmd.CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("%s: %w\n%s", line, err, b)
			return
		}
		binary.path = out
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}
