#!/usr/bin/env bash
# Builds cosign, with which `make chart-check` signs a release pushed to a
# registry on loopback and verifies it, into the tools cache beside helm
# (build.sh), in a directory keyed by its version:
#
#   ${TUNNELGATE_TOOLS_CACHE:-$HOME/.cache/tunnelgate/tools}/cosign-vX/cosign
#
# `go install module@version` builds it from the Go module proxy with
# cosign's own go.mod, checked against the checksum database: the
# dependencies its releases are built with, and none of them in a module
# of this repository. About 2 minutes on 2 cores, once per machine.
# Idempotent; concurrent runs are serialised by flock; the directory
# appears by renaming a finished temporary one. test/chart names the same
# directory (a test there checks its version constant against this file).
set -euo pipefail

# The cosign release the tests sign and verify with (docs/install.md's
# commands are its).
cosign_version=v3.1.3

cd "$(dirname "${BASH_SOURCE[0]}")"
# Go: the toolchain go.mod's toolchain line names (the Makefile says why).
export GOTOOLCHAIN=$(sed -n 's/^toolchain //p' "../../../go.mod")
# go install module@version builds outside any module: no workspace, and
# no -mod flag, which it refuses.
export GOWORK=off CGO_ENABLED=0
unset GOFLAGS

cache=${TUNNELGATE_TOOLS_CACHE:-$HOME/.cache/tunnelgate/tools}
key="cosign-${cosign_version}"
dest="$cache/$key"

if [[ -x "$dest/cosign" ]]; then
	echo "cosign: present in $dest"
	exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/.$key.lock"
command -v flock >/dev/null && flock 9
if [[ -x "$dest/cosign" ]]; then
	echo "cosign: present in $dest"
	exit 0
fi
rm -rf "$cache/.$key.tmp."*
tmp=$(mktemp -d "$cache/.$key.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "cosign: building cosign $cosign_version (cold: about 2 minutes)"
GOBIN="$tmp" go install -trimpath -ldflags "-s -w" "github.com/sigstore/cosign/v3/cmd/cosign@${cosign_version}"
got=$("$tmp/cosign" version --json | sed -n 's/^[[:space:]]*"gitVersion": "\(.*\)",$/\1/p')
if [[ "$got" != "$cosign_version" ]]; then
	echo "cosign: the build says it is version '$got', not $cosign_version" >&2
	exit 1
fi
chmod 755 "$tmp"
rm -rf "$dest"
mv -T "$tmp" "$dest"
trap - EXIT
echo "cosign: ready in $dest"
