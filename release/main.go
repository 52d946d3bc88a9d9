// This file dispatches the release tool's commands.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: go run ./release COMMAND [flags]

commands:
  image     build the multi-arch image index into DIST/image, and its SBOM
  publish   build the image, package the chart, push both and the SBOM to -registry
  rootfs    write the image's root filesystem for one architecture to -out (the Dockerfile's)
  binaries  build the release's binaries alone into DIST/bin

go run ./release COMMAND -h lists a command's flags.
`

// run runs one command and returns the exit code: 0, 1 when the command
// failed, 2 when it was called wrongly.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch args[0] {
	case "image":
		err = runImage(ctx, args[1:], stdout, stderr)
	case "publish":
		err = runPublish(ctx, args[1:], stdout, stderr)
	case "rootfs":
		err = runRootFS(ctx, args[1:], stdout, stderr)
	case "binaries":
		err = runBinaries(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "release: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "release %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(stderr, "release %s: %v\n", args[0], err)
		return 1
	}
}

// usageError is a command called wrongly (a flag missing or malformed).
type usageError struct{ error }

// parseFlags parses a command's args with fs and refuses arguments left
// after the flags, which no command takes. A flag set's own error (a
// flag unknown or malformed, or -h) is returned as fs.Parse returns it.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}
