// This file implements the package's example: a passthrough listener.

package sni_test

import (
	"io"
	"log"
	"net"
	"strings"

	"github.com/tunnelgate/tunnelgate/dataplane/sni"
)

// A passthrough: read the hello, choose a backend by its server name,
// replay the bytes read, then relay both ways. The client's TLS session
// is the backend's: the proxy holds no certificate.
func ExampleReadConn() {
	backends := map[string]string{"app.example.com": "10.0.0.7:8443"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			hello, replay, err := sni.ReadConn(c, make([]byte, 0, 2048), sni.Limits{})
			if err != nil {
				return // sni.ErrNotTLS, a timeout, ...
			}
			addr, ok := backends[strings.ToLower(hello.ServerName)] // names are sent as the client wrote them
			if !ok {
				return
			}
			b, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer b.Close()
			if _, err := b.Write(replay); err != nil {
				return
			}
			go io.Copy(b, c)
			io.Copy(c, b)
		}()
	}
}
