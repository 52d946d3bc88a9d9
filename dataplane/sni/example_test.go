// This file implements the package's example: routing a connection by its hello.

package sni_test

import (
	"crypto/tls"
	"fmt"
	"net"
	"strings"

	"github.com/tunnelgate/tunnelgate/dataplane/sni"
)

// A passthrough reads the hello, chooses a backend by its server name,
// and hands the bytes read to the relay as the first to send the backend
// (package pipe's Run example does both). The client's TLS session is
// the backend's: the proxy holds no certificate.
func ExampleReadConn() {
	backends := map[string]string{"app.example.com": "10.0.0.7:8443"}
	client, proxy := net.Pipe()
	go tls.Client(client, &tls.Config{ServerName: "App.Example.com"}).Handshake() // it fails when the proxy hangs up

	hello, replay, err := sni.ReadConn(proxy, make([]byte, 0, 2048), sni.Limits{})
	proxy.Close()
	if err != nil {
		fmt.Println(err) // sni.ErrNotTLS, a timeout, ...
		return
	}
	addr := backends[strings.ToLower(hello.ServerName)] // names come as the client wrote them
	fmt.Println("server name:", hello.ServerName)
	fmt.Println("backend:", addr)
	fmt.Println("the hello's bytes to replay:", len(replay) > 0)
	// Output:
	// server name: App.Example.com
	// backend: 10.0.0.7:8443
	// the hello's bytes to replay: true
}
