// This file implements an OpenSSH server on loopback, run unprivileged, and the ssh client to reach it.

package realbackend

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// SSHD is Debian bookworm's sshd (`make backends`) serving one user on
// 127.0.0.1, with a host key and an authorized key of its own made for
// the test, and a configuration that turns off what a test does not
// need (PAM, a pid file, the message of the day). It runs as the test's
// user and lets that user in. Run by root, sshd insists on its privilege
// separation user (sshd) and its empty directory (/run/sshd), which a
// machine without OpenSSH's server lacks: it then runs in a mount
// namespace of its own, where /etc/passwd is a copy with that user added
// and /run a fresh tmpfs, so nothing of the machine changes.
type SSHD struct {
	// Name is "sshd" and its Debian version.
	Name string
	// Addr is where it listens: "127.0.0.1:PORT".
	Addr string
	// User is who it lets in, with the key in IdentityFile.
	User         string
	IdentityFile string

	tree string
	log  *logFile
}

// StartSSHD starts an SSHD and returns once it listens; it is stopped
// when the test ends. It fails the test when `make backends` has not
// run.
func StartSSHD(t testing.TB) SSHD {
	t.Helper()
	tree, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	me, err := user.Current()
	if err != nil {
		t.Fatalf("realbackend: who runs the test: %v", err)
	}
	dir, err := testproc.OwnedTempDir(dirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := SSHD{Name: "sshd " + packageVersion(tree, "openssh-server"), User: me.Username, IdentityFile: filepath.Join(dir, "id"), tree: tree}
	keygen := func(path string) {
		out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", path).CombinedOutput()
		if err != nil {
			t.Fatalf("realbackend: ssh-keygen: %v\n%s", err, out)
		}
	}
	keygen(filepath.Join(dir, "host"))
	keygen(s.IdentityFile)
	pub, err := os.ReadFile(s.IdentityFile + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	conf := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(conf, []byte(sshdConf(dir, port)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(tree, "usr/sbin/sshd"), "-D", "-e", "-f", conf)
	if os.Getuid() == 0 {
		if cmd, err = asRoot(dir, cmd); err != nil {
			t.Fatal(err)
		}
	}
	cmd.Env = childEnv(libraryPath(tree))
	cmd.Dir = dir
	s.log = &logFile{path: filepath.Join(dir, "sshd.log")}
	if err := s.start(t, cmd); err != nil {
		t.Fatal(err)
	}
	return s
}

// sshdConf is sshd's configuration: one address, the test's keys.
func sshdConf(dir string, port int) string {
	return fmt.Sprintf(`ListenAddress 127.0.0.1
Port %[2]d
HostKey %[1]s/host
AuthorizedKeysFile %[1]s/authorized_keys
PidFile none
UsePAM no
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PrintMotd no
`, dir, port)
}

// privsepUser is the line of sshd's privilege separation user in the
// copy of /etc/passwd root's sshd reads: nobody's IDs, no login.
const privsepUser = "sshd:x:65534:65534:sshd privilege separation:/run/sshd:/usr/sbin/nologin\n"

// asRoot is cmd run by a shell in a mount namespace of its own (private:
// no mount in it reaches the machine's), which first mounts, there
// only, a copy of /etc/passwd that adds sshd's privilege separation
// user over the machine's, and a tmpfs on /run holding its empty
// /run/sshd.
func asRoot(dir string, cmd *exec.Cmd) (*exec.Cmd, error) {
	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return nil, fmt.Errorf("realbackend: sshd as root: %w", err)
	}
	if !strings.HasSuffix(string(passwd), "\n") {
		passwd = append(passwd, '\n')
	}
	copyPath := filepath.Join(dir, "passwd")
	if err := os.WriteFile(copyPath, append(passwd, privsepUser...), 0o644); err != nil {
		return nil, err
	}
	script := `mount --bind "$1" /etc/passwd && mount -t tmpfs -o mode=755 tmpfs /run && mkdir -m 755 /run/sshd && shift && exec "$@"`
	wrapped := exec.Command("/bin/sh", append([]string{"-c", script, "sh", copyPath}, cmd.Args...)...)
	// Go makes the new namespace's mounts private before the shell runs.
	wrapped.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	return wrapped, nil
}

// start starts cmd (sshd -D -e, or asRoot's wrapper of it) and waits
// until sshd listens.
func (s *SSHD) start(t testing.TB, cmd *exec.Cmd) error {
	f, err := os.OpenFile(s.log.path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o666)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	if own := testproc.SysProcAttr(); own != nil {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = own
		} else {
			unshare := cmd.SysProcAttr.Unshareflags
			*cmd.SysProcAttr = *own
			cmd.SysProcAttr.Unshareflags = unshare
		}
	}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("realbackend: start %s: %w", s.Name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("end of %s's log (%s):\n%s", s.Name, s.Addr, tail(s.log.String(), 30))
		}
	})
	deadline := time.Now().Add(StartTimeout)
	for {
		if c, err := net.Dial("tcp", s.Addr); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("realbackend: %s exited before listening on %s; its log:\n%s", s.Name, s.Addr, tail(s.log.String(), 30))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("realbackend: %s not listening on %s within %s; its log:\n%s", s.Name, s.Addr, StartTimeout, tail(s.log.String(), 30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Command is the unpacked ssh client logging in to s's user through
// addr ("host:port": the server itself, or a proxy in front of it) and
// running remote, with the test's key and without reading or writing
// any file of the machine's user (no config, no known hosts).
func (s SSHD) Command(ctx context.Context, addr string, remote ...string) *exec.Cmd {
	host, port, _ := net.SplitHostPort(addr)
	args := []string{"-F", "/dev/null", "-p", port, "-i", s.IdentityFile, "-l", s.User,
		"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10", host}
	cmd := exec.CommandContext(ctx, filepath.Join(s.tree, "usr/bin/ssh"), append(args, remote...)...)
	cmd.Env = childEnv(libraryPath(s.tree))
	cmd.WaitDelay = 2 * time.Second
	return cmd
}
