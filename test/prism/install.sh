#!/usr/bin/env bash
# Installs what test/prism runs (`make prism`), into a cache directory so a
# machine pays for it once:
#
#   ${TUNNELGATE_PRISM_CACHE:-$HOME/.cache/tunnelgate/prism}/
#     prism-cli-5.16.0/node_modules/.bin/prism   Prism, the OpenAPI mock server (npm)
#     cloudflare-openapi-v7.9.0.json            Cloudflare's OpenAPI spec, as embedded
#                                               in cloudflare-go's scripts/mock
#
# Prism comes from the npm registry with the machine's npm, installed with
# `npm ci` from package-lock.json beside this script, so every one of its
# ~210 dependencies is pinned. The spec is not downloaded: the cloudflare-go
# module that go.mod requires carries it, base64-encoded and gzipped, in the
# script its own tests start Prism with. It is stored as it is; test/prism
# patches a copy at run time (see spec.go for what and why).
#
# Idempotent: returns at once when both are there. Safe to run twice at the
# same time: a lock file (flock, where there is one) serialises installers,
# and each piece appears by renaming a finished temporary file or directory,
# so a reader never sees half of one. Keep prism_version in step with
# PrismVersion in prism.go (a test checks).
set -euo pipefail

prism_version=5.16.0

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
# Go: the toolchain go.mod's toolchain line names (the Makefile says why).
export GOTOOLCHAIN=$(sed -n 's/^toolchain //p' "$here/../../go.mod")
export GOWORK=off

cache=${TUNNELGATE_PRISM_CACHE:-$HOME/.cache/tunnelgate/prism}
dest="$cache/prism-cli-$prism_version"

# The spec's version is cloudflare-go's, as go.mod requires it.
module=github.com/cloudflare/cloudflare-go/v7
read -r cf_version cf_dir < <(go list -m -f '{{.Version}} {{.Dir}}' "$module")
if [[ -z ${cf_dir:-} ]]; then # not in the module cache yet
	go mod download "$module"
	read -r cf_version cf_dir < <(go list -m -f '{{.Version}} {{.Dir}}' "$module")
fi
spec="$cache/cloudflare-openapi-$cf_version.json"

complete() {
	[[ -x "$dest/node_modules/.bin/prism" && -s "$spec" ]]
}

if complete; then
	echo "prism: Prism $prism_version and the spec of cloudflare-go $cf_version present in $cache"
	exit 0
fi

for tool in node npm; do
	if ! command -v "$tool" >/dev/null; then
		echo "prism: $tool is not installed; Prism is an npm package and needs Node.js 20 or later and npm (Debian: apt-get install nodejs npm)" >&2
		exit 1
	fi
done
node_major=$(node -p 'process.versions.node.split(".")[0]')
if ((node_major < 20)); then
	echo "prism: Node.js $(node --version) is too old; Prism $prism_version needs 20 or later" >&2
	exit 1
fi

mkdir -p "$cache"
exec 9>"$cache/.prism-cli-$prism_version.lock"
locked=false
if command -v flock >/dev/null; then
	if ! flock -n 9; then
		echo "prism: another install is running; waiting for it"
		flock 9
	fi
	locked=true
fi
# The install we waited for may have finished the job.
if complete; then
	echo "prism: Prism $prism_version and the spec of cloudflare-go $cf_version present in $cache"
	exit 0
fi

# Holding the lock, any temporary file or directory left is from a killed run.
if $locked; then rm -rf "$cache/.prism-cli-$prism_version.tmp."* "$cache/.cloudflare-openapi-"*.tmp.*; fi
start=$SECONDS

if [[ ! -s "$spec" ]]; then
	echo "prism: extracting Cloudflare's OpenAPI spec from $module $cf_version"
	tmp_spec=$(mktemp "$cache/.cloudflare-openapi-$cf_version.tmp.XXXXXX")
	trap 'rm -f "$tmp_spec"' EXIT
	# The script holds it as one line: EMBEDDED_SPEC="<base64 of gzip>".
	sed -n 's/^[[:space:]]*EMBEDDED_SPEC="\([A-Za-z0-9+/=]*\)"[[:space:]]*$/\1/p' "$cf_dir/scripts/mock" |
		base64 --decode | gunzip >"$tmp_spec"
	if [[ $(head -c 11 "$tmp_spec") != '{"openapi":' ]]; then
		echo "prism: $cf_dir/scripts/mock no longer embeds a JSON OpenAPI document the way this script expects (EMBEDDED_SPEC=\"base64 of gzip\"); update install.sh" >&2
		exit 1
	fi
	chmod 644 "$tmp_spec" # mktemp made it private
	mv -f "$tmp_spec" "$spec"
	trap - EXIT
	echo "prism: spec in $spec ($(($(wc -c <"$spec") / 1000000)) MB)"
fi

if [[ ! -x "$dest/node_modules/.bin/prism" ]]; then
	echo "prism: installing @stoplight/prism-cli $prism_version with npm into $dest (cold: about 15 seconds)"
	tmp=$(mktemp -d "$cache/.prism-cli-$prism_version.tmp.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	cp package.json package-lock.json "$tmp/"
	# --ignore-scripts: Prism needs no install script; the one its tree has
	# (@scarf/scarf) only reports the download. Prism 5.16 declares Node.js
	# 24.18 in "engines" but runs on 20 (what the tests run with).
	SCARF_NO_ANALYTICS=true npm ci --prefix "$tmp" --no-audit --no-fund --ignore-scripts \
		--no-update-notifier --loglevel=error
	got=$("$tmp/node_modules/.bin/prism" --version)
	if [[ $got != "$prism_version" ]]; then
		echo "prism: npm installed Prism $got, not $prism_version: package-lock.json and install.sh disagree" >&2
		exit 1
	fi
	chmod 755 "$tmp" # mktemp made it private
	# Replace whatever incomplete install was there; the rename is atomic.
	rm -rf "$dest"
	mv -T "$tmp" "$dest"
	trap - EXIT
fi
echo "prism: ready in $cache ($((SECONDS - start))s)"
