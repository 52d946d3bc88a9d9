// This file implements the kernel path's absence where there is no splice(2): every direction copies through a buffer.

//go:build !linux

package pipe

type kernelPath struct{}

// newKernelPath returns nil: every direction copies through a buffer.
func newKernelPath(*pipe) *kernelPath { return nil }

// copy is never called; it moves nothing.
func (*kernelPath) copy(int) bool { return false }
