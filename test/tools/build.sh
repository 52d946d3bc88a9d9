#!/usr/bin/env bash
# Builds the control-plane binaries the integration tests run (kube-apiserver,
# kube-controller-manager, etcd) from this module into a cache directory keyed
# by their versions, so a machine pays the cold build (10 to 15 minutes on 2
# cores) once:
#
#   ${TUNNELGATE_TESTENV_CACHE:-$HOME/.cache/tunnelgate/testenv}/k8s-vX-etcd-vY/
#
# Idempotent: returns at once when the binaries are there. Safe to run twice at
# the same time: a lock file (flock, where there is one) serialises builders,
# and the binaries appear by renaming a finished temporary directory, so a
# reader never sees half a set.
# test/kubeenv looks in the same place (keep its version constants in step with
# go.mod; a test there checks they are). It also downloads the module of the
# previous Gateway API release, whose CRDs some tests install (seconds, once).
set -euo pipefail

tools_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$tools_dir"
# Go: the toolchain go.mod's toolchain line names (the Makefile says why).
export GOTOOLCHAIN=$(sed -n 's/^toolchain //p' "$tools_dir/../../go.mod")
export GOWORK=off CGO_ENABLED=0

# The previous Gateway API release's module, for the tests that install
# its CRDs (kubeenv.PreviousGatewayAPI) without the network.
previous_gateway_api=$(sed -n 's/^const PreviousGatewayAPI = "\(.*\)"$/\1/p' "$tools_dir/../kubeenv/crds.go")
[[ -n "$previous_gateway_api" ]] || { echo "testenv: no PreviousGatewayAPI in test/kubeenv/crds.go" >&2; exit 1; }
go mod download "sigs.k8s.io/gateway-api@$previous_gateway_api"

k8s_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
cache=${TUNNELGATE_TESTENV_CACHE:-$HOME/.cache/tunnelgate/testenv}
key="k8s-${k8s_version}-etcd-${etcd_version}"
dest="$cache/$key"
binaries=(kube-apiserver kube-controller-manager etcd)

complete() {
	local b
	for b in "${binaries[@]}"; do [[ -x "$1/$b" ]] || return 1; done
}

if complete "$dest"; then
	echo "testenv: binaries present in $dest"
	exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/.$key.lock"
locked=false
if command -v flock >/dev/null; then
	if ! flock -n 9; then
		echo "testenv: another build of $key is running; waiting for it"
		flock 9
	fi
	locked=true
fi
# The build we waited for may have finished the job.
if complete "$dest"; then
	echo "testenv: binaries present in $dest"
	exit 0
fi

# Holding the lock, any temporary directory left is from a killed build.
if $locked; then rm -rf "$cache/.$key.tmp."*; fi
tmp=$(mktemp -d "$cache/.$key.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log="$tmp/build.log"

# run DESCRIPTION CMD...: runs a go build, showing a line every 100 packages
# instead of the hundreds go build -v prints, and the log's tail on failure.
run() {
	local what=$1 start=$SECONDS
	shift
	echo "testenv: building $what"
	if ! "$@" 2>&1 | tee -a "$log" | awk '{ n++ } n % 100 == 0 { printf "testenv:   %d packages compiled\n", n; fflush() }'; then
		echo "testenv: building $what failed; end of the log:" >&2
		tail -n 40 "$log" >&2
		exit 1
	fi
	echo "testenv: built $what in $((SECONDS - start))s"
}

minor=${k8s_version#v1.}
minor=${minor%%.*}
echo "testenv: building $key into $dest (cold: 10 to 15 minutes and 3 GiB of RAM; with a warm Go build cache: about 30 seconds)"
run "kube-apiserver and kube-controller-manager $k8s_version" \
	go build -v -trimpath -o "$tmp/" \
	-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
	k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
run "etcd $etcd_version" \
	go build -v -trimpath -o "$tmp/etcd" -ldflags "-s -w" go.etcd.io/etcd/server/v3

rm -f "$log"
chmod 755 "$tmp" # mktemp made it private
complete "$tmp" || { echo "testenv: go build did not produce all of ${binaries[*]}" >&2; exit 1; }
# Replace whatever incomplete set was there; the rename is atomic.
rm -rf "$dest"
mv -T "$tmp" "$dest"
trap - EXIT
echo "testenv: ready in $dest"
