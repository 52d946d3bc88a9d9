package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Parse returns at once on -h (0) and on a bad flag or a stray argument
// (2), naming the command as it was called.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		done bool
		says string
	}{
		{nil, 0, false, ""},
		{[]string{"-n", "3"}, 0, false, ""},
		{[]string{"-h"}, 0, true, "Usage: tunnelgate-proxy [flags]\n\ncount things.\n"},
		{[]string{"-nope"}, 2, true, "flag provided but not defined: -nope"},
		{[]string{"-n", "3", "extra"}, 2, true, `tunnelgate-proxy: unexpected argument "extra"`},
	} {
		var stderr bytes.Buffer
		fs := NewFlagSet("tunnelgate-proxy", "count things", &stderr)
		fs.Int("n", 0, "how many")
		code, done := Parse(fs, c.args)
		if code != c.code || done != c.done || !strings.Contains(stderr.String(), c.says) {
			t.Errorf("%q: code %d done %v, stderr %q; want %d %v saying %q", c.args, code, done, stderr.String(), c.code, c.done, c.says)
		}
	}
}

// The log, access log and tracing settings are checked before anything
// is served.
func TestRequestObservabilityRefusesBadSettings(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-log-level", "loud"}, `-log-level "loud": want debug, info, warn or error`},
		{[]string{"-log-format", "xml"}, `-log-format "xml": want text or json`},
		{[]string{"-access-log", "stdout", "-access-log-sample", "1.5"}, "-access-log-sample 1.5"},
		{[]string{"-access-log", "stdout", "-access-log-queue", "0"}, "-access-log-queue 0"},
	} {
		var stderr bytes.Buffer
		fs := NewFlagSet("serve", "serve", &stderr)
		logf, al := AddLogFlags(fs), AddAccessLogFlags(fs)
		if _, done := Parse(fs, c.args); done {
			t.Fatalf("%q: %s", c.args, stderr.String())
		}
		obs, err := OpenRequestObservability(context.Background(), logf, al, &stderr, &stderr)
		if err == nil {
			obs.Close()
			t.Errorf("%q: opened", c.args)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want %q", c.args, err, c.want)
		}
	}
}

// With the defaults: a text log, no access log, no tracer.
func TestRequestObservabilityDefaults(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	var stdout, stderr bytes.Buffer
	fs := NewFlagSet("serve", "serve", &stderr)
	logf, al := AddLogFlags(fs), AddAccessLogFlags(fs)
	obs, err := OpenRequestObservability(context.Background(), logf, al, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	if obs.AccessLog != nil || obs.Tracer != nil {
		t.Errorf("access log %v, tracer %v; want neither", obs.AccessLog, obs.Tracer)
	}
	obs.Log.Info("hello", "k", "v")
	if !strings.Contains(stderr.String(), "msg=hello k=v") {
		t.Errorf("the log wrote %q; want text on stderr", stderr.String())
	}
}

func TestEnvOr(t *testing.T) {
	t.Setenv("CLI_TEST_SET", "pod-a")
	t.Setenv("CLI_TEST_EMPTY", "")
	if got := EnvOr("CLI_TEST_SET", "x"); got != "pod-a" {
		t.Errorf("EnvOr(set) = %q", got)
	}
	if got := EnvOr("CLI_TEST_EMPTY", "x"); got != "x" {
		t.Errorf("EnvOr(empty) = %q, want the default", got)
	}
}
