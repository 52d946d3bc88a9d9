// Command floor serves the floor relay (package floorrelay), the least an
// HTTP/1.1 proxy written in Go does for a GET, as bench/load/run.sh's
// "floor" target: measured beside nginx and tunnelgate, it shows what of
// the proxy's cost over nginx's is the Go runtime's floor and what is the
// proxy's own.
package main

import (
	"flag"
	"log"
	"net"

	"github.com/tunnelgate/tunnelgate/test/floorrelay"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8082", "address to serve on")
	backend := flag.String("backend", "127.0.0.1:8081", "the backend's host:port")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("floor: relaying %s to %s", *listen, *backend)
	log.Fatal(floorrelay.New(*backend).Serve(ln))
}
