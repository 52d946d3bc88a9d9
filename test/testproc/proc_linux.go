package testproc

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// SysProcAttr makes the kernel kill a child when the test process dies, so
// a panic or a go test timeout leaves nothing running. The signal fires
// when the thread that started the child exits; the Go runtime only ends
// threads of goroutines that exit while locked with runtime.LockOSThread,
// so do not start children from such a goroutine.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// ProcessAlive reports whether pid exists (signal 0 only checks).
func ProcessAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// IsZombie reports whether pid has exited and waits to be reaped (or is
// gone): for tests that check a child died.
func IsZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}
