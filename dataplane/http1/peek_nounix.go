//go:build !unix

// This file stands in for the socket peek where there is none.

package http1

// recvPeekWouldBlock cannot look at the socket here: a pooled connection
// is then only checked for bytes its reader already holds.
func recvPeekWouldBlock(fd uintptr, b []byte) bool { return true }

// recvPeekLeft cannot look at the socket here: a client that leaves while
// its handler waits is noticed when the backend next sends.
func recvPeekLeft(fd uintptr, b []byte) bool { return false }
