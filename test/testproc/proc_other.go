//go:build !linux

package testproc

import "syscall"

// SysProcAttr: only Linux has a parent-death signal; elsewhere children
// outlive a crashed test process, and stopping them is the only cleanup.
func SysProcAttr() *syscall.SysProcAttr { return nil }

// ProcessAlive cannot tell elsewhere, so stale directories are kept.
func ProcessAlive(int) bool { return true }

// IsZombie cannot tell elsewhere.
func IsZombie(int) bool { return false }
