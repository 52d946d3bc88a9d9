//go:build !linux

package prism

import "syscall"

// sysProcAttr: only Linux has a parent-death signal; elsewhere Prism
// outlives a crashed test process, and Stop is the only cleanup.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// processAlive cannot tell elsewhere, so stale directories are kept.
func processAlive(int) bool { return true }
