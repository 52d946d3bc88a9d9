// This file implements the waiter's absence where the pipe does not look
// at sockets: every buffer-path direction keeps its buffer.

//go:build !linux

package pipe

import "net"

// waiter is never made here.
type waiter struct{ full int }

// init reports false: the direction keeps its buffer.
func (*waiter) init(net.Conn, **[bufSize]byte) bool { return false }

func (*waiter) held([]byte) (int, error) { return 0, nil }
func (*waiter) wait() error              { return nil }
