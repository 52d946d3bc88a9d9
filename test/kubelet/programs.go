package kubelet

import (
	"fmt"
	"os"
	"sync"

	"github.com/tunnelgate/tunnelgate/test/podapps"
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
	programs   = map[string]func(args []string) int{EchoImage: podapps.Echo}
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

// EchoImage is a built-in HTTP backend, test/podapps' Echo: it answers
// every request on $PORT (default 8080) with an EchoResponse (after D
// for a query sleep=D), and on SIGTERM keeps serving for $DRAIN (a Go
// duration, default 0) before it shuts down gracefully, as a preStop
// sleep would, so a rollout loses no request while the endpoint change
// travels to the proxies.
const EchoImage = "tunnelgate.test/echo"

// EchoResponse is what EchoImage answers, as JSON.
type EchoResponse = podapps.EchoResponse
