// Command podapps is the programs of test/podapps in one static binary,
// for images that test/realnode builds: `podapps echo`, `podapps
// protocols`, `podapps cloudflared ARGS...`.
package main

import (
	"os"

	"github.com/tunnelgate/tunnelgate/test/podapps"
)

func main() { os.Exit(podapps.Main(os.Args[1:])) }
