package chart

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/tunnelgate/tunnelgate/ctrl/provision"
	"github.com/tunnelgate/tunnelgate/release/gobuild"
	"github.com/tunnelgate/tunnelgate/release/image"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// imageUID is the non-root user the image runs as and the chart's pods ask
// for (cloudflared's image uses the same).
const imageUID = image.UID

// The Dockerfile builds what `make image` builds: a scratch image holding
// the root filesystem of release/image, run as the same user with the same
// entrypoint and labels. Its build stage is run here, without a container
// engine, and its output compared with image.RootFS file by file; the
// binary must be static and run as the image's user.
func TestDockerfileBuildsTheReleaseImage(t *testing.T) {
	dockerfile := string(readDockerfile(t))
	final := dockerfile[strings.LastIndex(dockerfile, "\nFROM "):]
	for _, want := range []string{
		"\nFROM scratch\n",
		"\nCOPY --from=build /rootfs/ /\n",
		fmt.Sprintf("\nUSER %d:%d\n", image.UID, image.GID),
		fmt.Sprintf("\nENTRYPOINT [%q]\n", image.Entrypoint),
	} {
		if !strings.Contains(final, want) {
			t.Errorf("the Dockerfile's final stage lacks %q", strings.TrimSpace(want))
		}
	}
	if n := strings.Count(final, "\nCOPY ") + strings.Count(final, "\nADD ") + strings.Count(final, "\nRUN "); n != 1 {
		t.Errorf("the final stage has %d COPY, ADD or RUN lines; want the root filesystem's COPY alone", n)
	}
	for k, v := range image.Labels(image.Metadata{}) {
		want := fmt.Sprintf("%s=%q", k, v)
		switch k {
		case "org.opencontainers.image.version", "org.opencontainers.image.revision", "org.opencontainers.image.created":
			want = k + "=\"${"
		}
		if !strings.Contains(final, want) {
			t.Errorf("the Dockerfile's LABEL lacks %s (release/image has it)", want)
		}
	}

	tree := dockerRootFS(t)
	var binaries []image.Binary
	for _, name := range gobuild.Binaries() {
		data, err := os.ReadFile(filepath.Join(tree, name))
		if err != nil {
			t.Fatal(err)
		}
		binaries = append(binaries, image.Binary{Name: name, Data: data})
	}
	want := map[string]image.File{}
	for _, f := range image.RootFS(binaries) {
		want[f.Path] = f
	}
	err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == tree {
			return err
		}
		rel := "/" + filepath.ToSlash(strings.TrimPrefix(p, tree+string(filepath.Separator)))
		w, ok := want[rel]
		if !ok {
			t.Errorf("the Dockerfile's root filesystem has %s, which release/image's has not", rel)
			return nil
		}
		delete(want, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode() != w.Mode {
			t.Errorf("%s: mode %v in the Dockerfile's tree, %v in release/image's", rel, info.Mode(), w.Mode)
		}
		if !w.Mode.IsDir() {
			if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, w.Data) {
				t.Errorf("%s: other bytes in the Dockerfile's tree than in release/image's (%v)", rel, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range want {
		t.Errorf("the Dockerfile's root filesystem lacks %s", p)
	}

	for _, b := range binaries {
		checkStaticBinary(t, filepath.Join(tree, b.Name), "chart-test")
	}
	// The proxy containers' command is one of them.
	if !slices.Contains(gobuild.Binaries(), path.Base(provision.ProxyCommand)) || path.Dir(provision.ProxyCommand) != "/" {
		t.Errorf("the planes' proxy command %s is not a binary of the image (%v)", provision.ProxyCommand, gobuild.Binaries())
	}
}

// checkStaticBinary fails unless the binary at file is static and, run as
// the image's user as the pods run it, says it is version.
func checkStaticBinary(t *testing.T, file, version string) {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s asks for a dynamic loader: it is not static", file)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v", file, libs)
	}
	run := exec.Command(file, "version")
	if os.Getuid() == 0 {
		run.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: image.UID, Gid: image.GID}}
	}
	b, err := run.CombinedOutput()
	if err != nil || strings.TrimSpace(string(b)) != version {
		t.Errorf("%s version as uid %d: %v: %q, want %q", file, image.UID, err, b, version)
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
	once      sync.Once
	dir, path string
	err       error
}

// dockerRootFS runs the Dockerfile's build stage once per test run (its
// `go run ./release rootfs` line, for this machine's architecture, version
// chart-test) into a directory any user may read, and returns the root
// filesystem it wrote.
func dockerRootFS(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() {
		line := regexp.MustCompile(`(?m)^RUN (go run \./release rootfs .*)$`).FindStringSubmatch(string(readDockerfile(t)))
		if line == nil {
			binary.err = errors.New("the Dockerfile has no `RUN go run ./release rootfs` line")
			return
		}
		if binary.dir, binary.err = testproc.OwnedTempDir("tunnelgate-chart-bin-"); binary.err != nil {
			return
		}
		if binary.err = os.Chmod(binary.dir, 0o755); binary.err != nil {
			return
		}
		tree := filepath.Join(binary.dir, "rootfs")
		cmd := exec.Command("sh", "-c", strings.Replace(line[1], "-out /rootfs", "-out "+strconv.Quote(tree), 1))
		if !strings.Contains(cmd.Args[2], tree) {
			binary.err = fmt.Errorf("the Dockerfile's rootfs line does not write -out /rootfs: %s", line[1])
			return
		}
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "VERSION=chart-test", "TARGETARCH="+runtime.GOARCH)
		if b, err := cmd.CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("%s: %w\n%s", cmd.Args[2], err, b)
			return
		}
		binary.path = filepath.Join(tree, "tunnelgate")
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return filepath.Dir(binary.path)
}
