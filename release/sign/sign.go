// Package sign signs a pushed release with cosign, the command-line tool
// of Sigstore, run as a program (os/exec): it is not linked into the
// release tool, so the user's cosign (or the one COSIGN names) does the
// signing, and `cosign verify` of the same tool checks it.
//
// A release is signed by digest, never by tag: the image index, the chart's
// OCI artifact, and the SBOM as an in-toto attestation (predicate type
// SPDX JSON) whose subject is the index. cosign stores each signature and
// the attestation in the registry as it reads them back (with cosign v3:
// Sigstore bundles as OCI referrers of what they sign).
//
// Signing is with a key (any reference cosign's --key takes: a key file
// of `cosign generate-key-pair`, whose password cosign reads from
// COSIGN_PASSWORD, or a KMS URI), or keyless (a certificate from Fulcio
// for the OIDC identity of the CI running the release). Either way the
// signatures go to the public transparency log (Rekor) unless TLog is
// off, which only key signing allows: then cosign is given a signing
// config with no services and an empty trusted root, both written by
// cosign itself, so it talks to nothing but the registry (air-gapped and
// private releases, and the tests), and a verifier says
// --insecure-ignore-tlog=true.
package sign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Mode is how a release is signed.
type Mode string

// The modes, as SIGN (the -sign flag) names them.
const (
	// Unsigned is no signature.
	Unsigned Mode = ""
	// Key signs with Options.Key.
	Key Mode = "key"
	// Keyless signs with a certificate for the CI's OIDC identity.
	Keyless Mode = "keyless"
)

// Options say how to sign.
type Options struct {
	Mode Mode
	// Key is a reference cosign's --key takes (Mode Key).
	Key string
	// TLog uploads the signatures to the public transparency log.
	TLog bool
	// Cosign is the cosign program: a path, or a name looked up in PATH.
	Cosign string
}

// ParseOptions checks what the user gave: mode is SIGN (empty, key or
// keyless), key is COSIGN_KEY; a key alone means key signing.
func ParseOptions(mode, key string, tlog bool, cosign string) (Options, error) {
	o := Options{Mode: Mode(mode), Key: key, TLog: tlog, Cosign: cosign}
	if o.Mode == Unsigned && key != "" {
		o.Mode = Key
	}
	switch o.Mode {
	case Unsigned:
	case Key:
		if key == "" {
			return o, errors.New("SIGN=key needs COSIGN_KEY, the private key (a file of cosign generate-key-pair, or a KMS URI)")
		}
	case Keyless:
		if key != "" {
			return o, fmt.Errorf("SIGN=keyless signs without a key, and COSIGN_KEY is %q: give one or the other", key)
		}
		if !tlog {
			return o, errors.New("SIGN=keyless needs the transparency log (the certificate's identity is only verifiable through it): drop COSIGN_TLOG=false, or sign with COSIGN_KEY")
		}
	default:
		return o, fmt.Errorf("SIGN=%q: the modes are key (with COSIGN_KEY) and keyless", mode)
	}
	if o.Mode != Unsigned && cosign == "" {
		return o, errors.New("signing needs cosign: COSIGN is empty")
	}
	return o, nil
}

// Signed says whether the options sign anything.
func (o Options) Signed() bool { return o.Mode != Unsigned }

// LookCosign finds the cosign program, so that a release asked to be
// signed fails before it builds anything when cosign is missing.
func (o Options) LookCosign() (string, error) {
	p, err := exec.LookPath(o.Cosign)
	if err != nil {
		return "", fmt.Errorf("signing (SIGN=%s) needs cosign, and %q is not a program here (%v): install it (go install github.com/sigstore/cosign/v3/cmd/cosign@latest) or give its path as COSIGN=/path/to/cosign", o.Mode, o.Cosign, err)
	}
	return p, nil
}

// Release is what was pushed, each by digest (repository@sha256:...).
type Release struct {
	Index string
	Chart string
	// SBOM is the path of the SPDX JSON document of the index.
	SBOM string
}

// The files cosign writes for a release signed without the transparency
// log, in the directory given to Commands.
const (
	signingConfigFile = "signing-config.json"
	trustedRootFile   = "trusted-root.json"
)

// Commands are the cosign command lines (without the program) that sign
// r, in order; dir holds the files the first ones write for the later
// ones. None for an unsigned release.
func Commands(o Options, r Release, dir string) [][]string {
	if !o.Signed() {
		return nil
	}
	var cmds [][]string
	common := []string{"--yes"}
	if o.Mode == Key {
		common = append(common, "--key", o.Key)
	}
	if !o.TLog {
		// A signing config naming no service (no Rekor, no timestamp
		// authority) and an empty trusted root: cosign neither uploads
		// nor fetches Sigstore's TUF repository for either.
		sc, tr := filepath.Join(dir, signingConfigFile), filepath.Join(dir, trustedRootFile)
		cmds = append(cmds,
			[]string{"signing-config", "create", "--out", sc},
			[]string{"trusted-root", "create", "--out", tr})
		common = append(common, "--signing-config", sc, "--trusted-root", tr)
	}
	cmds = append(cmds,
		joined([]string{"sign"}, common, []string{r.Index}),
		joined([]string{"sign"}, common, []string{r.Chart}),
		joined([]string{"attest"}, common, []string{"--type", "spdxjson", "--predicate", r.SBOM, r.Index}),
	)
	return cmds
}

func joined(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Run signs r with cosign, which reads its password and OIDC credentials
// from the environment (COSIGN_PASSWORD; a CI's ambient OIDC token) and
// may ask on the terminal; it reports to stderr.
func Run(ctx context.Context, o Options, r Release, stdout, stderr io.Writer) error {
	if !o.Signed() {
		return nil
	}
	cosign, err := o.LookCosign()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "tunnelgate-sign-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, args := range Commands(o, r, dir) {
		fmt.Fprintf(stdout, "+ cosign %s\n", strings.Join(args, " "))
		cmd := exec.CommandContext(ctx, cosign, args...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("cosign %s: %w", strings.Join(args, " "), err)
		}
	}
	return nil
}

// VerifyCommands are the commands a user runs to verify r as o signed it
// (docs/install.md says the same), with the public key as pub for key
// signing, and placeholders for the identity of keyless signing (the
// signing workflow's, and its OIDC issuer).
func VerifyCommands(o Options, r Release, pub string) []string {
	if !o.Signed() {
		return nil
	}
	var flags []string
	switch o.Mode {
	case Key:
		flags = append(flags, "--key", pub)
	case Keyless:
		flags = append(flags, "--certificate-identity", "IDENTITY", "--certificate-oidc-issuer", "ISSUER")
	}
	if !o.TLog {
		flags = append(flags, "--insecure-ignore-tlog=true")
	}
	f := strings.Join(flags, " ")
	return []string{
		"cosign verify " + f + " " + r.Index,
		"cosign verify " + f + " " + r.Chart,
		"cosign verify-attestation " + f + " --type spdxjson " + r.Index,
	}
}
