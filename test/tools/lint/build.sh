#!/usr/bin/env bash
# Builds staticcheck, which `make lint` runs, into a cache directory keyed by
# its version and the Go it is built with (it type-checks with that Go's
# go/types, which refuses code newer than itself), so a machine builds it
# once per toolchain (about a minute on 2 cores):
#
#   ${TUNNELGATE_TOOLS_CACHE:-$HOME/.cache/tunnelgate/tools}/staticcheck-vX-goY/staticcheck
#
# It comes from the Go module proxy, checked against the checksum database,
# at the version go.mod pins. Idempotent; concurrent runs are serialised by
# flock; the directory appears by renaming a finished temporary one. The
# last line printed is the binary's path.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
# Go: the toolchain go.mod's toolchain line names (the Makefile says why).
export GOTOOLCHAIN=$(sed -n 's/^toolchain //p' "../../../go.mod")
export GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod

version=$(go list -m -f '{{.Version}}' honnef.co/go/tools)-$(go env GOVERSION)
cache=${TUNNELGATE_TOOLS_CACHE:-$HOME/.cache/tunnelgate/tools}
dest="$cache/staticcheck-$version"

if [[ -x "$dest/staticcheck" ]]; then
	echo "$dest/staticcheck"
	exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/.staticcheck-$version.lock"
command -v flock >/dev/null && flock 9
if [[ -x "$dest/staticcheck" ]]; then
	echo "$dest/staticcheck"
	exit 0
fi
rm -rf "$cache/.staticcheck-$version.tmp."*
tmp=$(mktemp -d "$cache/.staticcheck-$version.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "lint-tools: building staticcheck $version" >&2
go build -trimpath -o "$tmp/staticcheck" honnef.co/go/tools/cmd/staticcheck
chmod 755 "$tmp"
rm -rf "$dest"
mv -T "$tmp" "$dest"
trap - EXIT
echo "$dest/staticcheck"
