//go:build !unix

package dataplane

import "time"

// processCPU is not measured here: cpu-ns/op reads 0.
func processCPU() time.Duration { return 0 }
