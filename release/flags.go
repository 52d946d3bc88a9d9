// This file implements the flags the commands share.

package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"time"
)

// options are the flags image and publish share.
type options struct {
	version  string
	revision string
	created  time.Time
	dist     string
	arches   []string
}

// newFlagSet returns a flag set that reports to stderr and returns errors.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// releaseFlags declares the shared flags on fs; parse checks them.
func releaseFlags(fs *flag.FlagSet) func() (options, error) {
	version := fs.String("version", "", "the release's version, e.g. 0.2.0 (a leading v is dropped)")
	revision := fs.String("revision", "", "the commit released, in full (git rev-parse HEAD)")
	epoch := fs.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "the commit's time in Unix seconds (git log -1 --format=%ct): every timestamp of the artifacts")
	dist := fs.String("dist", "dist", "the directory the artifacts are written to")
	arches := fs.String("arch", "amd64,arm64", "the linux architectures of the image, comma-separated")
	return func() (options, error) {
		o := options{version: releaseVersion(*version), revision: *revision, dist: *dist}
		if o.version == "" {
			return o, usageError{fmt.Errorf("-version is required, e.g. -version 0.2.0")}
		}
		if !fullRevision.MatchString(o.revision) {
			return o, usageError{fmt.Errorf("-revision %q is not a full commit hash: give git rev-parse HEAD", o.revision)}
		}
		secs, err := strconv.ParseInt(*epoch, 10, 64)
		if err != nil || secs <= 0 {
			return o, usageError{fmt.Errorf("-source-date-epoch %q is not a time in Unix seconds: give git log -1 --format=%%ct (or set SOURCE_DATE_EPOCH)", *epoch)}
		}
		o.created = time.Unix(secs, 0).UTC()
		if o.arches = splitArches(*arches); len(o.arches) == 0 {
			return o, usageError{fmt.Errorf("-arch names no architecture")}
		}
		return o, nil
	}
}

var fullRevision = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// releaseVersion drops the v of a tag name (v0.2.0 is version 0.2.0), so
// the binary, the image tag and the chart all say the same.
func releaseVersion(v string) string {
	if len(v) > 1 && v[0] == 'v' && v[1] >= '0' && v[1] <= '9' {
		return v[1:]
	}
	return v
}
