#!/usr/bin/env bash
# Builds the previous release for test/chart's upgrade test
# (TestUpgradeLosesNothing): the image and the chart of a commit before
# the one under test, as a user of that release has them, into a cache
# directory keyed by the commit, so a machine pays for each commit once:
#
#   ${TUNNELGATE_PREVIOUS_CACHE:-$HOME/.cache/tunnelgate/previous}/COMMIT/
#     commit     the commit's full hash
#     image/     its image as an OCI layout, built by that commit's own
#                release tool (go run ./release image) for this machine's
#                architecture alone
#     chart/     that commit's chart/ as it was
#
# and points REPO/.cache/previous-release (git-ignored) at it, which the
# test reads.
#
# Usage: build.sh [COMMIT]   (default HEAD^, the previous state of main in
# this merge-based history; a tag works too). The commit must be in the
# clone. A shallow clone lacks HEAD^: the script deepens it by one commit
# where the clone's origin answers; where it does not (a shallow checkout
# with no network), and only for the default, it builds HEAD itself as the
# previous release and says so loudly: the test then upgrades a release
# to an image and chart of the same source under load and rolls it back,
# which still proves the roll loses nothing, not that two releases agree.
# A commit named in PREVIOUS that is missing fails, naming `git fetch
# --unshallow`.
#
# The commit's files come from git archive, so no worktree is registered;
# its modules are downloaded here, outside go test's network namespace.
# Idempotent; concurrent runs are serialised by flock; the directory
# appears by renaming a finished temporary one. The four releases used
# last are kept.
set -euo pipefail

root=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
cd "$root"
# Go: the toolchain go.mod's toolchain line names (the Makefile says why);
# the previous commit's own go.mod names the one its build takes, below.
export GOTOOLCHAIN=$(sed -n 's/^toolchain //p' "$root/go.mod")
previous=${1:-HEAD^}
# A shallow clone lacks the parent: deepen it by one commit where its
# origin answers, before giving up.
if ! git rev-parse --verify --quiet "${previous}^{commit}" >/dev/null &&
	[[ $(git rev-parse --is-shallow-repository) == true ]]; then
	git fetch --quiet --deepen=1 2>/dev/null || true
fi
if ! git rev-parse --verify --quiet "${previous}^{commit}" >/dev/null && [[ $# -eq 0 || -z "$1" ]] &&
	[[ $(git rev-parse --is-shallow-repository) == true ]]; then
	echo "previous-release: WARNING: this shallow clone has no HEAD^ and its origin gave none; the upgrade test" \
		"will upgrade from this very commit (run git fetch --unshallow for a real previous release)" >&2
	previous=HEAD
fi
if ! commit=$(git rev-parse --verify --quiet "${previous}^{commit}"); then
	echo "previous-release: $previous is not a commit in this clone ($(git rev-parse --is-shallow-repository | sed 's/true/a shallow clone/;s/false/full history/')):" \
		"run git fetch --unshallow (and git fetch --tags for a tag), or name another with PREVIOUS=<commit or tag>" >&2
	exit 1
fi
cache=${TUNNELGATE_PREVIOUS_CACHE:-$HOME/.cache/tunnelgate/previous}
dest="$cache/$commit"
link="$root/.cache/previous-release"

complete() {
	[[ -s "$1/commit" && -s "$1/image/index.json" && -s "$1/chart/Chart.yaml" ]]
}

point() {
	mkdir -p "$(dirname "$link")"
	ln -sfn "$dest" "$link"
	touch "$dest"
	echo "previous-release: $previous is $commit, in $dest"
}

# prune keeps the four releases used last (about 30 MB each): every merge
# to main makes another previous commit.
prune() {
	local old
	ls -1dt "$cache"/*/ 2>/dev/null | tail -n +5 | while read -r old; do
		old=${old%/}
		[[ "$old" == "$dest" ]] || rm -rf "$old" "$cache/.$(basename "$old").lock"
	done
}

if complete "$dest"; then
	point
	exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/.$commit.lock"
command -v flock >/dev/null && flock 9
if complete "$dest"; then
	point
	exit 0
fi
rm -rf "$cache/.$commit.tmp."*
tmp=$(mktemp -d "$cache/.$commit.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "previous-release: building the image and chart of $commit (cold: a build of the project for $(go env GOARCH))"
mkdir "$tmp/src"
git archive --format=tar "$commit" | tar -x -C "$tmp/src"
(
	cd "$tmp/src"
	# That commit's toolchain and modules, as its own Makefile builds with.
	if toolchain=$(sed -n 's/^toolchain //p' go.mod) && [[ -n "$toolchain" ]]; then
		export GOTOOLCHAIN=$toolchain
	fi
	export GOWORK=off GOFLAGS=
	go mod download
	go run ./release image -version 0.0.0-previous -revision "$commit" \
		-source-date-epoch "$(git -C "$root" log -1 --format=%ct "$commit")" \
		-arch "$(go env GOARCH)" -dist "$tmp/dist"
)
mv "$tmp/dist/image" "$tmp/image"
mv "$tmp/src/chart" "$tmp/chart"
rm -rf "$tmp/src" "$tmp/dist"
echo "$commit" >"$tmp/commit"
chmod -R a+rX "$tmp"

complete "$tmp" || { echo "previous-release: the build left $tmp incomplete" >&2; exit 1; }
rm -rf "$dest"
mv -T "$tmp" "$dest"
trap - EXIT
point
prune
