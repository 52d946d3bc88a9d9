// Package podapps holds the programs tests run in Pods: an echo backend,
// a backend of every protocol a Gateway routes, and the cloudflared
// stand-in (test/connector). cmd/podapps builds them into one static
// binary that test/realnode puts in FROM-scratch images, each image's
// entrypoint naming its program, for the real node, where Pods run from
// images; the kubelet stand-in (test/kubelet) runs Echo as its built-in
// image.
//
//	podapps echo                  EchoResponse for every request (Echo)
//	podapps protocols             HTTP, WebSocket, server-sent events, gRPC (Protocols)
//	podapps cloudflared ARGS...   the connector stand-in with cloudflared's command line
package podapps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tunnelgate/tunnelgate/test/connector"
)

// Main runs the program args[0] names with the rest of args, and returns
// its exit code.
func Main(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "podapps: name a program: echo, protocols or cloudflared")
		return 2
	}
	switch args[0] {
	case "echo":
		return Echo(args[1:])
	case "protocols":
		return Protocols(args[1:])
	case "cloudflared":
		// Paths in the ingress document are the container's own.
		return connector.Main(nil)(args[1:])
	}
	fmt.Fprintf(os.Stderr, "podapps: unknown program %q: echo, protocols or cloudflared\n", args[0])
	return 2
}

// EchoResponse is what Echo answers, as JSON.
type EchoResponse struct {
	Pod       string              `json:"pod"`       // $HOSTNAME, the Pod's name
	Namespace string              `json:"namespace"` // $NAMESPACE, if the Pod sets it
	Method    string              `json:"method"`
	Host      string              `json:"host"`
	Path      string              `json:"path"`
	Headers   map[string][]string `json:"headers"`
	Remote    string              `json:"remote"` // the client's address: a proxy's Pod IP and port
}

// Echo is an HTTP backend. It answers every request on $PORT (default
// 8080) with an EchoResponse; a request with the query parameter
// sleep=D (a Go duration) is answered after D, so a test can have
// requests in flight when a Pod on the way stops. On SIGTERM it keeps
// serving for $DRAIN (a Go duration, default 0) before it shuts down
// gracefully, as a preStop sleep would, so a rollout loses no request
// while the endpoint change travels to the proxies.
func Echo([]string) int {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	drain := time.Duration(0)
	if d := os.Getenv("DRAIN"); d != "" {
		var err error
		if drain, err = time.ParseDuration(d); err != nil {
			fmt.Fprintf(os.Stderr, "echo: DRAIN: %v\n", err)
			return 2
		}
	}
	ln, err := net.Listen("tcp", ":"+port)
	if err != nil {
		fmt.Fprintf(os.Stderr, "echo: %v\n", err)
		return 1
	}
	hs := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := r.URL.Query().Get("sleep"); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil {
				http.Error(w, "sleep: "+err.Error(), http.StatusBadRequest)
				return
			}
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(EchoResponse{
			Pod: os.Getenv("HOSTNAME"), Namespace: os.Getenv("NAMESPACE"),
			Method: r.Method, Host: r.Host, Path: r.URL.RequestURI(), Headers: r.Header, Remote: r.RemoteAddr,
		})
	})}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		fmt.Fprintf(os.Stderr, "echo: %v\n", err)
		return 1
	case <-term:
	}
	time.Sleep(drain)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "echo: shutdown: %v\n", err)
		return 1
	}
	return 0
}
