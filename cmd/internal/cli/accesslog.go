// This file implements the access-log flags.

package cli

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
)

// AccessLogFlags configure the access log of a command that serves
// requests.
type AccessLogFlags struct {
	dest      *string
	sample    *float64
	omitQuery *bool
	queue     *int
}

// AddAccessLogFlags adds -access-log and the flags that go with it.
func AddAccessLogFlags(fs *flag.FlagSet) *AccessLogFlags {
	return &AccessLogFlags{
		dest:      fs.String("access-log", "", "write a JSON line per request to `dest`: stdout, stderr or a file path (appended to); empty disables"),
		sample:    fs.Float64("access-log-sample", 1, "fraction of requests logged, from 0 (exclusive) to 1"),
		omitQuery: fs.Bool("access-log-omit-query", false, "log paths without their query string (which may carry tokens or personal data)"),
		queue:     fs.Int("access-log-queue", 4096, "lines waiting to be written; beyond, lines are dropped and counted"),
	}
}

// open starts the access log, or returns nil when it is off. close stops
// it once the command has stopped serving.
func (f *AccessLogFlags) open(stdout, stderr io.Writer) (al *observe.AccessLog, close func(), err error) {
	if *f.dest == "" {
		return nil, func() {}, nil
	}
	if *f.sample <= 0 || *f.sample > 1 {
		return nil, nil, fmt.Errorf("-access-log-sample %g: want more than 0 and at most 1", *f.sample)
	}
	if *f.queue <= 0 {
		return nil, nil, fmt.Errorf("-access-log-queue %d: want a positive number", *f.queue)
	}
	var w io.Writer
	closeFile := func() {}
	switch *f.dest {
	case "stdout", "-":
		w = stdout
	case "stderr":
		w = stderr
	default:
		file, err := os.OpenFile(*f.dest, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
		if err != nil {
			return nil, nil, fmt.Errorf("-access-log: %w", err)
		}
		w, closeFile = file, func() { file.Close() }
	}
	al = observe.NewAccessLog(w, observe.AccessLogOptions{Sample: *f.sample, OmitQuery: *f.omitQuery, Queue: *f.queue})
	return al, func() { al.Close(); closeFile() }, nil
}
