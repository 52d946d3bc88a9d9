//go:build unix

package dataplane

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used, user and system: the
// client, the proxy and the backend of a benchmark together.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
