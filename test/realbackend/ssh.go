// This file implements an OpenSSH server on loopback, run unprivileged, and the ssh client to reach it.

package realbackend

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// SSHD is Debian bookworm's sshd (`make backends`) serving one user on
// 127.0.0.1, with a host key and an authorized key of its own made for
// the test; its configuration turns off everything that needs root (PAM,
// privilege separation's chroot, a pid file), so it runs as an ordinary
// user: the test's, or, when the test runs as root, a user of the
// machine that has a login shell (sshd as root needs a user sshd and
// /run/sshd, which a machine without OpenSSH's server lacks).
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
// run, and skips it only when the test runs as root on a machine with no
// other user that has a login shell.
func StartSSHD(t testing.TB) SSHD {
	t.Helper()
	tree, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	login, cred, err := sshUser()
	if err != nil {
		t.Skip(err)
	}
	dir, err := testproc.OwnedTempDir(dirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	client := t.TempDir() // the client's key, which the client's user owns
	s := SSHD{Name: "sshd " + packageVersion(tree, "openssh-server"), User: login.Username, IdentityFile: filepath.Join(client, "id"), tree: tree}
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
	sshd, ld := filepath.Join(tree, "usr/sbin/sshd"), libraryPath(tree)
	if cred != nil {
		// The cache is root's (its home is private): sshd and the
		// libraries unpacked beside it are copied where its user reads.
		if sshd, ld, err = stage(tree, dir); err != nil {
			t.Fatal(err)
		}
		if err := chownTree(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	s.log = &logFile{path: filepath.Join(dir, "sshd.log")}
	if err := s.start(t, sshd, ld, conf, cred); err != nil {
		t.Fatal(err)
	}
	return s
}

// sshdConf is sshd's configuration: one address, the test's keys, and
// nothing that needs root.
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

// sshUser is who sshd runs as and lets in: the test's user, or, as root,
// the first other user of the machine with a login shell (listed in
// /etc/shells), with the credential to run sshd as.
func sshUser() (*user.User, *syscall.Credential, error) {
	me, err := user.Current()
	if err != nil {
		return nil, nil, fmt.Errorf("realbackend: who runs the test: %w", err)
	}
	if os.Getuid() != 0 {
		return me, nil, nil
	}
	shells, _ := os.ReadFile("/etc/shells")
	valid := strings.Fields(string(shells))
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return nil, nil, fmt.Errorf("realbackend: sshd runs unprivileged, and as root the test needs another user with a login shell: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) != 7 || !slices.Contains(valid, fields[6]) || strings.HasSuffix(fields[6], "nologin") {
			continue
		}
		uid, err1 := strconv.Atoi(fields[2])
		gid, err2 := strconv.Atoi(fields[3])
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		u := &user.User{Username: fields[0], Uid: fields[2], Gid: fields[3], HomeDir: fields[5]}
		return u, &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, nil, errors.New("realbackend: sshd runs unprivileged, and as root the test needs another user with a login shell in /etc/passwd; there is none")
}

// chownTree gives dir and what it holds to uid and gid.
func chownTree(dir string, uid, gid int) error {
	return filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
}

// stage copies the tree's sshd and unpacked libraries into dir, and
// returns the copy's path and LD_LIBRARY_PATH.
func stage(tree, dir string) (sshd, ld string, err error) {
	cp := func(from, to string, mode os.FileMode) error {
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, mode)
	}
	sshd = filepath.Join(dir, "sshd")
	if err := cp(filepath.Join(tree, "usr/sbin/sshd"), sshd, 0o755); err != nil {
		return "", "", err
	}
	libs := filepath.Join(dir, "lib")
	if err := os.MkdirAll(libs, 0o755); err != nil {
		return "", "", err
	}
	for _, d := range strings.Split(libraryPath(tree), ":") {
		if !strings.HasPrefix(d, tree) {
			continue // the environment's own
		}
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if strings.Contains(e.Name(), ".so") && (e.Type().IsRegular() || e.Type()&os.ModeSymlink != 0) {
				if err := cp(filepath.Join(d, e.Name()), filepath.Join(libs, e.Name()), 0o644); err != nil {
					return "", "", err
				}
			}
		}
	}
	return sshd, libs, nil
}

// start runs sshd -D -e and waits until it listens.
func (s *SSHD) start(t testing.TB, sshd, ld, conf string, cred *syscall.Credential) error {
	f, err := os.OpenFile(s.log.path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o666)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(sshd, "-D", "-e", "-f", conf)
	cmd.Env = childEnv(ld)
	cmd.Dir = filepath.Dir(conf)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = testproc.SysProcAttr()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = cred
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
