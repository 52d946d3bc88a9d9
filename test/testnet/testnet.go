// Package testnet has the loopback servers tests build hostile backends
// from (an accept loop that hands each connection to a function of the
// test, which may send whatever bytes it wants), and the small client
// tests read an admin or config endpoint with (GetWithToken).
package testnet

import (
	"net"
	"testing"
)

// Accept serves each connection ln accepts with serve, in a goroutine
// of its own, closing the connection when serve returns. It returns when
// ln is closed.
func Accept(ln net.Listener, serve func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			serve(c)
		}()
	}
}

// RawServer listens on a loopback port and serves it with Accept until
// the test ends. It returns the address.
func RawServer(t testing.TB, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go Accept(ln, serve)
	return ln.Addr().String()
}
