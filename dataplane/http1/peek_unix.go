//go:build unix && !linux

// This file peeks at a pooled socket, on Unix systems other than Linux.

package http1

import "syscall"

func recvPeekWouldBlock(fd uintptr, b []byte) bool {
	_, _, err := syscall.Recvfrom(int(fd), b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
}
