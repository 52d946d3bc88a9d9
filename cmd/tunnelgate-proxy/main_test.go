package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	for _, c := range []struct {
		args           []string
		code           int
		stdout, stderr string // substrings expected
	}{
		{[]string{"version"}, 0, "dev\n", ""},
		{[]string{"version", "extra"}, 2, "", `tunnelgate-proxy version: unexpected argument "extra"`},
		{[]string{"-h"}, 0, "", "Usage: tunnelgate-proxy [flags]"},
		{[]string{"-h"}, 0, "", "-origin-server-name name"},
		{nil, 2, "", "tunnelgate-proxy: -config is required unless -controller is given"},
		{[]string{"serve"}, 2, "", `tunnelgate-proxy: unexpected argument "serve"`},
		{[]string{"-config", "c.json", "-log-level", "loud"}, 2, "", `tunnelgate-proxy: -log-level "loud"`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stdout.String(), c.stdout) || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("tunnelgate-proxy %q: exit %d, stdout %q, stderr %q; want %d, %q, %q",
				c.args, code, stdout.String(), stderr.String(), c.code, c.stdout, c.stderr)
		}
	}
}
