// This file implements the commands' flag sets and the version command.

package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// NewFlagSet returns the flag set of the command called name on the
// command line ("tunnelgate proxy", "tunnelgate-proxy"), which does what
// doc says. It reports errors and -h on stderr instead of exiting.
func NewFlagSet(name, doc string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s [flags]\n\n%s.\n", name, doc)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses a command's flags; the commands take no other arguments.
// done is true when the command must return code right away: after -h
// (0), or a bad flag or a stray argument (2).
func Parse(fs *flag.FlagSet, args []string) (code int, done bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, true
		}
		return 2, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return 2, true
	}
	return 0, false
}

// Version is the version command called name: it takes no flags and
// prints version. It returns the exit code.
func Version(name, version string, args []string, stdout, stderr io.Writer) int {
	fs := NewFlagSet(name, "print the version", stderr)
	if code, done := Parse(fs, args); done {
		return code
	}
	fmt.Fprintln(stdout, version)
	return 0
}
