// This file implements the package's example: a passthrough listener.

package pipe_test

import (
	"context"
	"log"
	"net"
	"strings"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/pipe"
	"github.com/tunnelgate/tunnelgate/dataplane/sni"
)

// A TLS passthrough: route on the hello's server name, then let the pipe
// replay the hello to the backend and relay both ways. Cancelling ctx
// (the route removed) ends every pipe at once.
func ExampleRun() {
	ctx := context.Background()
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
			hello, replay, err := sni.ReadConn(c, make([]byte, 0, 2048), sni.Limits{})
			addr, ok := backends[strings.ToLower(hello.ServerName)]
			if err != nil || !ok {
				c.Close()
				return
			}
			b, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				c.Close()
				return
			}
			res := pipe.Run(ctx, c, b, pipe.Options{Preface: replay})
			log.Printf("passthrough %q: %s, %d bytes up, %d down in %v",
				hello.ServerName, res.End, res.ClientToBackend, res.BackendToClient, res.Duration)
		}()
	}
}
