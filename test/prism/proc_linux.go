package prism

import "syscall"

// sysProcAttr makes the kernel kill Prism when the test process dies, so a
// panic or a go test timeout leaves no node process behind. The signal
// fires when the thread that started the child exits; the Go runtime only
// ends threads of goroutines that exit while locked with
// runtime.LockOSThread, so do not call Start from such a goroutine.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// processAlive reports whether pid exists (signal 0 only checks).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
