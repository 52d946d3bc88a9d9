//go:build unix && !linux

// This file peeks at a pooled socket, on Unix systems other than Linux.

package http1

import "syscall"

func recvPeekWouldBlock(fd uintptr, b []byte) bool {
	_, _, err := syscall.Recvfrom(int(fd), b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
}

// recvPeekLeft reports whether the peer closed or reset the stream (see
// rawio.go).
func recvPeekLeft(fd uintptr, b []byte) bool {
	n, _, err := syscall.Recvfrom(int(fd), b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	if err != nil {
		return err != syscall.EAGAIN && err != syscall.EWOULDBLOCK
	}
	return n == 0
}
