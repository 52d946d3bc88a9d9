// This file tests the cosign command lines of a release and their running.

package sign

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var release = Release{
	Index: "registry.example/acme/tunnelgate@sha256:1111111111111111111111111111111111111111111111111111111111111111",
	Chart: "registry.example/acme/charts/tunnelgate@sha256:2222222222222222222222222222222222222222222222222222222222222222",
	SBOM:  "dist/tunnelgate.spdx.json",
}

func TestParseOptions(t *testing.T) {
	for _, c := range []struct {
		mode, key string
		tlog      bool
		cosign    string
		want      Mode
		err       string
	}{
		{"", "", true, "cosign", Unsigned, ""},
		{"", "cosign.key", true, "cosign", Key, ""},
		{"key", "awskms:///alias/release", false, "cosign", Key, ""},
		{"keyless", "", true, "cosign", Keyless, ""},
		{"key", "", true, "cosign", "", "SIGN=key needs COSIGN_KEY"},
		{"keyless", "cosign.key", true, "cosign", "", "give one or the other"},
		{"keyless", "", false, "cosign", "", "needs the transparency log"},
		{"gpg", "", true, "cosign", "", `SIGN="gpg"`},
		{"", "cosign.key", true, "", "", "COSIGN is empty"},
		{"", "", true, "", Unsigned, ""},
	} {
		o, err := ParseOptions(c.mode, c.key, c.tlog, c.cosign)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("SIGN=%q COSIGN_KEY=%q tlog %v COSIGN=%q: error %v, want one saying %q", c.mode, c.key, c.tlog, c.cosign, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("SIGN=%q COSIGN_KEY=%q tlog %v: %v", c.mode, c.key, c.tlog, err)
		case c.err == "" && (o.Mode != c.want || o.Signed() != (c.want != Unsigned)):
			t.Errorf("SIGN=%q COSIGN_KEY=%q: mode %q (signed %v), want %q", c.mode, c.key, o.Mode, o.Signed(), c.want)
		}
	}
}

func TestCommands(t *testing.T) {
	offline := []string{"--yes", "--key", "k.key", "--signing-config", "d/signing-config.json", "--trusted-root", "d/trusted-root.json"}
	for _, c := range []struct {
		name string
		o    Options
		want [][]string
	}{
		{"unsigned", Options{Cosign: "cosign", TLog: true}, nil},
		{"key, transparency log", Options{Mode: Key, Key: "k.key", TLog: true}, [][]string{
			{"sign", "--yes", "--key", "k.key", release.Index},
			{"sign", "--yes", "--key", "k.key", release.Chart},
			{"attest", "--yes", "--key", "k.key", "--type", "spdxjson", "--predicate", release.SBOM, release.Index},
		}},
		{"key, no transparency log", Options{Mode: Key, Key: "k.key"}, [][]string{
			{"signing-config", "create", "--out", "d/signing-config.json"},
			{"trusted-root", "create", "--out", "d/trusted-root.json"},
			append(append([]string{"sign"}, offline...), release.Index),
			append(append([]string{"sign"}, offline...), release.Chart),
			append(append([]string{"attest"}, offline...), "--type", "spdxjson", "--predicate", release.SBOM, release.Index),
		}},
		{"keyless", Options{Mode: Keyless, TLog: true}, [][]string{
			{"sign", "--yes", release.Index},
			{"sign", "--yes", release.Chart},
			{"attest", "--yes", "--type", "spdxjson", "--predicate", release.SBOM, release.Index},
		}},
	} {
		got := Commands(c.o, release, "d")
		if !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
		// Every signature is by digest, never by tag.
		for _, args := range got {
			if last := args[len(args)-1]; (args[0] == "sign" || args[0] == "attest") && !strings.Contains(last, "@sha256:") {
				t.Errorf("%s: cosign %v names %s, not a digest", c.name, args, last)
			}
		}
	}
}

func TestVerifyCommands(t *testing.T) {
	o := Options{Mode: Key, Key: "k.key"}
	want := []string{
		"cosign verify --key cosign.pub --insecure-ignore-tlog=true " + release.Index,
		"cosign verify --key cosign.pub --insecure-ignore-tlog=true " + release.Chart,
		"cosign verify-attestation --key cosign.pub --insecure-ignore-tlog=true --type spdxjson " + release.Index,
	}
	if got := VerifyCommands(o, release, "cosign.pub"); !slices.Equal(got, want) {
		t.Errorf("key without the log:\n got %q\nwant %q", got, want)
	}
	o.TLog = true
	if got := VerifyCommands(o, release, "cosign.pub"); strings.Contains(strings.Join(got, "\n"), "insecure") {
		t.Errorf("key with the log: %q ignores the log", got)
	}
	got := VerifyCommands(Options{Mode: Keyless, TLog: true}, release, "")
	if len(got) != 3 || !strings.Contains(got[0], "--certificate-identity IDENTITY --certificate-oidc-issuer ISSUER") {
		t.Errorf("keyless: %q", got)
	}
	if got := VerifyCommands(Options{}, release, "cosign.pub"); got != nil {
		t.Errorf("unsigned: %q", got)
	}
}

// Run runs the commands in order with the program COSIGN names, and stops
// at the first that fails; a missing program is refused by name.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	fake := filepath.Join(dir, "cosign")
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	o := Options{Mode: Key, Key: "k.key", TLog: true, Cosign: fake}
	var stdout, stderr bytes.Buffer
	if err := Run(t.Context(), o, release, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(log)
	var want []string
	for _, args := range Commands(o, release, "") {
		want = append(want, strings.Join(args, " "))
	}
	if string(got) != strings.Join(want, "\n")+"\n" {
		t.Errorf("cosign ran with\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	if !strings.Contains(stdout.String(), "+ cosign sign --yes --key k.key "+release.Index) {
		t.Errorf("Run did not say what it ran: %q", stdout.String())
	}

	// Offline: the files of the first commands are in a directory of
	// their own, gone afterwards.
	os.Remove(log)
	o.TLog = false
	if err := Run(t.Context(), o, release, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "signing-config create --out ") {
		t.Fatalf("offline, cosign ran with\n%s", got)
	}
	sc := strings.TrimPrefix(lines[0], "signing-config create --out ")
	if !strings.Contains(lines[2], "--signing-config "+sc) {
		t.Errorf("the signature does not use the signing config %s: %s", sc, lines[2])
	}
	if _, err := os.Stat(filepath.Dir(sc)); !os.IsNotExist(err) {
		t.Errorf("%s is left behind (%v)", filepath.Dir(sc), err)
	}

	// A failing cosign stops the release with its command.
	failing := filepath.Join(dir, "failing")
	if err := os.WriteFile(failing, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := Run(t.Context(), Options{Mode: Key, Key: "k.key", TLog: true, Cosign: failing}, release, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "cosign sign --yes --key k.key "+release.Index) || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("a failing cosign: %v", err)
	}

	missing := filepath.Join(dir, "no-cosign")
	err = Run(t.Context(), Options{Mode: Key, Key: "k.key", Cosign: missing}, release, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "needs cosign") || !strings.Contains(err.Error(), "COSIGN=") {
		t.Errorf("no cosign: %v", err)
	}
	if err := Run(t.Context(), Options{Cosign: missing}, release, &stdout, &stderr); err != nil {
		t.Errorf("unsigned, without cosign: %v", err)
	}
}
