package kubelet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// A program built into the test binary runs as a container: the Kubelet
// starts the test binary again with envProgram naming the image, and
// RunIfContainer, called first thing in TestMain, runs the program instead
// of the tests:
//
//	func TestMain(m *testing.M) {
//		kubelet.RunIfContainer()
//		netns.Run(func() int { return m.Run() })
//	}
const envProgram = "TUNNELGATE_KUBELET_PROGRAM"

var (
	programsMu sync.Mutex
	programs   = map[string]func(args []string) int{EchoImage: echoMain}
)

// Register makes image (matched with or without its tag) run main, given
// the container's args; main's result is the exit code. Call it before
// RunIfContainer, from TestMain or an init function.
func Register(image string, main func(args []string) int) {
	programsMu.Lock()
	defer programsMu.Unlock()
	programs[imageName(image)] = main
}

func registeredImage(image string) (string, bool) {
	programsMu.Lock()
	defer programsMu.Unlock()
	if _, ok := programs[image]; ok {
		return image, true
	}
	name := imageName(image)
	_, ok := programs[name]
	return name, ok
}

// RunIfContainer runs a registered program and exits when this process is
// one of the Kubelet's containers; otherwise it returns at once.
func RunIfContainer() {
	image := os.Getenv(envProgram)
	if image == "" {
		return
	}
	programsMu.Lock()
	main := programs[image]
	programsMu.Unlock()
	if main == nil {
		fmt.Fprintf(os.Stderr, "kubelet: no program registered for image %q\n", image)
		os.Exit(127)
	}
	os.Exit(main(os.Args[1:]))
}

// EchoImage is a built-in HTTP backend. It answers every request on $PORT
// (default 8080) with an EchoResponse, and on SIGTERM keeps serving for
// $DRAIN (a Go duration, default 0) before it shuts down gracefully, as a
// preStop sleep would, so a rollout loses no request while the endpoint
// change travels to the proxies.
const EchoImage = "tunnelgate.test/echo"

// EchoResponse is what EchoImage answers, as JSON.
type EchoResponse struct {
	Pod       string              `json:"pod"`       // $HOSTNAME, the Pod's name
	Namespace string              `json:"namespace"` // $NAMESPACE, if the Pod sets it
	Method    string              `json:"method"`
	Host      string              `json:"host"`
	Path      string              `json:"path"`
	Headers   map[string][]string `json:"headers"`
}

func echoMain([]string) int {
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
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(EchoResponse{
			Pod: os.Getenv("HOSTNAME"), Namespace: os.Getenv("NAMESPACE"),
			Method: r.Method, Host: r.Host, Path: r.URL.RequestURI(), Headers: r.Header,
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
