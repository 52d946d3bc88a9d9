//go:build !unix

// This file implements the process's CPU time for the benchmarks where there is no getrusage: none.

package standalone

import "time"

// cpuTime is 0: not to be had here.
func cpuTime() time.Duration { return 0 }
