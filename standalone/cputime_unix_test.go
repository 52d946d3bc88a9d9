//go:build unix

// This file implements the process's CPU time for the benchmarks, where getrusage is.

package standalone

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and system CPU time so far; 0 if it
// cannot be had.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
